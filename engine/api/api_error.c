// api_error.c: ApiError construction and its OpenAI body. Messages quote what clients sent (a
// model name, a URL, a role), so they are made valid UTF-8 here: a JSON body must be UTF-8
// (RFC 8259), and strict clients refuse the whole answer otherwise. No I/O.
#include "api/api_error.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/http_server.h"
#include "text/utf8.h"

// text as valid UTF-8 into out[size]: each invalid sequence becomes U+FFFD; a character that
// would not fit whole (or was cut by the caller's truncation) is left out.
static void utf8_copy(char *out, size_t size, const char *text) {
  const uint8_t *s = (const uint8_t *)text;
  size_t n = strlen(text), len = 0;
  for (size_t i = 0; i < n;) {
    int k = utf8_next(s + i, n - i);
    const char *piece = k > 0 ? text + i : UTF8_REPLACEMENT;
    size_t piece_len = k > 0 ? (size_t)k : 3;
    if (k == 0 || len + piece_len >= size) break;
    memcpy(out + len, piece, piece_len);
    len += piece_len;
    i += k > 0 ? (size_t)k : (size_t)-k;
  }
  out[len] = '\0';
}

bool api_error(ApiError *e, unsigned status, const char *param, const char *fmt, ...) {
  e->status = status;
  e->code[0] = '\0';
  snprintf(e->param, sizeof e->param, "%s", param ? param : "");
  char text[sizeof e->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  utf8_copy(e->message, sizeof e->message, text);
  return false;
}

bool api_error_model_not_found(ApiError *e, const char *param, const char *model) {
  api_error(e, 404, param, "The model `%.200s` does not exist.", model);
  snprintf(e->code, sizeof e->code, "model_not_found");
  return false;
}

const char *api_error_type(unsigned status) {
  switch (status) {
    case 400:
      return "BadRequestError";
    case 401:
      return "AuthenticationError";
    case 404:
      return "NotFoundError";
    case 405:
      return "MethodNotAllowedError";
    case 413:
      return "RequestTooLargeError";
    case 503:
      return "ServiceUnavailableError";
    default:
      return "InternalServerError";
  }
}

cJSON *api_error_body(const ApiError *e) {
  const char *code = e->code[0] ? e->code : e->status == 401 ? "invalid_api_key" : NULL;
  return http_error_body(api_error_type(e->status), e->message, e->param[0] ? e->param : NULL,
                         code);
}
