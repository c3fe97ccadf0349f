// api_error.c: ApiError construction and its OpenAI body. No I/O.
#include "api/api_error.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/http_server.h"

bool api_error(ApiError *e, unsigned status, const char *param, const char *fmt, ...) {
  e->status = status;
  snprintf(e->param, sizeof e->param, "%s", param ? param : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
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
  return http_error_body(e->status, api_error_type(e->status), e->message,
                         e->param[0] ? e->param : NULL);
}
