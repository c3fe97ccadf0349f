// api_error.h: a client error as the API answers it: HTTP status, OpenAI error type, the
// offending parameter and a message. Built where a request is judged, written out by the server
// (http_reply_error) or, mid-stream, as an SSE error event. Holds no pointers into the request.
#ifndef GE_API_API_ERROR_H
#define GE_API_API_ERROR_H

#include <cjson/cJSON.h>
#include <stdbool.h>

typedef struct {
  unsigned status;  // 400, 401, 404, 405, 413, 503; 0: no error
  char param[64];   // the request field at fault, "" for none
  char message[320];
} ApiError;

// Fills e; param may be NULL. Returns false, so that validators can `return api_error(...)`.
__attribute__((format(printf, 4, 5))) bool api_error(ApiError *e, unsigned status,
                                                     const char *param, const char *fmt, ...);

// The error type OpenAI's clients expect for a status ("BadRequestError", "NotFoundError", ...).
const char *api_error_type(unsigned status);

// The OpenAI error body for e.
cJSON *api_error_body(const ApiError *e);

#endif
