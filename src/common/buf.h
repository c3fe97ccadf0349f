// buf.h: a growable byte buffer (text being built, file contents). Always NUL-terminated after
// its len bytes so it can be printed, but may hold NUL bytes inside.
#ifndef GB_COMMON_BUF_H
#define GB_COMMON_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  char *data;  // [cap] bytes, data[len] == '\0' once anything was appended
  size_t len;
  size_t cap;
} Buf;

void buf_reserve(Buf *b, size_t extra);
void buf_append(Buf *b, const void *bytes, size_t n);
void buf_append_str(Buf *b, const char *s);
void buf_append_byte(Buf *b, uint8_t c);
__attribute__((format(printf, 2, 3))) void buf_printf(Buf *b, const char *fmt, ...);
void buf_clear(Buf *b);
void buf_free(Buf *b);

#endif
