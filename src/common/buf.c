// buf.c: growable byte buffer. Doubles its capacity so appends are amortised O(1).
#include "common/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

void buf_reserve(Buf *b, size_t extra) {
  size_t need = b->len + extra + 1;
  if (need <= b->cap) return;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) cap *= 2;
  b->data = xrealloc(b->data, cap);
  b->cap = cap;
}

void buf_append(Buf *b, const void *bytes, size_t n) {
  buf_reserve(b, n);
  if (n) memcpy(b->data + b->len, bytes, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void buf_append_str(Buf *b, const char *s) { buf_append(b, s, strlen(s)); }

void buf_append_byte(Buf *b, uint8_t c) { buf_append(b, &c, 1); }

void buf_printf(Buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  CHECK(n >= 0);
  buf_reserve(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void buf_clear(Buf *b) {
  b->len = 0;
  if (b->data) b->data[0] = '\0';
}

void buf_free(Buf *b) {
  free(b->data);
  *b = (Buf){0};
}
