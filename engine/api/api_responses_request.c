// api_responses_request.c: Responses API request validation and its mapping onto an
// ApiConversation (vLLM's parse_response_input). Must not keep pointers into the parsed JSON.
#include "api/api_responses_request.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/api_conversation.h"
#include "api/api_tools.h"
#include "common/buf.h"

static const cJSON *get(const cJSON *o, const char *key) {
  return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static bool absent(const cJSON *v) { return !v || cJSON_IsNull(v); }

// Every member this endpoint knows; any other present member is refused.
static const char *const KNOWN[] = {"model",
                                    "input",
                                    "instructions",
                                    "tools",
                                    "tool_choice",
                                    "parallel_tool_calls",
                                    "max_output_tokens",
                                    "temperature",
                                    "top_p",
                                    "reasoning",
                                    "stream",
                                    "store",
                                    "text",
                                    "metadata",
                                    "user",
                                    "previous_response_id",
                                    "background",
                                    "include",
                                    "truncation",
                                    "service_tier"};

static bool check_fields(const cJSON *req, ApiError *err) {
  const cJSON *m;
  cJSON_ArrayForEach(m, req) {
    bool known = false;
    for (size_t i = 0; i < sizeof KNOWN / sizeof *KNOWN; i++) known |= !strcmp(m->string, KNOWN[i]);
    if (!known && !cJSON_IsNull(m))
      return api_error(err, 400, m->string, "%.60s is not supported by /v1/responses here",
                       m->string);
  }
  const cJSON *v;
  if (!absent(v = get(req, "previous_response_id")))
    return api_error(err, 400, "previous_response_id",
                     "previous_response_id needs stored responses, and this server stores none "
                     "(send the whole conversation as input)");
  if (!absent(v = get(req, "background")) && !cJSON_IsFalse(v))
    return api_error(err, 400, "background", "background responses are not supported");
  if (!absent(v = get(req, "store")) && !cJSON_IsFalse(v))
    return api_error(err, 400, "store",
                     "store: true is not supported (this server keeps no responses; send "
                     "store: false or leave it out)");
  if (!absent(v = get(req, "include")) && !(cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0))
    return api_error(err, 400, "include", "include is not supported");
  if (!absent(v = get(req, "truncation")) &&
      !(cJSON_IsString(v) && strcmp(v->valuestring, "disabled") == 0))
    return api_error(err, 400, "truncation", "only truncation \"disabled\" is supported");
  if (!absent(v = get(req, "service_tier")) &&
      !(cJSON_IsString(v) &&
        (!strcmp(v->valuestring, "auto") || !strcmp(v->valuestring, "default"))))
    return api_error(err, 400, "service_tier", "service_tier must be \"auto\" or \"default\"");
  if (!absent(v = get(req, "tool_choice")) &&
      !(cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0))
    return api_error(err, 400, "tool_choice",
                     "only tool_choice \"auto\" is supported for gpt-oss (as in vLLM)");
  if (!absent(v = get(req, "parallel_tool_calls")) && !cJSON_IsBool(v))
    return api_error(err, 400, "parallel_tool_calls", "parallel_tool_calls must be a boolean");
  if (!absent(v = get(req, "metadata")) && !cJSON_IsObject(v))
    return api_error(err, 400, "metadata", "metadata must be an object");
  if (!absent(v = get(req, "user")) && !cJSON_IsString(v))
    return api_error(err, 400, "user", "user must be a string");
  if (!absent(v = get(req, "instructions")) && !cJSON_IsString(v))
    return api_error(err, 400, "instructions", "instructions must be a string");
  const cJSON *format = get(get(req, "text"), "format");
  const cJSON *type = get(format, "type");
  if (!absent(get(req, "text")) && !cJSON_IsObject(get(req, "text")))
    return api_error(err, 400, "text", "text must be an object");
  if (!absent(format) && !(cJSON_IsString(type) && strcmp(type->valuestring, "text") == 0))
    return api_error(err, 400, "text.format",
                     "text.format %.40s is not supported (it needs constrained decoding); use "
                     "\"text\"",
                     cJSON_IsString(type) ? type->valuestring : "of that form");
  return true;
}

static bool effort_of(const cJSON *req, const char **effort, ApiError *err) {
  const cJSON *reasoning = get(req, "reasoning");
  *effort = NULL;
  if (absent(reasoning)) return true;
  if (!cJSON_IsObject(reasoning))
    return api_error(err, 400, "reasoning", "reasoning must be an object");
  const cJSON *e = get(reasoning, "effort");
  if (!absent(get(reasoning, "summary")) || !absent(get(reasoning, "generate_summary")))
    return api_error(err, 400, "reasoning.summary", "reasoning summaries are not supported");
  if (absent(e)) return true;
  if (!cJSON_IsString(e) || !(!strcmp(e->valuestring, "low") || !strcmp(e->valuestring, "medium") ||
                              !strcmp(e->valuestring, "high")))
    return api_error(err, 400, "reasoning.effort",
                     "reasoning.effort must be \"low\", \"medium\" or \"high\"");
  *effort = e->valuestring;
  return true;
}

// A number member within [lo, hi]; *out stays when absent.
static bool number(const cJSON *req, const char *name, double lo, double hi, bool whole,
                   double *out, ApiError *err) {
  const cJSON *v = get(req, name);
  if (absent(v)) return true;
  if (!cJSON_IsNumber(v) || (whole && v->valuedouble != floor(v->valuedouble)) ||
      !(v->valuedouble >= lo && v->valuedouble <= hi))
    return api_error(err, 400, name, "%s must be %s in [%g, %g]", name,
                     whole ? "an integer" : "a number", lo, hi);
  *out = v->valuedouble;
  return true;
}

// ---- input items ----------------------------------------------------------------------------

static bool item_text(const cJSON *content, size_t i, Buf *out, ApiError *err) {
  buf_append(out, "", 0);
  if (cJSON_IsString(content)) {
    buf_append_str(out, content->valuestring);
    return true;
  }
  const cJSON *part;
  if (!cJSON_IsArray(content))
    return api_error(err, 400, "input", "input[%zu].content must be a string or a list", i);
  cJSON_ArrayForEach(part, content) {
    const cJSON *type = get(part, "type"), *text = get(part, "text");
    if (!cJSON_IsString(type) || !cJSON_IsString(text) ||
        (strcmp(type->valuestring, "input_text") && strcmp(type->valuestring, "output_text") &&
         strcmp(type->valuestring, "reasoning_text")))
      return api_error(err, 400, "input",
                       "input[%zu].content: only input_text and output_text parts are supported",
                       i);
    buf_append_str(out, text->valuestring);
  }
  return true;
}

static bool add_message(ApiConversation *c, const cJSON *item, size_t i, ApiError *err) {
  const cJSON *role = get(item, "role");
  const char *r = cJSON_IsString(role) ? role->valuestring : "";
  bool ok_role = !strcmp(r, "user") || !strcmp(r, "assistant") || !strcmp(r, "system") ||
                 !strcmp(r, "developer");
  if (!ok_role)
    return api_error(err, 400, "input",
                     "input[%zu].role must be user, assistant, system or developer", i);
  Buf text = {0};
  if (!strcmp(r, "developer")) buf_append_str(&text, "Instructions:\n");  // as vLLM prefixes it
  bool ok = item_text(get(item, "content"), i, &text, err);
  if (ok) api_conv_add(c, r, !strcmp(r, "assistant") ? "final" : NULL, NULL, NULL, text.data);
  buf_free(&text);
  return ok;
}

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = get(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

// The name of the function_call item before `before` in input whose call_id is id, or NULL.
static const char *call_name(const cJSON *input, const cJSON *before, const char *id) {
  const char *name = NULL;
  for (const cJSON *it = input->child; it && it != before; it = it->next) {
    const char *type = str(it, "type"), *cid = str(it, "call_id");
    if (type && !strcmp(type, "function_call") && cid && !strcmp(cid, id)) name = str(it, "name");
  }
  return name;
}

static bool add_item(ApiConversation *c, const cJSON *input, const cJSON *item, size_t i,
                     ApiError *err) {
  if (!cJSON_IsObject(item)) return api_error(err, 400, "input", "input[%zu] must be an object", i);
  const char *type = str(item, "type");
  if (!type || !strcmp(type, "message")) return add_message(c, item, i, err);
  char who[160];
  if (!strcmp(type, "function_call")) {
    const char *name = str(item, "name"), *args = str(item, "arguments");
    if (!name || !args || !str(item, "call_id"))
      return api_error(err, 400, "input",
                       "input[%zu]: a function_call needs call_id, name and arguments", i);
    snprintf(who, sizeof who, "functions.%s", name);
    api_conv_add(c, "assistant", "commentary", who, "json", args);
    return true;
  }
  if (!strcmp(type, "function_call_output")) {
    const char *id = str(item, "call_id"), *output = str(item, "output");
    const char *name = id ? call_name(input, item, id) : NULL;
    if (!name || !output)
      return api_error(err, 400, "input",
                       "input[%zu]: a function_call_output needs a string output and the "
                       "call_id of an earlier function_call item",
                       i);
    snprintf(who, sizeof who, "functions.%s", name);
    api_conv_add(c, who, NULL, NULL, NULL, output);
    return true;
  }
  if (!strcmp(type, "reasoning")) {
    const cJSON *content = get(item, "content");
    Buf text = {0};
    bool ok = cJSON_GetArraySize(content) == 1 && item_text(content, i, &text, err);
    if (ok) api_conv_add(c, "assistant", "analysis", NULL, NULL, text.data);
    buf_free(&text);
    return ok || api_error(err, 400, "input",
                           "input[%zu]: a reasoning item needs one reasoning_text content", i);
  }
  return api_error(err, 400, "input", "input[%zu]: item type \"%.40s\" is not supported", i, type);
}

static bool build_conversation(const cJSON *input, ApiConversation *c, ApiError *err) {
  if (cJSON_IsString(input)) {
    api_conv_add(c, "user", NULL, NULL, NULL, input->valuestring);
    return true;
  }
  if (!cJSON_IsArray(input) || cJSON_GetArraySize(input) == 0)
    return api_error(err, 400, "input", "input must be a string or a non-empty list of items");
  size_t i = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, input) {
    if (!add_item(c, input, item, i++, err)) return false;
  }
  return true;
}

// ---- the request ----------------------------------------------------------------------------

static void echo_member(cJSON *echo, const cJSON *req, const char *key, cJSON *fallback) {
  const cJSON *v = get(req, key);
  cJSON_AddItemToObject(echo, key, absent(v) ? fallback : cJSON_Duplicate(v, true));
  if (!absent(v)) cJSON_Delete(fallback);
}

static cJSON *echo_of(const cJSON *req, const char *effort, double temperature, double top_p) {
  cJSON *echo = cJSON_CreateObject();
  echo_member(echo, req, "instructions", cJSON_CreateNull());
  echo_member(echo, req, "metadata", cJSON_CreateNull());
  echo_member(echo, req, "user", cJSON_CreateNull());
  echo_member(echo, req, "tools", cJSON_CreateArray());
  cJSON_AddStringToObject(echo, "tool_choice", "auto");
  echo_member(echo, req, "parallel_tool_calls", cJSON_CreateTrue());
  cJSON_AddNumberToObject(echo, "temperature", temperature);
  cJSON_AddNumberToObject(echo, "top_p", top_p);
  echo_member(echo, req, "max_output_tokens", cJSON_CreateNull());
  cJSON *reasoning = cJSON_AddObjectToObject(echo, "reasoning");
  if (effort)
    cJSON_AddStringToObject(reasoning, "effort", effort);
  else
    cJSON_AddNullToObject(reasoning, "effort");
  cJSON_AddNullToObject(reasoning, "summary");
  cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(echo, "text"), "format"),
                          "type", "text");
  return echo;
}

static bool parse_object(ApiRequest *r, ApiResponsesInfo *info, const cJSON *req,
                         const ApiRequestContext *c, ApiError *err) {
  const char *effort;
  double temperature = 1, top_p = 1, max_tokens = 0;
  if (!api_request_check_model(req, c->model, err) || !check_fields(req, err) ||
      !effort_of(req, &effort, err) ||
      !number(req, "temperature", 0, 2, false, &temperature, err) ||
      !number(req, "top_p", 1e-9, 1, false, &top_p, err) ||
      !number(req, "max_output_tokens", 1, INT_MAX, true, &max_tokens, err))
    return false;
  const cJSON *stream = get(req, "stream");
  if (!absent(stream) && !cJSON_IsBool(stream))
    return api_error(err, 400, "stream", "stream must be true or false");
  r->stream = cJSON_IsTrue(stream);
  if (absent(get(req, "input"))) return api_error(err, 400, "input", "input is required");
  ApiTools tools;
  if (!api_tools_parse(get(req, "tools"), false, &tools, err)) return false;
  ApiConversation conv = {0};
  bool ok = build_conversation(get(req, "input"), &conv, err);
  if (ok) {
    ApiPreamble p = {.current_date = c->current_date,
                     .reasoning_effort = effort,
                     .instructions = str(req, "instructions"),
                     .tools = &tools};
    api_conv_render(&conv, &p, c->t, &r->prompt);
  }
  api_conv_free(&conv);
  api_tools_free(&tools);
  if (!ok) return false;
  r->num_prompts = 1;  // one output, one engine request (api_request_choice makes its params)
  r->n = 1;
  r->max_tokens_given = (int)max_tokens;
  r->max_model_len = c->max_model_len;
  r->params = (EngineRequestParams){
      .sampling = {.temperature = (float)temperature, .top_p = (float)top_p, .top_k = -1},
      .seed = c->default_seed};
  r->params = api_request_choice(r, 0);
  info->echo = echo_of(req, effort, temperature, top_p);
  return true;
}

bool api_responses_parse(ApiRequest *r, ApiResponsesInfo *info, const ApiRequestContext *c,
                         const char *body, size_t len, ApiError *err) {
  *r = (ApiRequest){.chat = true};
  *info = (ApiResponsesInfo){0};
  cJSON *req = api_request_object(body, len, err);
  bool ok = req && parse_object(r, info, req, c, err);
  cJSON_Delete(req);
  if (!ok) api_request_free(r);
  return ok;
}
