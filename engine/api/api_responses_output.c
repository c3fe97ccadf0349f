// api_responses_output.c: the Response object, its output items and its stream events. Delta
// events are printed into the answer buffer (no allocation per token once buffers have grown);
// items and the Response object are built with cJSON once each. Must not block.
#include "api/api_responses_output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_error.h"
#include "api/api_json.h"
#include "api/api_tool_calls.h"
#include "common/check.h"

typedef enum { ITEM_NONE, ITEM_REASONING, ITEM_MESSAGE, ITEM_CALL } ItemKind;

struct ApiResponsesOutput {
  ApiOutputInfo info;
  cJSON *echo;   // the request's members of the Response object
  char id[40];   // "resp_<hex>"
  char hex[20];  // the answer's id digits, reused in its item ids
  HarmonyParser parser;
  Buf delta;      // the text the current event adds
  uint64_t seq;   // the next event's sequence_number
  bool started;   // response.created and response.in_progress are out
  cJSON *output;  // finished items
  ItemKind item;  // the item being written
  char item_id[48];
  char call_id[48];
  char call_name[128];
  Buf text;  // the current item's text so far
  uint32_t num_reasoning_tokens;
};

ApiResponsesOutput *api_responses_output_new(const ApiResponsesInfo *ri, const ApiOutputInfo *info,
                                             uint64_t seed) {
  ApiResponsesOutput *o = xcalloc(1, sizeof *o);
  o->info = *info;
  o->info.responses = NULL;
  o->echo = cJSON_Duplicate(ri->echo, true);
  o->output = cJSON_CreateArray();
  uint64_t z = (seed + 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
  snprintf(o->hex, sizeof o->hex, "%016llx", (unsigned long long)(z ^ (z >> 29)));
  snprintf(o->id, sizeof o->id, "resp_%s", o->hex);
  harmony_parser_init(&o->parser);
  return o;
}

void api_responses_output_free(ApiResponsesOutput *o) {
  if (!o) return;
  cJSON_Delete(o->echo);
  cJSON_Delete(o->output);
  harmony_parser_free(&o->parser);
  buf_free(&o->delta);
  buf_free(&o->text);
  free(o);
}

// ---- JSON -----------------------------------------------------------------------------------

static cJSON *usage_json(const TokenEvent *ev, uint32_t reasoning) {
  cJSON *u = cJSON_CreateObject();
  cJSON_AddNumberToObject(u, "input_tokens", ev->num_prompt_tokens);
  cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "input_tokens_details"), "cached_tokens", 0);
  cJSON_AddNumberToObject(u, "output_tokens", ev->num_output_tokens);
  cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "output_tokens_details"), "reasoning_tokens",
                          reasoning);
  cJSON_AddNumberToObject(u, "total_tokens", (double)ev->num_prompt_tokens + ev->num_output_tokens);
  return u;
}

// The Response object; ev NULL: in progress (no output, no usage yet).
static cJSON *response_json(const ApiResponsesOutput *o, const TokenEvent *ev) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "id", o->id);
  cJSON_AddStringToObject(r, "object", "response");
  cJSON_AddNumberToObject(r, "created_at", (double)o->info.created);
  cJSON_AddStringToObject(r, "model", o->info.model);
  bool incomplete = ev && ev->finish == FINISH_LENGTH;
  cJSON_AddStringToObject(r, "status",
                          !ev          ? "in_progress"
                          : incomplete ? "incomplete"
                                       : "completed");
  if (incomplete)
    cJSON_AddStringToObject(cJSON_AddObjectToObject(r, "incomplete_details"), "reason",
                            "max_output_tokens");
  else
    cJSON_AddNullToObject(r, "incomplete_details");
  cJSON_AddNullToObject(r, "error");
  cJSON_AddItemToObject(r, "output", ev ? cJSON_Duplicate(o->output, true) : cJSON_CreateArray());
  const cJSON *member;
  cJSON_ArrayForEach(member, o->echo) {
    cJSON_AddItemToObject(r, member->string, cJSON_Duplicate(member, true));
  }
  cJSON_AddBoolToObject(r, "background", false);
  cJSON_AddBoolToObject(r, "store", false);
  cJSON_AddStringToObject(r, "truncation", "disabled");
  cJSON_AddNullToObject(r, "previous_response_id");
  cJSON_AddStringToObject(r, "service_tier", "auto");
  if (ev)
    cJSON_AddItemToObject(r, "usage", usage_json(ev, o->num_reasoning_tokens));
  else
    cJSON_AddNullToObject(r, "usage");
  return r;
}

static cJSON *text_part(const char *type, const char *text) {
  cJSON *p = cJSON_CreateObject();
  cJSON_AddStringToObject(p, "type", type);
  cJSON_AddStringToObject(p, "text", text);
  if (strcmp(type, "output_text") == 0) {
    cJSON_AddArrayToObject(p, "annotations");
    cJSON_AddArrayToObject(p, "logprobs");
  }
  return p;
}

// The current item; done: with its text and status completed, else as it begins.
static cJSON *item_json(const ApiResponsesOutput *o, bool done) {
  const char *text = done && o->text.data ? o->text.data : "";
  cJSON *it = cJSON_CreateObject();
  cJSON_AddStringToObject(it, "id", o->item_id);
  if (o->item == ITEM_CALL) {
    cJSON_AddStringToObject(it, "type", "function_call");
    cJSON_AddStringToObject(it, "call_id", o->call_id);
    cJSON_AddStringToObject(it, "name", o->call_name);
    cJSON_AddStringToObject(it, "arguments", text);
  } else if (o->item == ITEM_MESSAGE) {
    cJSON_AddStringToObject(it, "type", "message");
    cJSON_AddStringToObject(it, "role", "assistant");
    cJSON *content = cJSON_AddArrayToObject(it, "content");
    if (done) cJSON_AddItemToArray(content, text_part("output_text", text));
  } else {
    cJSON_AddStringToObject(it, "type", "reasoning");
    cJSON_AddArrayToObject(it, "summary");
    cJSON *content = cJSON_AddArrayToObject(it, "content");
    if (done) cJSON_AddItemToArray(content, text_part("reasoning_text", text));
  }
  cJSON_AddStringToObject(it, "status", done ? "completed" : "in_progress");
  return it;
}

// ---- stream events --------------------------------------------------------------------------

// One event: its type, its members (a JSON object, consumed) and the sequence number.
static void emit(ApiResponsesOutput *o, const char *type, cJSON *e, Buf *out) {
  cJSON *head = cJSON_CreateObject();
  cJSON_AddStringToObject(head, "type", type);
  cJSON_AddNumberToObject(head, "sequence_number", (double)o->seq++);
  const cJSON *member;
  cJSON_ArrayForEach(member, e) {
    cJSON_AddItemToObject(head, member->string, cJSON_Duplicate(member, true));
  }
  cJSON_Delete(e);
  char *text = cJSON_PrintUnformatted(head);
  cJSON_Delete(head);
  buf_printf(out, "event: %s\ndata: %s\n\n", type, text);
  cJSON_free(text);
}

static cJSON *at_item(const ApiResponsesOutput *o, bool with_content_index) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "item_id", o->item_id);
  cJSON_AddNumberToObject(e, "output_index", cJSON_GetArraySize(o->output));
  if (with_content_index) cJSON_AddNumberToObject(e, "content_index", 0);
  return e;
}

static void emit_with(ApiResponsesOutput *o, const char *type, cJSON *e, const char *key,
                      cJSON *value, Buf *out) {
  cJSON_AddItemToObject(e, key, value);
  emit(o, type, e, out);
}

static const char *part_type(const ApiResponsesOutput *o) {
  return o->item == ITEM_MESSAGE ? "output_text" : "reasoning_text";
}

static void begin_item(ApiResponsesOutput *o, ItemKind kind, Buf *out) {
  o->item = kind;
  buf_clear(&o->text);
  int n = cJSON_GetArraySize(o->output);
  const char *prefix = kind == ITEM_CALL ? "fc" : kind == ITEM_MESSAGE ? "msg" : "rs";
  snprintf(o->item_id, sizeof o->item_id, "%s_%s%04d", prefix, o->hex, n);
  snprintf(o->call_id, sizeof o->call_id, "call_%s%04d", o->hex, n);
  const char *name = api_tool_calls_name(&o->parser);
  snprintf(o->call_name, sizeof o->call_name, "%s", name ? name : "");
  if (!o->info.stream) return;
  cJSON *e = cJSON_CreateObject();
  cJSON_AddNumberToObject(e, "output_index", n);
  emit_with(o, "response.output_item.added", e, "item", item_json(o, false), out);
  if (kind == ITEM_CALL) return;
  emit_with(o, "response.content_part.added", at_item(o, true), "part", text_part(part_type(o), ""),
            out);
}

// A delta event, printed without cJSON (one per token).
static void emit_delta(ApiResponsesOutput *o, Buf *out) {
  const char *type = o->item == ITEM_CALL      ? "response.function_call_arguments.delta"
                     : o->item == ITEM_MESSAGE ? "response.output_text.delta"
                                               : "response.reasoning_text.delta";
  buf_printf(out,
             "event: %s\ndata: {\"type\":\"%s\",\"sequence_number\":%llu,\"item_id\":\"%s\","
             "\"output_index\":%d,",
             type, type, (unsigned long long)o->seq++, o->item_id, cJSON_GetArraySize(o->output));
  if (o->item != ITEM_CALL) buf_append_str(out, "\"content_index\":0,");
  if (o->item == ITEM_MESSAGE) buf_append_str(out, "\"logprobs\":[],");
  buf_append_str(out, "\"delta\":");
  api_json_string(out, o->delta.data, o->delta.len);
  buf_append_str(out, "}\n\n");
}

static void end_item(ApiResponsesOutput *o, Buf *out) {
  const char *text = o->text.data ? o->text.data : "";
  if (o->info.stream && o->item == ITEM_CALL) {
    cJSON *e = at_item(o, false);
    cJSON_AddStringToObject(e, "name", o->call_name);
    emit_with(o, "response.function_call_arguments.done", e, "arguments", cJSON_CreateString(text),
              out);
  } else if (o->info.stream) {
    cJSON *e = at_item(o, true);
    if (o->item == ITEM_MESSAGE) cJSON_AddArrayToObject(e, "logprobs");
    emit_with(
        o, o->item == ITEM_MESSAGE ? "response.output_text.done" : "response.reasoning_text.done",
        e, "text", cJSON_CreateString(text), out);
    emit_with(o, "response.content_part.done", at_item(o, true), "part",
              text_part(part_type(o), text), out);
  }
  cJSON *item = item_json(o, true);
  if (o->info.stream) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "output_index", cJSON_GetArraySize(o->output));
    emit_with(o, "response.output_item.done", e, "item", cJSON_Duplicate(item, true), out);
  }
  cJSON_AddItemToArray(o->output, item);
  o->item = ITEM_NONE;
}

// ---- events ---------------------------------------------------------------------------------

static ItemKind kind_of(const HarmonyParser *p) {
  if (api_tool_calls_name(p)) return ITEM_CALL;
  return strcmp(p->channel, "final") == 0 ? ITEM_MESSAGE : ITEM_REASONING;
}

static void write_json(cJSON *body, Buf *out) {
  char *text = cJSON_PrintUnformatted(body);
  cJSON_Delete(body);
  buf_append_str(out, text);
  cJSON_free(text);
}

static unsigned aborted(ApiResponsesOutput *o, Buf *out) {
  ApiError e;
  api_error(&e, 503, NULL, "the request was aborted: the server is stopping");
  if (!o->info.stream) {
    write_json(api_error_body(&e), out);
    return 503;
  }
  cJSON *ev = cJSON_CreateObject();
  cJSON_AddStringToObject(ev, "code", "server_shutting_down");
  cJSON_AddStringToObject(ev, "message", e.message);
  cJSON_AddNullToObject(ev, "param");
  emit(o, "error", ev, out);
  return 200;
}

unsigned api_responses_output_event(ApiResponsesOutput *o, const TokenEvent *ev, Buf *out) {
  if (o->info.stream && !o->started) {
    emit_with(o, "response.created", cJSON_CreateObject(), "response", response_json(o, NULL), out);
    emit_with(o, "response.in_progress", cJSON_CreateObject(), "response", response_json(o, NULL),
              out);
    o->started = true;
  }
  if (ev->finish == FINISH_ABORT) return aborted(o, out);
  bool last = ev->finish != FINISH_NONE;
  buf_clear(&o->delta);
  HarmonyEventKind kind = HARMONY_EVENT_NONE;
  if (ev->has_token) kind = harmony_parser_push(&o->parser, o->info.t, ev->token_id, &o->delta);
  if (last) stream_decoder_flush(&o->parser.decoder, &o->delta);
  if (ev->has_token && strcmp(o->parser.channel, "analysis") == 0) o->num_reasoning_tokens++;
  if (o->item == ITEM_NONE && (o->parser.in_content || o->delta.len))
    begin_item(o, kind_of(&o->parser), out);
  if (o->item != ITEM_NONE && o->delta.len) {
    buf_append(&o->text, o->delta.data, o->delta.len);
    if (o->info.stream) emit_delta(o, out);
  }
  if (o->item != ITEM_NONE &&
      (kind == HARMONY_EVENT_MESSAGE_END || kind == HARMONY_EVENT_STOP || last))
    end_item(o, out);
  if (!last) return 200;
  cJSON *response = response_json(o, ev);
  if (!o->info.stream) {
    write_json(response, out);
    return 200;
  }
  emit_with(o, "response.completed", cJSON_CreateObject(), "response", response, out);
  return 200;
}
