// api_error.h: a client error as the API answers it: HTTP status, error type (vLLM's names), the
// offending parameter, OpenAI's string code (or none) and a message. Built where a request is judged, written out by the server
// (http_reply_error) or, mid-stream, as an SSE error event. Holds no pointers into the request.
#ifndef GE_API_API_ERROR_H
#define GE_API_API_ERROR_H

#include <cjson/cJSON.h>
#include <stdbool.h>

typedef struct {
  unsigned status;  // 400, 401, 404, 405, 413, 503; 0: no error
  char param[64];   // the request field at fault, "" for none
  char code[32];    // OpenAI's code ("model_not_found"), "" for the status's default
  char message[320];
} ApiError;

// Fills e (code ""); param may be NULL. Returns false, so that validators can `return api_error(...)`.
__attribute__((format(printf, 4, 5))) bool api_error(ApiError *e, unsigned status,
                                                     const char *param, const char *fmt, ...);

// 404 for a model this server does not serve, as OpenAI answers it: code "model_not_found",
// param may be NULL. Returns false.
bool api_error_model_not_found(ApiError *e, const char *param, const char *model);

// The error type OpenAI's clients expect for a status ("BadRequestError", "NotFoundError", ...).
const char *api_error_type(unsigned status);

// The OpenAI error body for e: {"error": {"message", "type", "param", "code"}}. code is a string
// or null as OpenAI sends it (the official SDKs type APIError.code as string | null): e->code,
// else "invalid_api_key" for 401, else null. (vLLM sends the HTTP status there; clients that
// need the status have it from the response line.)
cJSON *api_error_body(const ApiError *e);

#endif
