// api_output.c: chunk and body writers. Stream chunks are written from a per-request prefix and
// fixed ASCII with the text JSON-escaped in place, so a token costs no allocation once the
// buffers have grown; whole answers (one per request) are built with cJSON. Must not block.
#include "api/api_output.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "api/api_error.h"
#include "api/api_json.h"
#include "api/api_responses_output.h"

void api_output_init(ApiOutput *o, const ApiOutputInfo *info) {
  *o = (ApiOutput){.info = *info};
  harmony_parser_init(&o->parser);
  api_logprobs_init(&o->logprobs, info->chat, info->num_top_logprobs, info->t);
  api_stop_init(&o->stop, info->stop, info->num_stop, info->include_stop_str_in_output);
  uint64_t seed = info->request_id ^ ((uint64_t)info->created << 20) ^ (uint64_t)(uintptr_t)o;
  api_tool_calls_init(&o->calls, seed, info->chat && !info->stream && !info->responses);
  if (info->responses) {
    o->responses = api_responses_output_new(info->responses, info, seed);
    return;
  }
  if (info->echo_ids) {
    TokenIds plain = {0};  // the prompt's text, special tokens left out as in the output
    for (size_t i = 0; i < info->num_echo_ids; i++)
      if (!tok_is_special(info->t, info->echo_ids[i])) token_ids_push(&plain, info->echo_ids[i]);
    stream_decoder_decode_all(info->t, plain.data, plain.len, &o->echo);
    token_ids_free(&plain);
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
  api_logprobs_free(&o->logprobs);
  api_stop_free(&o->stop);
  buf_free(&o->stop_text);
  buf_free(&o->echo);
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

// The text ev adds, into o->delta, and where it belongs. A token that finished a request with
// FINISH_STOP adds no text (vLLM leaves a stop token's text out); a special one still reaches
// the harmony parser, whose state (a tool call ended by <|call|>) it completes.
static TextKind event_text(ApiOutput *o, const TokenEvent *ev) {
  buf_clear(&o->delta);
  bool last = ev->finish != FINISH_NONE;
  bool shown = ev->has_token && ev->finish != FINISH_STOP;
  if (o->info.chat) {
    HarmonyEventKind kind = HARMONY_EVENT_NONE;
    if (shown || (ev->has_token && tok_is_special(o->info.t, ev->token_id)))
      kind = harmony_parser_push(&o->parser, o->info.t, ev->token_id, &o->delta);
    if (last) stream_decoder_flush(&o->parser.decoder, &o->delta);
    return chat_text_kind(o, kind, last);
  }
  if (shown && !tok_is_special(o->info.t, ev->token_id))
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
    api_json_string(out, o->delta.data, o->delta.len);
  }
}

// The finish_reason of a chat or completions answer.
static const char *answer_finish(const ApiOutput *o, FinishReason f) {
  return api_tool_calls_finish(&o->calls, f == FINISH_STOP, finish_name(f));
}

// event_text, then the stop strings on the answer's text (completions' text, chat's content,
// never a tool call's arguments):
// o->delta keeps what can be shown now; a match ends the choice (o->done, FINISH_STOP).
// With echo, the first event's text starts with the prompt's.
static TextKind choice_text(ApiOutput *o, const TokenEvent *ev) {
  TextKind kind = event_text(o, ev);
  if (kind != TEXT_CONTENT || (!o->stop.num && !o->echo.len)) return kind;
  buf_clear(&o->stop_text);
  buf_append(&o->stop_text, o->echo.data, o->echo.len);
  buf_free(&o->echo);
  if (!o->stop.num) {
    buf_append(&o->stop_text, o->delta.data, o->delta.len);
  } else if (api_stop_filter(&o->stop, o->delta.data, o->delta.len, &o->stop_text)) {
    o->done = true;
    o->finish = FINISH_STOP;
  } else if (ev->finish != FINISH_NONE) {
    api_stop_flush(&o->stop, &o->stop_text);
  }
  Buf shown = o->stop_text;
  o->stop_text = o->delta;
  o->delta = shown;
  return TEXT_CONTENT;
}

// vLLM's stop_reason of a finished choice: the stop string, the id of a stop token other than
// <|return|> (the tokenizer's eos), else null.
static void stop_reason_json(const ApiOutput *o, Buf *out) {
  if (o->stop.matched >= 0) {
    const char *str = o->stop.strings[o->stop.matched];
    api_json_string(out, str, strlen(str));
  } else if (o->finish == FINISH_STOP && o->last_token_id != TOK_RETURN) {
    buf_printf(out, "%u", o->last_token_id);
  } else {
    buf_append_str(out, "null");
  }
}

// A chunk's finish_reason, and stop_reason once the choice is done.
static void finish_fields(const ApiOutput *o, Buf *out) {
  const char *finish = o->done ? answer_finish(o, o->finish) : NULL;
  buf_printf(out, ",\"finish_reason\":%s%s%s", finish ? "\"" : "", finish ? finish : "null",
             finish ? "\"" : "");
  if (!finish) return;
  buf_append_str(out, ",\"stop_reason\":");
  stop_reason_json(o, out);
}

static void begin_chunk(const ApiOutput *o, Buf *out) {
  buf_append_str(out, "data: ");
  buf_append(out, o->prefix.data, o->prefix.len);
}

// The usage written after every chunk's choices with continuous_usage_stats (this choice's
// tokens so far).
static void usage_fields(Buf *out, uint64_t num_prompt_tokens, uint64_t num_output_tokens) {
  buf_printf(out,
             "\"usage\":{\"prompt_tokens\":%llu,\"total_tokens\":%llu,"
             "\"completion_tokens\":%llu}",
             (unsigned long long)num_prompt_tokens,
             (unsigned long long)(num_prompt_tokens + num_output_tokens),
             (unsigned long long)num_output_tokens);
}

static void continuous_usage(const ApiOutput *o, uint64_t num_prompt_tokens,
                             uint64_t num_output_tokens, Buf *out) {
  if (!o->info.continuous_usage) return;
  buf_append_byte(out, ',');
  usage_fields(out, num_prompt_tokens, num_output_tokens);
}

static void token_chunk(ApiOutput *o, const TokenEvent *ev, Buf *out) {
  TextKind kind = choice_text(o, ev);
  begin_chunk(o, out);
  if (o->info.chat) {
    buf_printf(out, "[{\"index\":%d,\"delta\":{", o->info.index);
    chat_delta(o, kind, out);
    buf_append_str(out, "}");
  } else {
    buf_printf(out, "[{\"index\":%d,\"text\":", o->info.index);
    api_json_string(out, o->delta.data, o->delta.len);
  }
  if (o->info.return_token_ids) {  // beside delta / text, as vLLM puts it
    if (ev->has_token) buf_printf(out, ",\"token_ids\":[%u]", ev->token_id);
    else buf_append_str(out, ",\"token_ids\":[]");
  }
  buf_append_str(out, ",\"logprobs\":");
  if (o->info.logprobs) api_logprobs_chunk(&o->logprobs, ev, out);
  else buf_append_str(out, "null");
  finish_fields(o, out);
  buf_append_str(out, "}]");
  continuous_usage(o, ev->num_prompt_tokens, ev->num_output_tokens, out);
  buf_append_str(out, "}\n\n");
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
    buf_printf(out,
               "[{\"index\":%d,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
               "\"logprobs\":null,\"finish_reason\":null}]",
               o->info.index);
    continuous_usage(o, ev->num_prompt_tokens, 0, out);
    buf_append_str(out, "}\n\n");
    o->sent_role = true;
  }
  token_chunk(o, ev, out);
  if (!o->done || o->info.one_of_many) return;
  api_output_stream_end(o, ev->num_prompt_tokens, ev->num_output_tokens, out);
}

void api_output_stream_end(const ApiOutput *o, uint64_t num_prompt_tokens,
                           uint64_t num_output_tokens, Buf *out) {
  if (o->info.include_usage) {
    begin_chunk(o, out);
    buf_append_str(out, "[],");
    usage_fields(out, num_prompt_tokens, num_output_tokens);
    buf_append_str(out, "}\n\n");
  }
  buf_append_str(out, "data: [DONE]\n\n");
}

static cJSON *usage_json(uint64_t num_prompt_tokens, uint64_t num_output_tokens) {
  cJSON *usage = cJSON_CreateObject();
  cJSON_AddNumberToObject(usage, "prompt_tokens", (double)num_prompt_tokens);
  cJSON_AddNumberToObject(usage, "total_tokens", (double)(num_prompt_tokens + num_output_tokens));
  cJSON_AddNumberToObject(usage, "completion_tokens", (double)num_output_tokens);
  return usage;
}

// One choice of a whole answer, once its last event is in.
static cJSON *choice_json(const ApiOutput *o) {
  const ApiOutputInfo *info = &o->info;
  cJSON *choice = cJSON_CreateObject();
  cJSON_AddNumberToObject(choice, "index", info->index);
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
    api_tool_calls_add_to(&o->calls, message);
  } else {
    cJSON_AddStringToObject(choice, "text", content);
  }
  if (info->return_token_ids) {
    cJSON *ids = cJSON_AddArrayToObject(choice, "token_ids");
    for (size_t i = 0; i < o->output_ids.len; i++)
      cJSON_AddItemToArray(ids, cJSON_CreateNumber(o->output_ids.data[i]));
  }
  if (info->logprobs) {
    Buf json = {0};
    api_logprobs_whole(&o->logprobs, &json);
    cJSON_AddItemToObject(choice, "logprobs", cJSON_CreateRaw(json.data));
    buf_free(&json);
  } else {
    cJSON_AddNullToObject(choice, "logprobs");
  }
  cJSON_AddStringToObject(choice, "finish_reason", answer_finish(o, o->finish));
  Buf stop_reason = {0};
  stop_reason_json(o, &stop_reason);
  cJSON_AddItemToObject(choice, "stop_reason", cJSON_CreateRaw(stop_reason.data));
  buf_free(&stop_reason);
  return choice;
}

// The whole answer: choices [num_choices] in index order, usage summed by the caller.
static cJSON *whole_body(const ApiOutput *const *choices, size_t num_choices,
                         uint64_t num_prompt_tokens, uint64_t num_output_tokens) {
  const ApiOutputInfo *info = &choices[0]->info;
  char id[48];
  snprintf(id, sizeof id, "%s-%llu", info->chat ? "chatcmpl" : "cmpl",
           (unsigned long long)info->request_id);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "id", id);
  cJSON_AddStringToObject(root, "object", info->chat ? "chat.completion" : "text_completion");
  cJSON_AddNumberToObject(root, "created", (double)info->created);
  cJSON_AddStringToObject(root, "model", info->model);
  cJSON *array = cJSON_AddArrayToObject(root, "choices");
  for (size_t i = 0; i < num_choices; i++) cJSON_AddItemToArray(array, choice_json(choices[i]));
  cJSON_AddItemToObject(root, "usage", usage_json(num_prompt_tokens, num_output_tokens));
  return root;
}

static void append_json(Buf *out, cJSON *body) {
  char *text = cJSON_PrintUnformatted(body);
  cJSON_Delete(body);
  buf_append_str(out, text);
  cJSON_free(text);
}

void api_output_whole(const ApiOutput *const *choices, size_t num_choices,
                      uint64_t num_prompt_tokens, uint64_t num_output_tokens, Buf *out) {
  append_json(out, whole_body(choices, num_choices, num_prompt_tokens, num_output_tokens));
}

static unsigned aborted_whole(Buf *out) {
  append_json(out, aborted_body());
  return 503;
}

unsigned api_output_event(ApiOutput *o, const TokenEvent *ev, Buf *out) {
  if (o->done) return 200;  // a stop string ended it: the rest is dropped
  if (ev->finish != FINISH_NONE) {
    o->done = true;
    o->finish = ev->finish;
  }
  if (ev->has_token) o->last_token_id = ev->token_id;
  if (o->responses) return api_responses_output_event(o->responses, ev, out);
  if (o->info.stream) {
    stream_event(o, ev, out);
    return 200;
  }
  bool aborted = ev->finish == FINISH_ABORT;
  if (!aborted) {
    TextKind kind = choice_text(o, ev);
    if (kind == TEXT_CONTENT || kind == TEXT_REASONING)
      buf_append(kind == TEXT_REASONING ? &o->reasoning : &o->content, o->delta.data,
                 o->delta.len);
    if (ev->has_token && o->info.return_token_ids) token_ids_push(&o->output_ids, ev->token_id);
    if (o->info.logprobs) api_logprobs_add(&o->logprobs, ev);
  }
  if (!o->done || (o->info.one_of_many && !aborted)) return 200;
  if (aborted) return aborted_whole(out);
  const ApiOutput *self = o;
  api_output_whole(&self, 1, ev->num_prompt_tokens, ev->num_output_tokens, out);
  return 200;
}
