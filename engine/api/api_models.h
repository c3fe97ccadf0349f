// api_models.h: the bodies of GET /v1/models, GET /v1/models/{id} (OpenAI's model object, or a
// 404 with code "model_not_found" as OpenAI answers an unknown id) and GET /version (vLLM's
// {"version": ...}, this engine's version). Plain JSON building: no I/O, no server state.
#ifndef GE_API_API_MODELS_H
#define GE_API_API_MODELS_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "api/api_error.h"

#define API_ENGINE_VERSION "0.1.0"

typedef struct {
  const char *id;   // the served model name
  int64_t created;  // unix seconds (the server's start)
  int max_model_len;
} ApiModelInfo;

// {"object": "list", "data": [model]}.
cJSON *api_models_list(const ApiModelInfo *m);
// The model object when id is m->id; NULL with err (404) otherwise.
cJSON *api_models_get(const ApiModelInfo *m, const char *id, ApiError *err);
// {"version": API_ENGINE_VERSION}.
cJSON *api_models_version(void);

#endif
