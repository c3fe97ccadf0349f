// api_tool_calls.c: tool call tracking and its JSON. Stream deltas are printed into the caller's
// buffer (no allocation per token once it has grown); whole answers build cJSON once per call.
#include "api/api_tool_calls.h"

#include <stdio.h>
#include <string.h>

#include "api/api_json.h"
#include "api/api_output.h"

static const char FUNCTIONS[] = "functions.";

const char *api_tool_calls_name(const HarmonyParser *p) {
  size_t n = sizeof FUNCTIONS - 1;
  return strncmp(p->recipient, FUNCTIONS, n) == 0 && p->recipient[n] ? p->recipient + n : NULL;
}

void api_tool_calls_init(ApiToolCalls *c, uint64_t seed, bool whole) {
  *c = (ApiToolCalls){.calls = whole ? cJSON_CreateArray() : NULL};
  uint64_t z = seed + 0x9e3779b97f4a7c15ull;  // splitmix64: a well-spread id from the seed
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  snprintf(c->id_prefix, sizeof c->id_prefix, "chatcmpl-tool-%016llx",
           (unsigned long long)(z ^ (z >> 31)));
}

void api_tool_calls_free(ApiToolCalls *c) {
  cJSON_Delete(c->calls);
  buf_free(&c->args);
  c->calls = NULL;
}

// Whole answers: the current call's arguments into its object.
static void close_call(ApiToolCalls *c) {
  if (!c->calls || !c->in_call) return;
  cJSON *fn =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(c->calls, c->num_calls - 1), "function");
  cJSON_ReplaceItemInObjectCaseSensitive(fn, "arguments",
                                         cJSON_CreateString(c->args.data ? c->args.data : ""));
  buf_clear(&c->args);
}

bool api_tool_calls_track(ApiToolCalls *c, const HarmonyParser *p, HarmonyEventKind kind, bool last,
                          const Buf *delta, bool *started) {
  *started = false;
  const char *name = api_tool_calls_name(p);
  if (!c->in_call && p->in_content && name) {
    *started = true;
    c->in_call = true;
    c->num_calls++;
    if (c->calls) {
      char id[64];
      snprintf(id, sizeof id, "%s%d", c->id_prefix, c->num_calls - 1);
      cJSON *call = cJSON_CreateObject();
      cJSON_AddStringToObject(call, "id", id);
      cJSON_AddStringToObject(call, "type", "function");
      cJSON *fn = cJSON_AddObjectToObject(call, "function");
      cJSON_AddStringToObject(fn, "name", name);
      cJSON_AddStringToObject(fn, "arguments", "");
      cJSON_AddItemToArray(c->calls, call);
    }
  }
  if (!c->in_call) return false;
  if (c->calls) buf_append(&c->args, delta->data, delta->len);
  if (kind == HARMONY_EVENT_MESSAGE_END || kind == HARMONY_EVENT_STOP || last) {
    close_call(c);
    c->in_call = false;
  }
  return true;
}

void api_tool_calls_start_delta(const ApiToolCalls *c, const HarmonyParser *p, Buf *out) {
  buf_printf(out,
             "\"tool_calls\":[{\"index\":%d,\"id\":\"%s%d\",\"type\":\"function\","
             "\"function\":{\"name\":",
             c->num_calls - 1, c->id_prefix, c->num_calls - 1);
  const char *name = api_tool_calls_name(p);
  api_json_string(out, name, strlen(name));
  buf_append_str(out, ",\"arguments\":\"\"}}]");
}

void api_tool_calls_args_delta(const ApiToolCalls *c, const Buf *delta, Buf *out) {
  buf_printf(out, "\"tool_calls\":[{\"index\":%d,\"function\":{\"arguments\":", c->num_calls - 1);
  api_json_string(out, delta->data, delta->len);
  buf_append_str(out, "}}]");
}

const char *api_tool_calls_finish(const ApiToolCalls *c, bool stopped, const char *fallback) {
  return stopped && c->num_calls > 0 ? "tool_calls" : fallback;
}

void api_tool_calls_add_to(const ApiToolCalls *c, cJSON *message) {
  cJSON_AddItemToObject(message, "tool_calls",
                        c->calls ? cJSON_Duplicate(c->calls, true) : cJSON_CreateArray());
}
