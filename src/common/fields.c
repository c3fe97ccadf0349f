// fields.c: see fields.h.
#include "common/fields.h"

#include <ctype.h>
#include <string.h>

size_t fields_split(char *line, char sep, char **fields, size_t max) {
  size_t n = 0;
  for (char *p = line; n < max; n++) {
    fields[n] = p;
    char *at = strchr(p, sep);
    if (!at) return n + 1;
    *at = '\0';
    p = at + 1;
  }
  return n;
}

size_t fields_trim(const char **start, size_t len) {
  while (len && isspace((unsigned char)**start)) ++*start, --len;
  while (len && isspace((unsigned char)(*start)[len - 1])) --len;
  return len;
}
