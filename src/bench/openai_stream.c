// openai_stream.c: SSE events -> RequestResult fields, following vLLM v0.10.2's
// async_request_openai_completions / _chat_completions: which events move the clock, where the
// text is, when a stream counts as failed (plus one rule of ours: a server's error event fails
// the stream, where vLLM ignores it, and so does one that ends without [DONE] or a
// finish_reason). Also reads mock-server's ": t=<ns>" send stamps to measure the client's
// receive lag. Must not look at HTTP statuses or transport errors.
#include "bench/openai_stream.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

static const char NO_CHUNK_ERROR[] =
    "Never received a valid chunk to calculate TTFT.This response will be marked as failed!";

void oai_stream_begin(OaiStream *s, EndpointType endpoint, RequestResult *out,
                      size_t expected_events, JsonScratch *json, LogHist *stamp_lags) {
  s->endpoint = endpoint;
  s->json = json;
  s->stamp_lags = stamp_lags;
  s->out = out;
  s->itl_cap = expected_events;
  out->itl_ns = expected_events ? xmalloc(expected_events * sizeof *out->itl_ns) : NULL;
  out->num_itl = 0;
  s->last_ns = out->start_ns;
  s->got_choices = false;
  s->got_end = false;
  s->num_events = 0;
  sse_reset(&s->sse);
  buf_reserve(&s->text, expected_events * 4);  // about 4 bytes per token
  buf_clear(&s->text);
  free(s->error);
  s->error = NULL;
  s->stamp_ns = 0;
}

static void add_itl(OaiStream *s, int64_t gap_ns) {
  RequestResult *r = s->out;
  if (r->num_itl == s->itl_cap) {
    s->itl_cap = s->itl_cap ? 2 * s->itl_cap : 16;
    r->itl_ns = xrealloc(r->itl_ns, s->itl_cap * sizeof *r->itl_ns);
  }
  r->itl_ns[r->num_itl++] = gap_ns;
}

// The text delta of the first choice: choices[0].text, or choices[0].delta.content for chat.
static const char *choice_text(EndpointType endpoint, const cJSON *choice) {
  if (endpoint == ENDPOINT_CHAT) choice = cJSON_GetObjectItemCaseSensitive(choice, "delta");
  const cJSON *text =
      cJSON_GetObjectItemCaseSensitive(choice, endpoint == ENDPOINT_CHAT ? "content" : "text");
  return cJSON_IsString(text) ? text->valuestring : NULL;
}

static void take_stamp(OaiStream *s, int64_t now_ns) {
  if (!s->stamp_ns) return;
  loghist_add(s->stamp_lags, now_ns - s->stamp_ns);
  s->stamp_ns = 0;
}

// The error object of a server's error event, or NULL when root is an ordinary chunk: a
// top-level "error" that is an object or a string (llama.cpp's llama-server, vLLM, most
// OpenAI-compatible servers), or the event itself when it says "object": "error" (older vLLM).
static const cJSON *server_error_of(const cJSON *root) {
  const cJSON *error = cJSON_GetObjectItemCaseSensitive(root, "error");
  if (cJSON_IsObject(error) || cJSON_IsString(error)) return error;
  const cJSON *object = cJSON_GetObjectItemCaseSensitive(root, "object");
  return cJSON_IsString(object) && strcmp(object->valuestring, "error") == 0 ? root : NULL;
}

// s->error from an error event: its message (else the event's text), then its code and type.
static void fail_with_error_event(OaiStream *s, const cJSON *error, const char *data) {
  const cJSON *message =
      cJSON_IsString(error) ? error : cJSON_GetObjectItemCaseSensitive(error, "message");
  const cJSON *code = cJSON_GetObjectItemCaseSensitive(error, "code");
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(error, "type");
  Buf details = {0};  // "code 500, type server_error"
  if (cJSON_IsNumber(code))
    buf_printf(&details, "code %.15g", code->valuedouble);
  else if (cJSON_IsString(code))
    buf_printf(&details, "code %.100s", code->valuestring);
  if (cJSON_IsString(type))
    buf_printf(&details, "%stype %.100s", details.len ? ", " : "", type->valuestring);
  Buf msg = {0};
  buf_printf(&msg, "stream error event after %zu events: %.1000s%s%s%s",
             s->out->num_itl + s->got_choices,
             cJSON_IsString(message) ? message->valuestring : data, details.len ? " (" : "",
             details.len ? details.data : "", details.len ? ")" : "");
  buf_free(&details);
  s->error = msg.data;
}

static bool handle_data(OaiStream *s, const char *data, size_t len, int64_t now_ns) {
  take_stamp(s, now_ns);
  s->num_events++;
  if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
    s->got_end = true;
    return true;
  }
  cJSON *root = json_scratch_parse(s->json, data, len);
  const cJSON *error = cJSON_IsObject(root) ? server_error_of(root) : NULL;
  if (error) {
    fail_with_error_event(s, error, data);
  } else if (!cJSON_IsObject(root)) {
    Buf msg = {0};
    buf_printf(&msg, "malformed SSE event (not a JSON object): %.200s", data);
    s->error = msg.data;
  }
  if (s->error) {  // the stream is failed: read no further
    json_scratch_release(s->json, root);
    return false;
  }
  RequestResult *r = s->out;
  const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
  if (cJSON_IsArray(choices) && choices->child) {
    if (!s->got_choices) {
      r->ttft_ns = now_ns - r->start_ns;
      s->got_choices = true;
    } else {
      add_itl(s, now_ns - s->last_ns);
    }
    const char *text = choice_text(s->endpoint, choices->child);
    s->got_end |= cJSON_IsString(cJSON_GetObjectItemCaseSensitive(choices->child, "finish_reason"));
    if (text) buf_append_str(&s->text, text);
    s->last_ns = now_ns;
  } else {
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
    const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens");
    if (cJSON_IsNumber(tokens) && tokens->valuedouble >= 0)
      r->output_tokens = (uint32_t)tokens->valuedouble;
  }
  if (s->endpoint == ENDPOINT_CHAT) s->last_ns = now_ns;  // chat: every event, usage included
  json_scratch_release(s->json, root);
  return true;
}

static bool drain(OaiStream *s, int64_t now_ns) {
  SseEvent ev;
  while (sse_next(&s->sse, &ev)) {
    if (ev.kind == SSE_COMMENT) {
      if (strncmp(ev.text, "t=", 2) == 0) s->stamp_ns = strtoll(ev.text + 2, NULL, 10);
    } else if (!handle_data(s, ev.text, ev.len, now_ns)) {
      return false;
    }
  }
  return true;
}

bool oai_stream_feed(OaiStream *s, const char *bytes, size_t n, int64_t now_ns) {
  if (s->error) return false;
  sse_feed(&s->sse, bytes, n);
  return drain(s, now_ns);
}

void oai_stream_end(OaiStream *s, bool complete, int64_t now_ns) {
  RequestResult *r = s->out;
  if (complete && !s->error) {
    sse_finish(&s->sse);
    drain(s, now_ns);
  }
  r->latency_ns = s->last_ns - r->start_ns;
  r->generated_text = xstrdup(s->text.data ? s->text.data : "");
  if (r->num_itl == 0) {
    free(r->itl_ns);
    r->itl_ns = NULL;
  } else if (r->num_itl < s->itl_cap) {
    r->itl_ns = xrealloc(r->itl_ns, r->num_itl * sizeof *r->itl_ns);
  }
  r->success = false;
  free(r->error);
  if (s->error) {
    r->failure = FAILURE_STREAM;
    r->error = xstrdup(s->error);
  } else if (s->endpoint == ENDPOINT_COMPLETIONS && !s->got_choices) {
    r->failure = FAILURE_STREAM;
    r->error = xstrdup(NO_CHUNK_ERROR);
  } else if (!s->got_end) {  // cut short by the server, however cleanly it closed the body
    Buf msg = {0};
    buf_printf(&msg, "stream ended without [DONE] or a finish_reason after %zu events",
               s->num_events);
    r->failure = FAILURE_STREAM;
    r->error = msg.data;
  } else {
    r->success = true;
    r->failure = FAILURE_NONE;
    r->error = NULL;
  }
  s->out = NULL;
}

void oai_stream_free(OaiStream *s) {
  sse_free(&s->sse);
  buf_free(&s->text);
  free(s->error);
  *s = (OaiStream){0};
}
