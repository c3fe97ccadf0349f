// fields.h: cutting a line of text into fields and trimming blanks, in place: what the CSV,
// sacct/squeue and flag parsers share. No allocation, no quoting rules.
#ifndef GB_COMMON_FIELDS_H
#define GB_COMMON_FIELDS_H

#include <stddef.h>

// Splits line (NUL-terminated; each sep is overwritten with NUL) into at most max fields,
// pointers into line; returns how many. Past max, the last field keeps the rest of the line
// cut at its next separator.
size_t fields_split(char *line, char sep, char **fields, size_t max);

// The text *start[0, len) without blanks at either end: moves *start on, returns the new length.
size_t fields_trim(const char **start, size_t len);

#endif
