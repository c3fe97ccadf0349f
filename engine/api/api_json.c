// api_json.c: JSON string escaping and number formatting for the answers written by hand.
// Must not allocate beyond growing the caller's Buf.
#include "api/api_json.h"

#include <math.h>
#include <stdint.h>

void api_json_string(Buf *out, const char *s, size_t n) {
  static const char HEX[] = "0123456789abcdef";
  buf_reserve(out, 6 * n + 2);
  buf_append_byte(out, '"');
  for (size_t i = 0; i < n; i++) {
    uint8_t c = (uint8_t)s[i];
    if (c == '"' || c == '\\') {
      buf_append_byte(out, '\\');
      buf_append_byte(out, c);
    } else if (c == '\n') {
      buf_append_str(out, "\\n");
    } else if (c < 0x20) {
      char esc[7] = {'\\', 'u', '0', '0', HEX[c >> 4], HEX[c & 15], 0};
      buf_append_str(out, esc);
    } else {
      buf_append_byte(out, c);
    }
  }
  buf_append_byte(out, '"');
}

void api_json_logprob(Buf *out, float logprob) {
  if (!(logprob >= -9999.0f)) {
    buf_append_str(out, "-9999.0");
    return;
  }
  buf_printf(out, "%.9g", (double)logprob);
}
