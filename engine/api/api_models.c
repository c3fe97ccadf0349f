// api_models.c: the model object (OpenAI's id, object, created, owned_by; vLLM's root, parent,
// max_model_len) and the version body.
#include "api/api_models.h"

#include <string.h>

static cJSON *model_object(const ApiModelInfo *m) {
  cJSON *model = cJSON_CreateObject();
  cJSON_AddStringToObject(model, "id", m->id);
  cJSON_AddStringToObject(model, "object", "model");
  cJSON_AddNumberToObject(model, "created", (double)m->created);
  cJSON_AddStringToObject(model, "owned_by", "gptoss-engine");
  cJSON_AddStringToObject(model, "root", m->id);
  cJSON_AddNullToObject(model, "parent");
  cJSON_AddNumberToObject(model, "max_model_len", m->max_model_len);
  return model;
}

cJSON *api_models_list(const ApiModelInfo *m) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "object", "list");
  cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "data"), model_object(m));
  return root;
}

cJSON *api_models_get(const ApiModelInfo *m, const char *id, ApiError *err) {
  if (strcmp(id, m->id) == 0) return model_object(m);
  api_error_model_not_found(err, NULL, id);
  return NULL;
}

cJSON *api_models_version(void) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "version", API_ENGINE_VERSION);
  return root;
}
