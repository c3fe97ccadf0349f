// api_server.c: the server's lifecycle and routing on libmicrohttpd: one internal epoll thread
// serves every connection; streams wait suspended (api_dispatch.c resumes them), so thousands of
// streams need no thread each. Owns the routes, the API key check (constant time, on /v1/* as
// vLLM does), the body size limit and per-call state; large bodies are prepared on the prep
// worker (api_prep.h), late or idle connections cut by the guard (api_guard.h), which also
// watches pending answers for hang-ups (a half-closed client's whole answer is probed with an
// interim 100 Continue). /tokenize and /detokenize are answered here (api_tokenize.h), without
// the engine. Must not block an HTTP thread or exit on client input.
#include "api/api.h"

#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api/api_dispatch.h"
#include "api/api_guard.h"
#include "api/api_metrics.h"
#include "api/api_models.h"
#include "api/api_prep.h"
#include "api/api_request.h"
#include "api/api_responses_request.h"
#include "api/api_tokenize.h"
#include "common/check.h"
#include "common/clock.h"
#include "common/http_server.h"

enum {
  DEFAULT_MAX_BODY = 8 << 20,
  READ_BLOCK = 16 * 1024,
  ABORT_GRACE_MS = 3000,    // at stop: for aborted requests' last bytes to go out
  RELEASE_GRACE_MS = 1000,  // then for connections ended by force
  RECEIVE_MIN_RATE = 500,   // body bytes a second that earn 1 s more (Apache's mod_reqtimeout)
};

struct ApiServer {
  ApiOptions o;  // strings owned
  const Tokenizer *t;
  ApiHub hub;
  ApiPrep prep;
  ApiGuard guard;
  struct MHD_Daemon *daemon;
  uint16_t port;
  unsigned char key_digest[32];  // sha256("Bearer <api key>")
  int64_t created;               // start time (unix seconds) for /v1/models
  uint64_t seed_base;            // default seeds: seed_base mixed with a request counter
  atomic_uint_fast64_t num_calls;
  atomic_uint num_live;  // ApiCalls allocated
};

// One request with a body (completions, chat, responses, /tokenize, /detokenize) on its
// connection.
typedef struct {
  ApiPrepJob job;  // the prep worker's view of the call (job.conn: the connection)
  ApiServer *server;
  bool chat;
  bool responses;            // POST /v1/responses
  ApiTextRoute text_route;  // /tokenize or /detokenize: answered here, without the engine
  cJSON *reply;             // their answer, once prepared
  ApiError error;           // status != 0: answer this once the body is in
  Buf body;
  bool prepared;      // parsed and submitted (or refused: then error says why)
  bool streamed;      // the submitted request is answered as a stream
  bool watched;       // the guard watches for the client's hang-up
  bool http11;        // the request is HTTP/1.1 (it may be sent an interim 1xx answer)
  ApiStream *stream;  // once submitted
} ApiCall;

void api_options_default(ApiOptions *o) {
  *o = (ApiOptions){.host = "127.0.0.1",
                    .port = 8000,
                    .max_body_bytes = DEFAULT_MAX_BODY,
                    .receive_timeout_s = 10,
                    .idle_timeout_s = 60};
}

// ---- answers --------------------------------------------------------------------------------

static enum MHD_Result reply_error(struct MHD_Connection *conn, const ApiError *e) {
  return http_reply_json(conn, e->status, api_error_body(e));
}

// GET /v1/models and /v1/models/{id}.
static enum MHD_Result reply_models(ApiServer *s, struct MHD_Connection *conn, const char *url) {
  ApiModelInfo m = {
      .id = s->o.served_model_name, .created = s->created, .max_model_len = s->o.max_model_len};
  if (strcmp(url, "/v1/models") == 0) return http_reply_json(conn, 200, api_models_list(&m));
  ApiError e;
  cJSON *model = api_models_get(&m, url + strlen("/v1/models/"), &e);
  return model ? http_reply_json(conn, 200, model) : reply_error(conn, &e);
}

static enum MHD_Result reply_metrics(ApiServer *s, struct MHD_Connection *conn) {
  EngineStats st;
  s->hub.engine.stats(s->hub.engine.engine, &st);
  ApiHttpStats http = {.num_connections_cut = api_guard_num_cut(&s->guard),
                       .num_hangups = api_guard_num_hangups(&s->guard)};
  ApiLatencyStats lat;
  api_latency_read(&s->hub.latency, &lat);
  Buf text = {0};
  api_metrics_text(&st, &lat, &http, s->o.served_model_name, &text);
  enum MHD_Result ret =
      http_reply(conn, 200, "text/plain; version=0.0.4; charset=utf-8", text.data, text.len);
  buf_free(&text);
  return ret;
}

static ssize_t read_stream(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  ApiCall *c = cls;
  return api_hub_read(&c->server->hub, c->stream, buf, max);
}

static enum MHD_Result reply_stream(ApiCall *c, struct MHD_Connection *conn) {
  struct MHD_Response *resp =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, READ_BLOCK, read_stream, c, NULL);
  MHD_add_response_header(resp, "Content-Type", "text/event-stream; charset=utf-8");
  MHD_add_response_header(resp, "Cache-Control", "no-cache");
  enum MHD_Result ret = MHD_queue_response(conn, 200, resp);
  MHD_destroy_response(resp);
  return ret;
}

// A whole answer, or (suspended) nothing yet.
static enum MHD_Result reply_when_finished(ApiCall *c, struct MHD_Connection *conn) {
  ApiStream *st = c->stream;
  if (!api_hub_answer_ready(&c->server->hub, st)) return MHD_YES;
  if (!st->finished) {
    ApiError e;
    api_error(&e, 503, NULL, "the server is stopping");
    return reply_error(conn, &e);
  }
  return http_reply(conn, st->status, "application/json", st->bytes.data, st->bytes.len);
}

// The body is in: parse and submit (on the HTTP thread or the prep worker). Sets c->stream, or
// c->error.
static void prepare(ApiServer *s, ApiCall *c) {
  c->prepared = true;
  uint64_t n = atomic_fetch_add(&s->num_calls, 1);
  ApiRequestContext ctx = {.model = s->o.served_model_name,
                           .t = s->t,
                           .max_model_len = s->o.max_model_len,
                           .default_seed = s->seed_base ^ (n * 0x9e3779b97f4a7c15ull),
                           .current_date = s->o.current_date};
  if (c->text_route) {
    c->reply = api_tokenize_answer(c->text_route, &ctx, c->body.data, c->body.len, &c->error);
    buf_free(&c->body);
    return;
  }
  ApiRequest r;
  ApiResponsesInfo responses = {0};
  bool ok = c->responses
                ? api_responses_parse(&r, &responses, &ctx, c->body.data, c->body.len, &c->error)
                : api_request_parse(&r, &ctx, c->chat, c->body.data, c->body.len, &c->error);
  buf_free(&c->body);
  if (!ok) return;
  ApiOutputInfo info = {.chat = r.chat,
                        .stream = r.stream,
                        .include_usage = r.include_usage,
                        .continuous_usage = r.continuous_usage,
                        .echo_ids = r.echo ? r.prompt.data : NULL,
                        .return_token_ids = r.return_token_ids,
                        .logprobs = r.params.logprobs,
                        .num_top_logprobs = r.params.num_top_logprobs,
                        .stop = (const char *const *)r.stop,
                        .num_stop = r.num_stop,
                        .include_stop_str_in_output = r.include_stop_str_in_output,
                        .created = (int64_t)time(NULL),
                        .model = s->o.served_model_name,
                        .t = s->t,
                        .responses = c->responses ? &responses : NULL};
  c->streamed = info.stream;
  EngineRequestParams params[API_MAX_CHOICES];
  size_t num_choices = r.num_prompts * (size_t)r.n;
  for (size_t k = 0; k < num_choices; k++) params[k] = api_request_choice(&r, k);
  c->stream = api_hub_submit(&s->hub, params, (int)num_choices, r.n, info, c->job.conn,
                             &c->error);
  api_request_free(&r);
  cJSON_Delete(responses.echo);
}

static void prepare_job(ApiPrepJob *job, bool cancelled) {
  ApiCall *c = (ApiCall *)job;
  if (!cancelled) {
    prepare(c->server, c);
    return;
  }
  c->prepared = true;
  api_error(&c->error, 503, NULL, "the server is stopping");
}

// The watchdog saw the client leave while its answer was pending: abort the request (its events
// then end the answer, whose bytes go nowhere, and libmicrohttpd closes the connection).
static void on_hangup(void *arg) {
  ApiCall *c = arg;
  api_hub_abort(&c->server->hub, c->stream);
}

// The client has ended its sending (a half-close, or a close that looks the same) while a whole
// answer is pending: an interim "100 Continue" goes out (RFC 9110 15.2: an HTTP/1.1 client must
// accept an unexpected 1xx; a half-closed one then reads its answer), written under the hub's
// lock while the connection is suspended, so libmicrohttpd writes nothing at the same time. A
// client that is gone answers it with a reset, which the guard takes as the hang-up. A stream
// needs no probe (its next token is one), nor HTTP/1.0 (no 1xx allowed: such a close shows when
// the answer is written). True once done; false to be asked again.
static bool probe_hangup(void *arg, int fd) {
  static const char interim[] = "HTTP/1.1 100 Continue\r\n\r\n";
  ApiCall *c = arg;
  if (c->streamed || !c->http11) return true;
  ApiHub *h = &c->server->hub;
  pthread_mutex_lock(&h->mu);
  bool idle = c->stream->suspended;
  if (idle) (void)!send(fd, interim, sizeof interim - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  pthread_mutex_unlock(&h->mu);
  return idle;
}

// The answer to a prepared call: a stream at once, a whole answer when finished.
static enum MHD_Result answer(ApiCall *c, struct MHD_Connection *conn) {
  if (c->reply) {
    cJSON *reply = c->reply;
    c->reply = NULL;
    return http_reply_json(conn, 200, reply);
  }
  if (!c->stream) return reply_error(conn, &c->error);
  if (!c->watched) api_guard_watch_hangup(&c->server->guard, conn, on_hangup, probe_hangup, c);
  c->watched = true;
  return c->streamed ? reply_stream(c, conn) : reply_when_finished(c, conn);
}

// ---- requests -------------------------------------------------------------------------------

static bool authorized(const ApiServer *s, struct MHD_Connection *conn) {
  if (!s->o.api_key) return true;
  const char *given = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
  unsigned char digest[32];
  unsigned len = 0;
  CHECK(EVP_Digest(given ? given : "", given ? strlen(given) : 0, digest, &len, EVP_sha256(),
                   NULL) == 1 &&
        len == 32);
  return CRYPTO_memcmp(digest, s->key_digest, 32) == 0;  // constant time
}

// First call for a completions route: the call's state, with an error to give once the body is
// in (answering before it would leave the client's upload unread).
static ApiCall *begin_call(ApiServer *s, struct MHD_Connection *conn, const char *url,
                           const char *method, bool chat) {
  ApiCall *c = xcalloc(1, sizeof *c);
  *c = (ApiCall){.job = {.conn = conn, .run = prepare_job},
                 .server = s,
                 .chat = chat,
                 .responses = strcmp(url, "/v1/responses") == 0,
                 .text_route = api_tokenize_route(url)};
  atomic_fetch_add(&s->num_live, 1);
  const char *length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
  if (strcmp(method, "POST") != 0)
    api_error(&c->error, 405, NULL, "%s takes POST", url);
  else if (!c->text_route && !authorized(s, conn))  // as vLLM: the key guards /v1/* only
    api_error(&c->error, 401, NULL, "Incorrect or missing API key");
  else if (length && strtoull(length, NULL, 10) > s->o.max_body_bytes)
    api_error(&c->error, 413, NULL, "the request body is larger than %zu bytes",
              s->o.max_body_bytes);
  return c;
}

static void take_upload(ApiServer *s, ApiCall *c, const char *data, size_t n) {
  api_guard_body(&s->guard, c->job.conn, n);
  if (c->error.status) return;  // discarded
  if (c->body.len + n > s->o.max_body_bytes) {
    api_error(&c->error, 413, NULL, "the request body is larger than %zu bytes",
              s->o.max_body_bytes);
    buf_free(&c->body);
    return;
  }
  buf_append(&c->body, data, n);
}

static enum MHD_Result get_route(ApiServer *s, struct MHD_Connection *conn, const char *url,
                                 const char *method) {
  bool health = strcmp(url, "/health") == 0, metrics = strcmp(url, "/metrics") == 0,
       version = strcmp(url, "/version") == 0,
       models = strcmp(url, "/v1/models") == 0 || strncmp(url, "/v1/models/", 11) == 0;
  ApiError e;
  api_guard_request_in(&s->guard, conn);
  if (strncmp(url, "/v1/responses/", 14) == 0) {  // GET/DELETE /v1/responses/{id}, cancel
    api_error(&e, 404, NULL, "no stored response %.100s: this server stores no responses",
              url + 14);
    return reply_error(conn, &e);
  }
  if (!health && !models && !metrics && !version) {
    api_error(&e, 404, NULL, "no route %.100s", url);
    return reply_error(conn, &e);
  }
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
    api_error(&e, 405, NULL, "%s takes GET", url);
    return reply_error(conn, &e);
  }
  if (health) return http_reply(conn, 200, "text/plain", "", 0);
  if (metrics) return reply_metrics(s, conn);
  if (version) return http_reply_json(conn, 200, api_models_version());
  if (!authorized(s, conn)) {
    api_error(&e, 401, NULL, "Incorrect or missing API key");
    return reply_error(conn, &e);
  }
  return reply_models(s, conn, url);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls) {
  ApiServer *s = cls;
  ApiCall *c = *con_cls;
  if (!c) {
    bool chat = strcmp(url, "/v1/chat/completions") == 0;
    if (!chat && strcmp(url, "/v1/completions") != 0 && strcmp(url, "/v1/responses") != 0 &&
        !api_tokenize_route(url))
      return get_route(s, conn, url, method);
    c = begin_call(s, conn, url, method, chat);
    c->http11 = strcmp(version, MHD_HTTP_VERSION_1_1) == 0;
    *con_cls = c;
    return MHD_YES;
  }
  if (*upload_size) {
    take_upload(s, c, upload_data, *upload_size);
    *upload_size = 0;
    return MHD_YES;
  }
  if (c->prepared) return answer(c, conn);  // resumed: prepared, or the answer may be ready
  api_guard_request_in(&s->guard, conn);
  if (c->error.status) return reply_error(conn, &c->error);
  if (c->body.len > API_PREP_INLINE_MAX) {
    if (api_prep_submit(&s->prep, &c->job)) return MHD_YES;  // resumed once prepared
    api_error(&c->error, 503, NULL, "the server is stopping");
    return reply_error(conn, &c->error);
  }
  prepare(s, c);
  return answer(c, conn);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode why) {
  (void)why;
  ApiServer *s = cls;
  api_guard_answered(&s->guard, conn);
  ApiCall *c = *con_cls;
  if (!c) return;
  if (c->stream) api_hub_close(&s->hub, c->stream);  // aborts the request if it is unfinished
  cJSON_Delete(c->reply);
  buf_free(&c->body);
  free(c);
  *con_cls = NULL;
  atomic_fetch_sub(&s->num_live, 1);
}

// ---- start / stop ---------------------------------------------------------------------------

static bool check_options(const ApiOptions *o, const Tokenizer *t, char *err, size_t err_size) {
  const char *bad = !o->host ? "a host is needed"
                    : !o->served_model_name || !o->served_model_name[0]
                        ? "a served model name is needed"
                    : o->max_body_bytes == 0           ? "the body size limit must be > 0"
                    : o->max_model_len <= 0            ? "max_model_len must be > 0"
                    : t->encoding != TOK_O200K_HARMONY ? "the tokenizer must be o200k_harmony"
                                                       : NULL;
  if (bad) snprintf(err, err_size, "api: %s", bad);
  return bad == NULL;
}

ApiServer *api_start(const ApiOptions *o, const ApiEngine *engine, const Tokenizer *t, char *err,
                     size_t err_size) {
  if (!check_options(o, t, err, err_size)) return NULL;
  ApiServer *s = xcalloc(1, sizeof *s);
  s->o = *o;
  s->o.host = xstrdup(o->host);
  s->o.served_model_name = xstrdup(o->served_model_name);
  s->o.api_key = o->api_key ? xstrdup(o->api_key) : NULL;
  s->t = t;
  s->created = (int64_t)time(NULL);
  s->seed_base = (uint64_t)clock_now_ns() * 0xbf58476d1ce4e5b9ull;
  if (o->api_key) {
    Buf bearer = {0};
    buf_printf(&bearer, "Bearer %s", o->api_key);
    unsigned len = 0;
    CHECK(EVP_Digest(bearer.data, bearer.len, s->key_digest, &len, EVP_sha256(), NULL) == 1);
    buf_free(&bearer);
  }
  api_latency_init(&s->hub.latency, o->max_model_len);
  bool guard = api_guard_start(&s->guard, o->receive_timeout_s, RECEIVE_MIN_RATE);
  bool prep = api_prep_start(&s->prep);
  if (!api_hub_start(&s->hub, engine) || !guard || !prep) {
    snprintf(err, err_size, "api: cannot start the dispatcher, guard or prep thread");
    api_stop(s);
    return NULL;
  }
  // The guard hears of every connection; a connection that moves no byte for idle_timeout_s (a
  // client not reading its answer) is closed.
  const struct MHD_OptionItem guard_options[] = {
      {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)api_guard_notify, &s->guard},
      {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)o->idle_timeout_s, NULL},
      {MHD_OPTION_END, 0, NULL}};
  HttpListenOptions listen = {.who = "api",
                              .host = s->o.host,
                              .port = o->port,
                              .num_threads = 1,
                              .on_request = on_request,
                              .on_completed = on_completed,
                              .cls = s,
                              .extra_options = guard_options};
  s->daemon = http_listen(&listen, &s->port, err, err_size);
  if (!s->daemon) {
    api_stop(s);
    return NULL;
  }
  return s;
}

uint16_t api_port(const ApiServer *s) { return s->port; }

static void wait_for_calls(ApiServer *s, int max_ms) {
  for (int i = 0; i < max_ms && atomic_load(&s->num_live); i++)
    clock_sleep_until_ns(clock_now_ns() + 1000000);
}

void api_stop(ApiServer *s) {
  if (s->daemon) {
    MHD_socket listen_fd = MHD_quiesce_daemon(s->daemon);  // the port is free from here on
    if (listen_fd != MHD_INVALID_SOCKET) close(listen_fd);
  }
  api_hub_abort_all(&s->hub);
  api_prep_stop(&s->prep);  // queued bodies get 503; their connections are resumed
  wait_for_calls(s, ABORT_GRACE_MS);
  api_hub_release_all(&s->hub);  // MHD must not be stopped with suspended connections
  wait_for_calls(s, RELEASE_GRACE_MS);
  api_hub_stop(&s->hub);
  if (s->daemon) MHD_stop_daemon(s->daemon);
  api_guard_stop(&s->guard);  // after MHD: it has told the guard of every close
  api_hub_free(&s->hub);
  api_latency_free(&s->hub.latency);
  free((char *)s->o.host);
  free((char *)s->o.served_model_name);
  free((char *)s->o.api_key);
  free(s);
}
