// api_dispatch.c: the dispatcher thread, stream lifetimes and the suspend/resume handshake. A
// connection suspends itself under mu only when it finds nothing to send; whoever adds bytes
// under mu resumes it after unlocking, so no wake-up is lost. Must not format output under mu.
#include "api/api_dispatch.h"

#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/clock.h"

enum { POLL_TIMEOUT_NS = 50 * 1000 * 1000 };  // how soon the thread sees api_hub_stop

static void stream_free(ApiStream *s) {
  api_output_free(&s->out);
  buf_free(&s->bytes);
  free(s);
}

// Under mu: clears s's suspension; returns the connection to resume after unlocking, or NULL.
static struct MHD_Connection *take_suspended(ApiStream *s) {
  if (!s->suspended) return NULL;
  s->suspended = false;
  return s->conn;
}

static void dispatch(ApiHub *h, const TokenEvent *ev) {
  bool last = ev->finish != FINISH_NONE;
  pthread_mutex_lock(&h->mu);
  ApiStream *s = api_table_get(&h->table, ev->request_id);
  bool closed = s && s->conn_done;
  if (s && last) api_table_remove(&h->table, ev->request_id);
  pthread_mutex_unlock(&h->mu);
  if (!s) return;  // not ours (or already forgotten at shutdown)
  api_latency_event(&h->latency, &s->lat, ev, clock_now_ns());
  buf_clear(&h->scratch);
  unsigned status = closed ? 0 : api_output_event(&s->out, ev, &h->scratch);

  pthread_mutex_lock(&h->mu);
  struct MHD_Connection *resume = NULL;
  if (!s->conn_done) {
    buf_append(&s->bytes, h->scratch.data, h->scratch.len);
    if (last) {
      s->finished = true;
      s->status = status;
    }
    if (h->scratch.len || last) resume = take_suspended(s);
  }
  s->engine_done = last;
  bool free_now = last && s->conn_done;
  pthread_mutex_unlock(&h->mu);
  if (resume) MHD_resume_connection(resume);
  if (free_now) stream_free(s);
}

static void *dispatcher_main(void *arg) {
  ApiHub *h = arg;
  while (!atomic_load(&h->exiting)) {
    size_t n = h->engine.poll_events(h->engine.engine, h->events, API_MAX_EVENTS, POLL_TIMEOUT_NS);
    for (size_t i = 0; i < n; i++) dispatch(h, &h->events[i]);
  }
  return NULL;
}

bool api_hub_start(ApiHub *h, const ApiEngine *engine) {
  h->engine = *engine;
  pthread_mutex_init(&h->mu, NULL);
  atomic_init(&h->exiting, false);
  h->started = pthread_create(&h->thread, NULL, dispatcher_main, h) == 0;
  return h->started;
}

ApiStream *api_hub_submit(ApiHub *h, const EngineRequestParams *p, ApiOutputInfo info,
                          struct MHD_Connection *conn, ApiError *err) {
  ApiStream *s = xcalloc(1, sizeof *s);
  s->conn = conn;
  api_latency_submitted(&s->lat, p->max_tokens, clock_now_ns());
  char why[256] = "";
  // Registered under mu before the dispatcher can look the id up: its first event may come at
  // once.
  pthread_mutex_lock(&h->mu);
  bool stopping = h->stopping;
  if (!stopping) s->id = h->engine.submit(h->engine.engine, p, why, sizeof why);
  if (s->id) {
    info.request_id = s->id;
    api_output_init(&s->out, &info);
    api_table_put(&h->table, s->id, s);
  }
  pthread_mutex_unlock(&h->mu);
  if (s->id) return s;
  free(s);
  if (stopping)
    api_error(err, 503, NULL, "the server is stopping");
  else
    api_error(err, 400, NULL, "%s", why[0] ? why : "the engine refused the request");
  return NULL;
}

ssize_t api_hub_read(ApiHub *h, ApiStream *s, char *buf, size_t max) {
  pthread_mutex_lock(&h->mu);
  ssize_t ret;
  if (s->pos < s->bytes.len) {
    size_t n = s->bytes.len - s->pos < max ? s->bytes.len - s->pos : max;
    memcpy(buf, s->bytes.data + s->pos, n);
    s->pos += n;
    ret = (ssize_t)n;
  } else if (s->finished) {
    ret = MHD_CONTENT_READER_END_OF_STREAM;
  } else if (h->refusing) {
    ret = MHD_CONTENT_READER_END_WITH_ERROR;
  } else {
    buf_clear(&s->bytes);
    s->pos = 0;
    s->suspended = true;
    MHD_suspend_connection(s->conn);
    ret = 0;
  }
  pthread_mutex_unlock(&h->mu);
  return ret;
}

bool api_hub_answer_ready(ApiHub *h, ApiStream *s) {
  pthread_mutex_lock(&h->mu);
  bool ready = s->finished || h->refusing;
  if (!ready) {
    s->suspended = true;
    MHD_suspend_connection(s->conn);
  }
  pthread_mutex_unlock(&h->mu);
  return ready;
}

void api_hub_close(ApiHub *h, ApiStream *s) {
  pthread_mutex_lock(&h->mu);
  s->conn_done = true;
  s->conn = NULL;
  bool abort_it = !s->engine_done, free_now = s->engine_done;
  pthread_mutex_unlock(&h->mu);
  if (abort_it) h->engine.abort(h->engine.engine, s->id);
  if (free_now) stream_free(s);
}

void api_hub_abort_all(ApiHub *h) {
  pthread_mutex_lock(&h->mu);
  h->stopping = true;
  uint64_t *ids = xmalloc((h->table.num_items + 1) * sizeof *ids);
  size_t n = 0;
  for (size_t i = 0; i < h->table.cap; i++)
    if (h->table.slots[i].id) ids[n++] = h->table.slots[i].id;
  pthread_mutex_unlock(&h->mu);
  for (size_t i = 0; i < n; i++) h->engine.abort(h->engine.engine, ids[i]);
  free(ids);
}

void api_hub_release_all(ApiHub *h) {
  pthread_mutex_lock(&h->mu);
  h->refusing = true;
  struct MHD_Connection **conns = xmalloc((h->table.num_items + 1) * sizeof *conns);
  size_t n = 0;
  for (size_t i = 0; i < h->table.cap; i++) {
    ApiStream *s = h->table.slots[i].value;
    if (h->table.slots[i].id && s->suspended) conns[n++] = take_suspended(s);
  }
  pthread_mutex_unlock(&h->mu);
  for (size_t i = 0; i < n; i++) MHD_resume_connection(conns[i]);
  free(conns);
}

void api_hub_stop(ApiHub *h) {
  if (!h->started) return;
  atomic_store(&h->exiting, true);
  pthread_join(h->thread, NULL);
  h->started = false;
}

void api_hub_free(ApiHub *h) {
  // Streams the engine never finished; their connections are gone with MHD.
  for (size_t i = 0; i < h->table.cap; i++)
    if (h->table.slots[i].id) stream_free(h->table.slots[i].value);
  api_table_free(&h->table);
  buf_free(&h->scratch);
  pthread_mutex_destroy(&h->mu);
}
