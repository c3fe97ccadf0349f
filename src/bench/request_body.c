// request_body.c: builds the completions / chat request JSON with cJSON in vLLM's key order:
// the endpoint's fixed keys, then the optional sampling keys as vLLM's extra_body appends them
// (top_p, top_k, min_p; temperature overwrites the fixed 0.0 in place). Must not send anything
// vLLM v0.10.2 would not, except what --extra-body adds: its keys last, replacing ours in place.
#include "bench/request_body.h"

#include <cjson/cJSON.h>

#include "common/check.h"

static cJSON *chat_messages(const char *prompt) {
  cJSON *part = cJSON_CreateObject();
  cJSON_AddStringToObject(part, "type", "text");
  cJSON_AddStringToObject(part, "text", prompt);
  cJSON *content = cJSON_CreateArray();
  cJSON_AddItemToArray(content, part);
  cJSON *message = cJSON_CreateObject();
  cJSON_AddStringToObject(message, "role", "user");
  cJSON_AddItemToObject(message, "content", content);
  cJSON *messages = cJSON_CreateArray();
  cJSON_AddItemToArray(messages, message);
  return messages;
}

char *request_body_build(const ClientOptions *o, const BenchRequest *r) {
  bool chat = o->endpoint == ENDPOINT_CHAT;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "model", o->model);
  if (chat)
    cJSON_AddItemToObject(root, "messages", chat_messages(r->prompt));
  else
    cJSON_AddStringToObject(root, "prompt", r->prompt);
  cJSON_AddNumberToObject(root, "temperature", o->has_temperature ? o->temperature : 0.0);
  if (!chat) cJSON_AddNumberToObject(root, "repetition_penalty", 1.0);
  cJSON_AddNumberToObject(root, chat ? "max_completion_tokens" : "max_tokens",
                          r->expected_output_len);
  if (!chat) {
    if (o->logprobs >= 0)
      cJSON_AddNumberToObject(root, "logprobs", o->logprobs);
    else
      cJSON_AddNullToObject(root, "logprobs");
  }
  cJSON_AddTrueToObject(root, "stream");
  cJSON *stream_options = cJSON_AddObjectToObject(root, "stream_options");
  cJSON_AddTrueToObject(stream_options, "include_usage");
  if (o->ignore_eos) cJSON_AddTrueToObject(root, "ignore_eos");
  if (o->has_top_p) cJSON_AddNumberToObject(root, "top_p", o->top_p);
  if (o->has_top_k) cJSON_AddNumberToObject(root, "top_k", o->top_k);
  if (o->has_min_p) cJSON_AddNumberToObject(root, "min_p", o->min_p);
  for (const cJSON *item = o->extra_body ? o->extra_body->child : NULL; item; item = item->next) {
    cJSON *copy = cJSON_Duplicate(item, true);
    if (cJSON_HasObjectItem(root, item->string))
      cJSON_ReplaceItemInObjectCaseSensitive(root, item->string, copy);
    else
      cJSON_AddItemToObject(root, item->string, copy);
  }
  char *text = cJSON_PrintUnformatted(root);
  CHECK(text != NULL);  // cJSON prints NULL only when out of memory
  cJSON_Delete(root);
  return text;
}
