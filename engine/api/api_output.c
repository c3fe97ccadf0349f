// api_output.c: chunk and body writers. Stream chunks are written from a per-request prefix and
// fixed ASCII with the text JSON-escaped in place, so a token costs no allocation once the
// buffers have grown; whole answers (one per request) are built with cJSON. Must not block.
#include "api/api_output.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "api/api_error.h"
#include "api/api_responses_output.h"

void api_output_init(ApiOutput *o, const ApiOutputInfo *info) {
  *o = (ApiOutput){.info = *info};
  harmony_parser_init(&o->parser);
  uint64_t seed = info->request_id ^ ((uint64_t)info->created << 20) ^ (uint64_t)(uintptr_t)o;
  api_tool_calls_init(&o->calls, seed, info->chat && !info->stream && !info->responses);
  if (info->responses) {
    o->responses = api_responses_output_new(info->responses, info, seed);
    return;
  }
  if (!info->stream) return;
  cJSON *model = cJSON_CreateString(info->model);
  char *model_json = cJSON_PrintUnformatted(model);
  cJSON_Delete(model);
  buf_printf(&o->prefix,
             "{\"id\":\"%s-%llu\",\"object\":\"%s\",\"created\":%lld,\"model\":%s,"
             "\"choices\":",
             info->chat ? "chatcmpl" : "cmpl", (unsigned long long)info->request_id,
             info->chat ? "chat.completion.chunk" : "text_completion", (long long)info->created,
             model_json);
  cJSON_free(model_json);
}

void api_output_free(ApiOutput *o) {
  harmony_parser_free(&o->parser);
  api_tool_calls_free(&o->calls);
  api_responses_output_free(o->responses);
  buf_free(&o->prefix);
  buf_free(&o->delta);
  buf_free(&o->content);
  buf_free(&o->reasoning);
  token_ids_free(&o->output_ids);
}

void api_output_json_string(Buf *out, const char *s, size_t n) {
  static const char HEX[] = "0123456789abcdef";
  buf_reserve(out, 6 * n + 2);
  buf_append_byte(out, '"');
  for (size_t i = 0; i < n; i++) {
    uint8_t c = (uint8_t)s[i];
    if (c == '"' || c == '\\') {
      buf_append_byte(out, '\\');
      buf_append_byte(out, c);
    } else if (c == '\n') {
      buf_append_str(out, "\\n");
    } else if (c < 0x20) {
      char esc[7] = {'\\', 'u', '0', '0', HEX[c >> 4], HEX[c & 15], 0};
      buf_append_str(out, esc);
    } else {
      buf_append_byte(out, c);
    }
  }
  buf_append_byte(out, '"');
}

static const char *finish_name(FinishReason f) {
  return f == FINISH_STOP ? "stop" : f == FINISH_LENGTH ? "length" : NULL;
}

typedef enum { TEXT_CONTENT, TEXT_REASONING, TEXT_CALL, TEXT_CALL_START } TextKind;

// Chat: where the text the parser just gave goes.
static TextKind chat_text_kind(ApiOutput *o, HarmonyEventKind kind, bool last) {
  bool started;
  if (api_tool_calls_track(&o->calls, &o->parser, kind, last, &o->delta, &started))
    return started ? TEXT_CALL_START : TEXT_CALL;
  return strcmp(o->parser.channel, "analysis") == 0 ? TEXT_REASONING : TEXT_CONTENT;
}

// The text ev adds, into o->delta, and where it belongs.
static TextKind event_text(ApiOutput *o, const TokenEvent *ev) {
  buf_clear(&o->delta);
  bool last = ev->finish != FINISH_NONE;
  if (o->info.chat) {
    HarmonyEventKind kind = HARMONY_EVENT_NONE;
    if (ev->has_token) kind = harmony_parser_push(&o->parser, o->info.t, ev->token_id, &o->delta);
    if (last) stream_decoder_flush(&o->parser.decoder, &o->delta);
    return chat_text_kind(o, kind, last);
  }
  if (ev->has_token && !tok_is_special(o->info.t, ev->token_id))
    stream_decoder_push(&o->decoder, o->info.t, ev->token_id, &o->delta);
  if (last) stream_decoder_flush(&o->decoder, &o->delta);
  return TEXT_CONTENT;
}

// A chat chunk's delta members for text of this kind.
static void chat_delta(ApiOutput *o, TextKind kind, Buf *out) {
  if (kind == TEXT_CALL_START) {
    api_tool_calls_start_delta(&o->calls, &o->parser, out);
  } else if (kind == TEXT_CALL) {
    api_tool_calls_args_delta(&o->calls, &o->delta, out);
  } else {
    buf_printf(out, "\"%s\":", kind == TEXT_REASONING ? "reasoning_content" : "content");
    api_output_json_string(out, o->delta.data, o->delta.len);
  }
}

// The finish_reason of a chat or completions answer.
static const char *answer_finish(const ApiOutput *o, FinishReason f) {
  return api_tool_calls_finish(&o->calls, f == FINISH_STOP, finish_name(f));
}

static void begin_chunk(const ApiOutput *o, Buf *out) {
  buf_append_str(out, "data: ");
  buf_append(out, o->prefix.data, o->prefix.len);
}

static void token_chunk(ApiOutput *o, const TokenEvent *ev, Buf *out) {
  TextKind kind = event_text(o, ev);
  begin_chunk(o, out);
  if (o->info.chat) {
    buf_append_str(out, "[{\"index\":0,\"delta\":{");
    chat_delta(o, kind, out);
    buf_append_str(out, "}");
  } else {
    buf_append_str(out, "[{\"index\":0,\"text\":");
    api_output_json_string(out, o->delta.data, o->delta.len);
  }
  if (o->info.return_token_ids) {  // beside delta / text, as vLLM puts it
    if (ev->has_token) buf_printf(out, ",\"token_ids\":[%u]", ev->token_id);
    else buf_append_str(out, ",\"token_ids\":[]");
  }
  const char *finish = answer_finish(o, ev->finish);
  buf_printf(out, ",\"logprobs\":null,\"finish_reason\":%s%s%s}]}\n\n", finish ? "\"" : "",
             finish ? finish : "null", finish ? "\"" : "");
}

// The body that tells a client its request was aborted (the server is stopping).
static cJSON *aborted_body(void) {
  ApiError e;
  api_error(&e, 503, NULL, "the request was aborted: the server is stopping");
  return api_error_body(&e);
}

static void stream_event(ApiOutput *o, const TokenEvent *ev, Buf *out) {
  if (ev->finish == FINISH_ABORT) {
    cJSON *body = aborted_body();
    char *text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    buf_printf(out, "data: %s\n\ndata: [DONE]\n\n", text);
    cJSON_free(text);
    return;
  }
  if (o->info.chat && !o->sent_role) {
    begin_chunk(o, out);
    buf_append_str(out,
                   "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
                   "\"logprobs\":null,\"finish_reason\":null}]}\n\n");
    o->sent_role = true;
  }
  token_chunk(o, ev, out);
  if (ev->finish == FINISH_NONE) return;
  if (o->info.include_usage) {
    begin_chunk(o, out);
    buf_printf(out,
               "[],\"usage\":{\"prompt_tokens\":%u,\"total_tokens\":%llu,"
               "\"completion_tokens\":%u}}\n\n",
               ev->num_prompt_tokens,
               (unsigned long long)ev->num_prompt_tokens + ev->num_output_tokens,
               ev->num_output_tokens);
  }
  buf_append_str(out, "data: [DONE]\n\n");
}

static cJSON *usage_json(const TokenEvent *ev) {
  cJSON *usage = cJSON_CreateObject();
  cJSON_AddNumberToObject(usage, "prompt_tokens", ev->num_prompt_tokens);
  cJSON_AddNumberToObject(usage, "total_tokens",
                          (double)ev->num_prompt_tokens + ev->num_output_tokens);
  cJSON_AddNumberToObject(usage, "completion_tokens", ev->num_output_tokens);
  return usage;
}

// The whole answer once the last event is in.
static cJSON *whole_body(ApiOutput *o, const TokenEvent *ev) {
  const ApiOutputInfo *info = &o->info;
  char id[48];
  snprintf(id, sizeof id, "%s-%llu", info->chat ? "chatcmpl" : "cmpl",
           (unsigned long long)info->request_id);
  cJSON *choice = cJSON_CreateObject();
  cJSON_AddNumberToObject(choice, "index", 0);
  const char *content = o->content.data ? o->content.data : "";
  if (info->chat) {
    cJSON *message = cJSON_AddObjectToObject(choice, "message");
    cJSON_AddStringToObject(message, "role", "assistant");
    if (o->calls.num_calls && !o->content.len)  // vLLM: no content beside the calls
      cJSON_AddNullToObject(message, "content");
    else
      cJSON_AddStringToObject(message, "content", content);
    if (o->reasoning.len)
      cJSON_AddStringToObject(message, "reasoning_content", o->reasoning.data);
    else
      cJSON_AddNullToObject(message, "reasoning_content");
    api_tool_calls_take(&o->calls, message);
  } else {
    cJSON_AddStringToObject(choice, "text", content);
  }
  if (info->return_token_ids) {
    cJSON *ids = cJSON_AddArrayToObject(choice, "token_ids");
    for (size_t i = 0; i < o->output_ids.len; i++)
      cJSON_AddItemToArray(ids, cJSON_CreateNumber(o->output_ids.data[i]));
  }
  cJSON_AddNullToObject(choice, "logprobs");
  cJSON_AddStringToObject(choice, "finish_reason", answer_finish(o, ev->finish));
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "id", id);
  cJSON_AddStringToObject(root, "object", info->chat ? "chat.completion" : "text_completion");
  cJSON_AddNumberToObject(root, "created", (double)info->created);
  cJSON_AddStringToObject(root, "model", info->model);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "choices"), choice);
  cJSON_AddItemToObject(root, "usage", usage_json(ev));
  return root;
}

unsigned api_output_event(ApiOutput *o, const TokenEvent *ev, Buf *out) {
  if (o->responses) return api_responses_output_event(o->responses, ev, out);
  if (o->info.stream) {
    stream_event(o, ev, out);
    return 200;
  }
  bool aborted = ev->finish == FINISH_ABORT;
  if (!aborted) {
    TextKind kind = event_text(o, ev);
    if (kind == TEXT_CONTENT || kind == TEXT_REASONING)
      buf_append(kind == TEXT_REASONING ? &o->reasoning : &o->content, o->delta.data,
                 o->delta.len);
    if (ev->has_token && o->info.return_token_ids) token_ids_push(&o->output_ids, ev->token_id);
  }
  if (ev->finish == FINISH_NONE) return 200;
  cJSON *body = aborted ? aborted_body() : whole_body(o, ev);
  char *text = cJSON_PrintUnformatted(body);
  cJSON_Delete(body);
  buf_append_str(out, text);
  cJSON_free(text);
  return aborted ? 503 : 200;
}
