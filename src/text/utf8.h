// utf8.h: UTF-8 validation one sequence at a time, with the Unicode "maximal subpart" rule for
// replacing invalid bytes by U+FFFD (what Python's errors="replace" does).
#ifndef GB_TEXT_UTF8_H
#define GB_TEXT_UTF8_H

#include <stddef.h>
#include <stdint.h>

#define UTF8_REPLACEMENT "\xEF\xBF\xBD"  // U+FFFD

// Looks at the sequence starting at s[0] (n > 0 bytes available). Returns
//   k > 0: s[0..k) is one complete, valid character;
//   0:     s[0..n) is a valid but unfinished start of a character (more bytes may complete it);
//   -k:    s[0..k) is invalid (a maximal subpart) and stands for one U+FFFD.
int utf8_next(const uint8_t *s, size_t n);

#endif
