// api_dispatch.c: the dispatcher thread, stream lifetimes, the fan-in of several choices into
// one answer and the suspend/resume handshake. A
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
  for (int i = 0; i < s->num_choices; i++) api_output_free(&s->choices[i].out);
  free(s->choices);
  buf_free(&s->bytes);
  free(s);
}

// Under mu: clears s's suspension; returns the connection to resume after unlocking, or NULL.
static struct MHD_Connection *take_suspended(ApiStream *s) {
  if (!s->suspended) return NULL;
  s->suspended = false;
  return s->conn;
}

// Under mu: the ids of s's choices whose last event has not come, into ids [API_MAX_CHOICES].
static int live_ids(const ApiStream *s, uint64_t *ids) {
  int n = 0;
  for (int i = 0; i < s->num_choices; i++)
    if (!s->choices[i].engine_done) ids[n++] = s->choices[i].id;
  return n;
}

static void abort_ids(ApiHub *h, const uint64_t *ids, int n) {
  for (int i = 0; i < n; i++) h->engine.abort(h->engine.engine, ids[i]);
}

// The end of an answer of several choices, once all finished: usage (each prompt counted once,
// every choice's output) and [DONE], or the whole body. Returns the HTTP status.
static unsigned fan_in(const ApiStream *s, Buf *out) {
  uint64_t num_prompt = 0, num_output = 0;
  const ApiOutput *outs[API_MAX_CHOICES];
  for (int i = 0; i < s->num_choices; i++) {
    if (i % s->n == 0) num_prompt += s->choices[i].num_prompt_tokens;
    num_output += s->choices[i].num_output_tokens;
    outs[i] = &s->choices[i].out;
  }
  if (s->choices[0].out.info.stream)
    api_output_stream_end(outs[0], num_prompt, num_output, out);
  else
    api_output_whole(outs, (size_t)s->num_choices, num_prompt, num_output, out);
  return 200;
}

// Formats ev for its choice (the dispatcher's state only). Returns the whole answer's status
// when this event ends the answer, else 0; *stopped when a stop string ended the choice before
// its engine request did (which must then be aborted).
static unsigned format_event(ApiHub *h, ApiChoice *c, const TokenEvent *ev, bool *stopped) {
  ApiStream *s = c->stream;
  if (s->ended || c->out.done) return 0;
  unsigned status = api_output_event(&c->out, ev, &h->scratch);
  if (!c->out.done) return 0;
  *stopped = ev->finish == FINISH_NONE;
  c->num_prompt_tokens = ev->num_prompt_tokens;
  c->num_output_tokens = ev->num_output_tokens;
  bool all = ++s->num_finished == s->num_choices, aborted = c->out.finish == FINISH_ABORT;
  if (!aborted && !all) return 0;
  s->ended = true;
  return aborted || s->num_choices == 1 ? status : fan_in(s, &h->scratch);
}

static void dispatch(ApiHub *h, const TokenEvent *ev) {
  bool last = ev->finish != FINISH_NONE;
  pthread_mutex_lock(&h->mu);
  ApiChoice *c = api_table_get(&h->table, ev->request_id);
  if (!c) {
    pthread_mutex_unlock(&h->mu);
    return;  // not ours (or already forgotten at shutdown)
  }
  ApiStream *s = c->stream;
  bool closed = s->conn_done;
  if (last) api_table_remove(&h->table, ev->request_id);
  pthread_mutex_unlock(&h->mu);
  api_latency_event(&h->latency, &c->lat, ev, clock_now_ns());
  buf_clear(&h->scratch);
  bool stopped = false;
  unsigned status = closed ? 0 : format_event(h, c, ev, &stopped);
  bool ended = status != 0;

  pthread_mutex_lock(&h->mu);
  struct MHD_Connection *resume = NULL;
  if (!s->conn_done) {
    buf_append(&s->bytes, h->scratch.data, h->scratch.len);
    if (ended) {
      s->finished = true;
      s->status = status;
    }
    if (h->scratch.len || ended) resume = take_suspended(s);
  }
  if (last) {
    c->engine_done = true;
    s->num_live--;
  }
  s->engine_done = s->num_live == 0;
  bool free_now = s->engine_done && s->conn_done;
  uint64_t ids[API_MAX_CHOICES];
  int num_ids = ev->finish == FINISH_ABORT ? live_ids(s, ids) : 0;  // one aborted: all are
  if (stopped && !c->engine_done) ids[num_ids++] = c->id;
  pthread_mutex_unlock(&h->mu);
  if (resume) MHD_resume_connection(resume);
  abort_ids(h, ids, num_ids);
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

ApiStream *api_hub_submit(ApiHub *h, const EngineRequestParams *params, int num_choices, int n,
                          ApiOutputInfo info, struct MHD_Connection *conn, ApiError *err) {
  CHECK(num_choices >= 1 && num_choices <= API_MAX_CHOICES && n >= 1);
  ApiStream *s = xcalloc(1, sizeof *s);
  s->choices = xcalloc((size_t)num_choices, sizeof *s->choices);
  s->num_choices = num_choices;
  s->n = n;
  s->conn = conn;
  char why[256] = "";
  // Registered under mu before the dispatcher can look the ids up: first events may come at
  // once.
  pthread_mutex_lock(&h->mu);
  bool stopping = h->stopping;
  int num_submitted = 0;
  while (!stopping && num_submitted < num_choices) {
    ApiChoice *c = &s->choices[num_submitted];
    api_latency_submitted(&c->lat, params[num_submitted].max_tokens, clock_now_ns());
    c->id = h->engine.submit(h->engine.engine, &params[num_submitted], why, sizeof why);
    if (!c->id) break;
    c->stream = s;
    api_table_put(&h->table, c->id, c);
    num_submitted++;
  }
  bool ok = num_submitted == num_choices;
  for (int i = 0; i < num_submitted; i++) {
    ApiChoice *c = &s->choices[i];
    if (!ok) {
      api_table_remove(&h->table, c->id);
      continue;
    }
    ApiOutputInfo one = info;
    one.request_id = s->choices[0].id;
    one.index = i;
    one.one_of_many = num_choices > 1;
    if (info.echo_ids) {  // each choice echoes its own prompt
      one.echo_ids = params[i].prompt_ids;
      one.num_echo_ids = params[i].num_prompt_ids;
    }
    api_output_init(&c->out, &one);
  }
  s->id = s->choices[0].id;
  s->num_live = num_choices;
  pthread_mutex_unlock(&h->mu);
  if (ok) return s;
  for (int i = 0; i < num_submitted; i++) h->engine.abort(h->engine.engine, s->choices[i].id);
  free(s->choices);
  free(s);
  if (stopping)
    api_error(err, 503, NULL, "the server is stopping");
  else
    api_error(err, 400, NULL, "%s", why[0] ? why : "the engine refused the request");
  return NULL;
}

void api_hub_abort(ApiHub *h, ApiStream *s) {
  uint64_t ids[API_MAX_CHOICES];
  pthread_mutex_lock(&h->mu);
  int n = live_ids(s, ids);
  pthread_mutex_unlock(&h->mu);
  abort_ids(h, ids, n);
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
  uint64_t ids[API_MAX_CHOICES];
  pthread_mutex_lock(&h->mu);
  s->conn_done = true;
  s->conn = NULL;
  bool free_now = s->engine_done;
  int n = live_ids(s, ids);
  pthread_mutex_unlock(&h->mu);
  abort_ids(h, ids, n);
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
    ApiChoice *c = h->table.slots[i].value;
    if (h->table.slots[i].id && c->stream->suspended) conns[n++] = take_suspended(c->stream);
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
  for (size_t i = 0; i < h->table.cap; i++) {
    ApiChoice *c = h->table.slots[i].value;
    if (h->table.slots[i].id && --c->stream->num_live == 0) stream_free(c->stream);
  }
  api_table_free(&h->table);
  buf_free(&h->scratch);
  pthread_mutex_destroy(&h->mu);
}
