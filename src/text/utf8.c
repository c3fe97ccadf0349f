// utf8.c: one-sequence UTF-8 validator (RFC 3629: no overlongs, no surrogates, max U+10FFFF).
#include "text/utf8.h"

int utf8_next(const uint8_t *s, size_t n) {
  uint8_t b = s[0];
  if (b < 0x80) return 1;
  int len;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) len = 2;
  else if (b == 0xE0) len = 3, lo = 0xA0;
  else if (b >= 0xE1 && b <= 0xEC) len = 3;
  else if (b == 0xED) len = 3, hi = 0x9F;
  else if (b >= 0xEE && b <= 0xEF) len = 3;
  else if (b == 0xF0) len = 4, lo = 0x90;
  else if (b >= 0xF1 && b <= 0xF3) len = 4;
  else if (b == 0xF4) len = 4, hi = 0x8F;
  else return -1;
  for (int i = 1; i < len; i++) {
    if ((size_t)i >= n) return 0;
    uint8_t c = s[i];
    uint8_t min = i == 1 ? lo : 0x80, max = i == 1 ? hi : 0xBF;
    if (c < min || c > max) return -i;
  }
  return len;
}
