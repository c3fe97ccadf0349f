// mock_server.c: mock-server's HTTP side on libmicrohttpd (internal epoll threads). A stream
// waiting for its next event is suspended, not slept on: its reader callback suspends the
// connection until the event is due and mock_waker.c resumes it then, so thousands of streams
// need no thread each. Owns the routes, the request states and the in-flight counters; the event
// plan and bytes are mock_stream.c's. Must not block an HTTP thread.
#include "bench/mock_server.h"

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/mock_stream.h"
#include "bench/mock_waker.h"
#include "bench/rng.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/clock.h"
#include "common/http_server.h"

enum { DEFAULT_MAX_TOKENS = 16, READ_BLOCK = 16 * 1024, STOP_GRACE_MS = 2000 };

struct MockServer {
  MockOptions o;
  char *model;
  char *model_json;  // the model as a JSON string, quotes included
  struct MHD_Daemon *daemon;
  uint16_t port;
  MockWaker waker;
  atomic_uint_fast64_t num_requests, num_errors, num_cut, num_error_events;
  atomic_uint in_flight, max_in_flight;
  atomic_uint num_live;  // MockRequests allocated
};

typedef struct {
  MockServer *server;
  struct MHD_Connection *conn;
  bool chat;
  bool answered;  // the body is complete and an answer was queued
  bool counted;   // counted in in_flight
  Buf body;       // the request body, as uploaded
  MockStream stream;
  Buf out;  // produced bytes not yet handed to MHD: [out_pos, out.len)
  size_t out_pos;
} MockRequest;

void mock_options_default(MockOptions *o) {
  *o = (MockOptions){.host = "127.0.0.1",
                     .model = "openai/gpt-oss-120b",
                     .ttft_ns = 50000000,
                     .itl_ns = 10000000,
                     .tokens_per_event = 1,
                     .error_status = 500,
                     .cut_after = -1,
                     .error_event_after = 2,
                     .num_threads = 1,
                     .receive_timeout_s = 10};
}

// ---- counters -------------------------------------------------------------------------------

static void count_arrival(MockRequest *r) {
  MockServer *s = r->server;
  r->counted = true;
  unsigned now_in = atomic_fetch_add(&s->in_flight, 1) + 1;
  unsigned max = atomic_load(&s->max_in_flight);
  while (now_in > max && !atomic_compare_exchange_weak(&s->max_in_flight, &max, now_in)) {
  }
}

// Called when the last byte is produced (before the client can have it) or the request ends.
static void count_departure(MockRequest *r) {
  if (!r->counted) return;
  r->counted = false;
  atomic_fetch_sub(&r->server->in_flight, 1);
}

// ---- answers --------------------------------------------------------------------------------

static enum MHD_Result respond_models(MockServer *s, struct MHD_Connection *conn) {
  cJSON *model = cJSON_CreateObject();
  cJSON_AddStringToObject(model, "id", s->model);
  cJSON_AddStringToObject(model, "object", "model");
  cJSON_AddNumberToObject(model, "created", 0);
  cJSON_AddStringToObject(model, "owned_by", "gptoss-bench-mock");
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "object", "list");
  cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "data"), model);
  return http_reply_json(conn, 200, root);
}

static enum MHD_Result respond_stats(MockServer *s, struct MHD_Connection *conn) {
  MockStats st;
  mock_server_stats(s, &st);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "num_requests", (double)st.num_requests);
  cJSON_AddNumberToObject(root, "num_errors", (double)st.num_errors);
  cJSON_AddNumberToObject(root, "num_cut", (double)st.num_cut);
  cJSON_AddNumberToObject(root, "num_error_events", (double)st.num_error_events);
  cJSON_AddNumberToObject(root, "in_flight", st.in_flight);
  cJSON_AddNumberToObject(root, "max_in_flight", st.max_in_flight);
  return http_reply_json(conn, 200, root);
}

// MHD asks for the next bytes of a stream: hand out what was produced, produce what is due, or
// suspend until the next event is.
static ssize_t read_stream(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  MockRequest *r = cls;
  MockStream *m = &r->stream;
  for (;;) {
    if (r->out_pos < r->out.len) {
      size_t n = r->out.len - r->out_pos < max ? r->out.len - r->out_pos : max;
      memcpy(buf, r->out.data + r->out_pos, n);
      r->out_pos += n;
      return (ssize_t)n;
    }
    buf_clear(&r->out);
    r->out_pos = 0;
    if (m->phase == MOCK_DONE) return MHD_CONTENT_READER_END_OF_STREAM;
    if (m->phase == MOCK_CUT) {
      atomic_fetch_add(&r->server->num_cut, 1);
      count_departure(r);
      return MHD_CONTENT_READER_END_WITH_ERROR;  // closes without the last chunk: a broken stream
    }
    int64_t now = clock_now_ns(), due = mock_stream_next_due(m);
    if (due > now)  // wait, or end the stream when the server is stopping
      return mock_waker_suspend(&r->server->waker, r->conn, due)
                 ? 0
                 : MHD_CONTENT_READER_END_WITH_ERROR;
    mock_stream_produce(m, now, &r->out);
    if (m->phase == MOCK_DONE) {
      count_departure(r);
      if (m->plan.error_event) atomic_fetch_add(&r->server->num_error_events, 1);
    }
  }
}

// Bytes of text in a JSON subtree (the prompt or the messages), for an estimated token count.
static size_t text_bytes(const cJSON *item) {
  if (cJSON_IsString(item)) return strlen(item->valuestring);
  size_t n = 0;
  for (const cJSON *c = item ? item->child : NULL; c; c = c->next) n += text_bytes(c);
  return n;
}

static bool draws_error(const MockServer *s, uint64_t number) {
  if (s->o.error_rate <= 0) return false;
  Rng rng;
  rng_seed(&rng, s->o.seed + number);
  return rng_double(&rng) < s->o.error_rate;
}

// Whether request number (0-based, by arrival) is the Nth, 2Nth, ... (every 0: never).
static bool every_nth(uint32_t every, uint64_t number) {
  return every && (number + 1) % every == 0;
}

// The stream a request asks for: --output-len, else its max_tokens (chat: max_completion_tokens
// first), else 16 tokens; a usage chunk if stream_options.include_usage; prompt tokens estimated
// as text bytes / 4; the server's timing.
static MockStreamPlan plan_for(const MockServer *s, const MockRequest *r, const cJSON *req) {
  const cJSON *limit = cJSON_GetObjectItemCaseSensitive(req, "max_tokens");
  if (r->chat && cJSON_GetObjectItemCaseSensitive(req, "max_completion_tokens"))
    limit = cJSON_GetObjectItemCaseSensitive(req, "max_completion_tokens");
  uint32_t num_tokens = DEFAULT_MAX_TOKENS;
  if (s->o.output_len)
    num_tokens = s->o.output_len;
  else if (cJSON_IsNumber(limit) && limit->valuedouble >= 0 && limit->valuedouble <= UINT32_MAX)
    num_tokens = (uint32_t)limit->valuedouble;
  const cJSON *options = cJSON_GetObjectItemCaseSensitive(req, "stream_options");
  const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(req, r->chat ? "messages" : "prompt");
  return (MockStreamPlan){
      .chat = r->chat,
      .include_usage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(options, "include_usage")),
      .num_tokens = num_tokens,
      .prompt_tokens = (uint32_t)((text_bytes(prompt) + 3) / 4),
      .tokens_per_event = s->o.tokens_per_event,
      .cut_after = s->o.cut_after,
      .error_after = s->o.error_event_after,
      .first_due_ns = clock_now_ns() + s->o.ttft_ns,
      .itl_ns = s->o.itl_ns,
      .model_json = s->model_json,
      .created = time(NULL),
  };
}

static enum MHD_Result answer_completion(MockServer *s, MockRequest *r) {
  cJSON *req = cJSON_ParseWithLength(r->body.data ? r->body.data : "", r->body.len);
  MockStreamPlan plan = plan_for(s, r, req);
  const cJSON *stream = cJSON_GetObjectItemCaseSensitive(req, "stream");
  bool is_object = cJSON_IsObject(req), streamed = cJSON_IsTrue(stream);
  cJSON_Delete(req);
  if (!is_object || !streamed) {
    count_departure(r);
    return http_reply_error(r->conn, 400, "BadRequestError",
                            is_object ? "mock-server answers only stream=true requests"
                                      : "the request body is not a JSON object",
                            NULL);
  }
  plan.number = atomic_fetch_add(&s->num_requests, 1);
  if (draws_error(s, plan.number)) {
    atomic_fetch_add(&s->num_errors, 1);
    count_departure(r);
    return http_reply_error(r->conn, (unsigned)s->o.error_status, "InternalServerError",
                            "mock-server: injected error", NULL);
  }
  plan.error_event = every_nth(s->o.error_event_every, plan.number);
  plan.unfinished = every_nth(s->o.unfinished_every, plan.number);
  mock_stream_init(&r->stream, &plan);
  struct MHD_Response *resp =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, READ_BLOCK, read_stream, r, NULL);
  MHD_add_response_header(resp, "Content-Type", "text/event-stream");
  MHD_add_response_header(resp, "Cache-Control", "no-cache");
  enum MHD_Result ret = MHD_queue_response(r->conn, 200, resp);
  MHD_destroy_response(resp);
  return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls) {
  (void)version;
  MockServer *s = cls;
  MockRequest *r = *con_cls;
  if (r) {  // a completion request's body, then its end
    if (*upload_size) {
      buf_append(&r->body, upload_data, *upload_size);
      *upload_size = 0;
      return MHD_YES;
    }
    if (r->answered) return MHD_YES;
    r->answered = true;
    return answer_completion(s, r);
  }
  bool get = strcmp(method, "GET") == 0;
  bool chat = strcmp(url, "/v1/chat/completions") == 0;
  if (chat || strcmp(url, "/v1/completions") == 0) {
    if (strcmp(method, "POST") != 0)
      return http_reply_error(conn, 405, "MethodNotAllowed", "use POST", NULL);
    r = xcalloc(1, sizeof *r);
    *r = (MockRequest){.server = s, .conn = conn, .chat = chat};
    atomic_fetch_add(&s->num_live, 1);
    count_arrival(r);
    *con_cls = r;
    return MHD_YES;
  }
  if (get && strcmp(url, "/health") == 0) return http_reply(conn, 200, "text/plain", "", 0);
  if (get && strcmp(url, "/v1/models") == 0) return respond_models(s, conn);
  if (get && strcmp(url, "/mock/stats") == 0) return respond_stats(s, conn);
  return http_reply_error(conn, 404, "NotFoundError", "mock-server has no such route", NULL);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode why) {
  (void)conn, (void)why;
  MockServer *s = cls;
  MockRequest *r = *con_cls;
  if (!r) return;
  count_departure(r);
  buf_free(&r->body);
  buf_free(&r->out);
  mock_stream_free(&r->stream);
  free(r);
  *con_cls = NULL;
  atomic_fetch_sub(&s->num_live, 1);
}

// ---- start / stop ---------------------------------------------------------------------------

static bool check_options(const MockOptions *o, char *err, size_t err_size) {
  const char *bad = !o->host || !o->model                    ? "a host and a model are needed"
                    : o->ttft_ns < 0 || o->itl_ns < 0        ? "TTFT and ITL must not be negative"
                    : o->tokens_per_event == 0               ? "tokens per event must be >= 1"
                    : o->error_rate < 0 || o->error_rate > 1 ? "the error rate must be in [0, 1]"
                    : o->error_status < 100 || o->error_status > 599
                        ? "the error status must be an HTTP status (100-599)"
                    : o->num_threads == 0 ? "at least one thread is needed"
                                          : NULL;
  if (bad) snprintf(err, err_size, "mock-server: %s", bad);
  return bad == NULL;
}

static bool start_daemon(MockServer *s, char *err, size_t err_size) {
  // libmicrohttpd's timeout closes a connection that moves no byte for that long: a stalled
  // request, an idle keep-alive connection, a client that stops reading its answer. A stream
  // waiting for its next event is suspended, and suspended connections are not timed out, so a
  // TTFT or ITL longer than the timeout is served whole. (A request dripping one byte at a time
  // is not cut: the engine's guard does that; mock-server serves tests on loopback.)
  const struct MHD_OptionItem timeout[] = {
      {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)s->o.receive_timeout_s, NULL},
      {MHD_OPTION_END, 0, NULL}};
  HttpListenOptions listen = {.who = "mock-server",
                              .host = s->o.host,
                              .port = s->o.port,
                              .num_threads = s->o.num_threads,
                              .on_request = on_request,
                              .on_completed = on_completed,
                              .cls = s,
                              .extra_options = timeout};
  s->daemon = http_listen(&listen, &s->port, err, err_size);
  return s->daemon != NULL;
}

MockServer *mock_server_start(const MockOptions *o, char *err, size_t err_size) {
  if (!check_options(o, err, err_size)) return NULL;
  MockServer *s = xcalloc(1, sizeof *s);
  s->o = *o;
  s->model = xstrdup(o->model);
  cJSON *name = cJSON_CreateString(o->model);
  s->model_json = cJSON_PrintUnformatted(name);
  cJSON_Delete(name);
  bool waker_ok = mock_waker_start(&s->waker);
  if (!waker_ok) snprintf(err, err_size, "mock-server: cannot start the timer thread");
  if (!waker_ok || !start_daemon(s, err, err_size)) {
    mock_server_stop(s);
    return NULL;
  }
  return s;
}

uint16_t mock_server_port(const MockServer *s) { return s->port; }

void mock_server_stats(const MockServer *s, MockStats *out) {
  MockServer *m = (MockServer *)s;  // atomics are read, not changed
  *out = (MockStats){.num_requests = atomic_load(&m->num_requests),
                     .num_errors = atomic_load(&m->num_errors),
                     .num_cut = atomic_load(&m->num_cut),
                     .num_error_events = atomic_load(&m->num_error_events),
                     .in_flight = atomic_load(&m->in_flight),
                     .max_in_flight = atomic_load(&m->max_in_flight)};
}

void mock_server_stop(MockServer *s) {
  // Suspended streams are resumed and, refused a new suspension, end; wait (bounded) for their
  // requests to be freed before MHD is stopped.
  mock_waker_release_all(&s->waker);
  for (int i = 0; s->daemon && i < STOP_GRACE_MS && atomic_load(&s->num_live); i++)
    clock_sleep_until_ns(clock_now_ns() + 1000000);
  mock_waker_free(&s->waker);
  if (s->daemon) MHD_stop_daemon(s->daemon);
  free(s->model);
  cJSON_free(s->model_json);
  free(s);
}
