// fake_engine.h: an engine double for the HTTP API's tests, behind an ApiEngine (never under
// engine.h's names, so it cannot clash with the real engine in the library). Every request
// generates the same scripted token ids, one per step from a producer thread, until the script
// or max_tokens runs out, once start_after requests are in (FINISH_STOP when the script ends in a
// stop token and ignore_eos is off, else FINISH_LENGTH); an abort ends it with FINISH_ABORT.
// Records what it was given. Included by one test file (static functions).
#ifndef GE_TESTS_FAKE_ENGINE_H
#define GE_TESTS_FAKE_ENGINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "common/check.h"
#include "common/clock.h"
#include "text/token_ids.h"

enum { FAKE_MAX_REQUESTS = 4096, FAKE_MAX_ABORTS = 4096 };

typedef struct {
  uint64_t id;
  size_t pos;  // tokens generated
  int max_tokens;
  bool ignore_eos, aborted, done;
  uint32_t num_prompt_tokens;
} FakeRequest;

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;  // events were queued
  pthread_t thread;
  bool exiting;
  // knobs, set before requests arrive
  const uint32_t *script;
  size_t script_len;
  int64_t step_ns;
  size_t max_prompt;   // longer prompts are refused (as "too long")
  size_t start_after;  // no tokens until this many requests were submitted
  EngineStats stats;   // what engine_stats reports
  // state
  FakeRequest *reqs;  // [FAKE_MAX_REQUESTS]
  size_t num_reqs;
  TokenEvent *queue;  // produced, not polled yet
  size_t num_queued, cap_queued;
  // observations
  TokenIds last_prompt;
  EngineRequestParams last_params;
  uint64_t aborted[FAKE_MAX_ABORTS];
  size_t num_aborted;
  size_t num_submitted;
} FakeEngine;

static void fake_push_event(FakeEngine *f, TokenEvent ev) {
  if (f->num_queued == f->cap_queued) {
    f->cap_queued = f->cap_queued ? 2 * f->cap_queued : 1024;
    f->queue = xrealloc(f->queue, f->cap_queued * sizeof *f->queue);
  }
  f->queue[f->num_queued++] = ev;
}

static bool fake_is_stop(uint32_t id) {
  return id == TOK_RETURN || id == TOK_CALL || id == TOK_ENDOFTEXT;
}

// One step: the next token of every live request.
static void fake_step(FakeEngine *f) {
  if (f->num_submitted < f->start_after) return;
  for (size_t i = 0; i < f->num_reqs; i++) {
    FakeRequest *r = &f->reqs[i];
    if (r->done) continue;
    TokenEvent ev = {.request_id = r->id, .num_prompt_tokens = r->num_prompt_tokens};
    if (r->aborted) {
      ev.finish = FINISH_ABORT;
    } else {
      ev.has_token = true;
      ev.token_id = f->script[r->pos++];
      if (r->pos == f->script_len && fake_is_stop(ev.token_id) && !r->ignore_eos)
        ev.finish = FINISH_STOP;
      else if (r->pos == f->script_len || (int)r->pos == r->max_tokens)
        ev.finish = FINISH_LENGTH;
    }
    ev.num_output_tokens = (uint32_t)r->pos;
    r->done = ev.finish != FINISH_NONE;
    fake_push_event(f, ev);
  }
  pthread_cond_broadcast(&f->cv);
}

static void *fake_main(void *arg) {
  FakeEngine *f = arg;
  pthread_mutex_lock(&f->mu);
  while (!f->exiting) {
    fake_step(f);
    pthread_mutex_unlock(&f->mu);
    clock_sleep_until_ns(clock_now_ns() + f->step_ns);
    pthread_mutex_lock(&f->mu);
  }
  pthread_mutex_unlock(&f->mu);
  return NULL;
}

static uint64_t fake_submit(void *e, const EngineRequestParams *p, char *err, size_t err_size) {
  FakeEngine *f = e;
  pthread_mutex_lock(&f->mu);
  uint64_t id = 0;
  f->last_prompt.len = 0;
  token_ids_append(&f->last_prompt, p->prompt_ids, p->num_prompt_ids);
  f->last_params = *p;
  f->last_params.prompt_ids = NULL;
  if (p->num_prompt_ids > f->max_prompt) {
    snprintf(err, err_size, "the prompt (%zu tokens) is longer than the fake's %zu",
             p->num_prompt_ids, f->max_prompt);
  } else if (f->num_reqs < FAKE_MAX_REQUESTS) {
    id = ++f->num_submitted;
    f->reqs[f->num_reqs++] = (FakeRequest){.id = id,
                                           .max_tokens = p->max_tokens,
                                           .ignore_eos = p->ignore_eos,
                                           .num_prompt_tokens = (uint32_t)p->num_prompt_ids};
  } else {
    snprintf(err, err_size, "the fake is full");
  }
  pthread_mutex_unlock(&f->mu);
  return id;
}

static void fake_abort(void *e, uint64_t request_id) {
  FakeEngine *f = e;
  pthread_mutex_lock(&f->mu);
  if (f->num_aborted < FAKE_MAX_ABORTS) f->aborted[f->num_aborted++] = request_id;
  for (size_t i = 0; i < f->num_reqs; i++)
    if (f->reqs[i].id == request_id) f->reqs[i].aborted = true;
  pthread_mutex_unlock(&f->mu);
}

static size_t fake_poll(void *e, TokenEvent *out, size_t max_events, int64_t timeout_ns) {
  FakeEngine *f = e;
  int64_t deadline = clock_now_ns() + timeout_ns;
  struct timespec ts = {(time_t)(deadline / 1000000000), (long)(deadline % 1000000000)};
  pthread_mutex_lock(&f->mu);
  while (f->num_queued == 0 && clock_now_ns() < deadline)
    pthread_cond_timedwait(&f->cv, &f->mu, &ts);
  size_t n = f->num_queued < max_events ? f->num_queued : max_events;
  if (n) {
    memcpy(out, f->queue, n * sizeof *out);
    memmove(f->queue, f->queue + n, (f->num_queued - n) * sizeof *out);
    f->num_queued -= n;
  }
  pthread_mutex_unlock(&f->mu);
  return n;
}

static void fake_stats(void *e, EngineStats *out) {
  FakeEngine *f = e;
  pthread_mutex_lock(&f->mu);
  *out = f->stats;
  pthread_mutex_unlock(&f->mu);
}

static void fake_start(FakeEngine *f, const uint32_t *script, size_t script_len, int64_t step_ns) {
  *f = (FakeEngine){
      .script = script, .script_len = script_len, .step_ns = step_ns, .max_prompt = 100000};
  f->reqs = xcalloc(FAKE_MAX_REQUESTS, sizeof *f->reqs);
  pthread_mutex_init(&f->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&f->cv, &attr);
  pthread_condattr_destroy(&attr);
  CHECK(pthread_create(&f->thread, NULL, fake_main, f) == 0);
}

static void fake_stop(FakeEngine *f) {
  pthread_mutex_lock(&f->mu);
  f->exiting = true;
  pthread_mutex_unlock(&f->mu);
  pthread_join(f->thread, NULL);
  pthread_cond_destroy(&f->cv);
  pthread_mutex_destroy(&f->mu);
  free(f->reqs);
  free(f->queue);
  token_ids_free(&f->last_prompt);
}

static ApiEngine fake_api_engine(FakeEngine *f) {
  return (ApiEngine){.engine = f,
                     .submit = fake_submit,
                     .abort = fake_abort,
                     .poll_events = fake_poll,
                     .stats = fake_stats};
}

static size_t fake_num_submitted(FakeEngine *f) {
  pthread_mutex_lock(&f->mu);
  size_t n = f->num_submitted;
  pthread_mutex_unlock(&f->mu);
  return n;
}

// Whether id was aborted, waiting up to max_ms for it.
static bool fake_wait_aborted(FakeEngine *f, uint64_t id, int max_ms) {
  for (int i = 0; i <= max_ms; i++) {
    pthread_mutex_lock(&f->mu);
    bool seen = false;
    for (size_t j = 0; j < f->num_aborted; j++) seen |= f->aborted[j] == id;
    pthread_mutex_unlock(&f->mu);
    if (seen) return true;
    clock_sleep_until_ns(clock_now_ns() + 1000000);
  }
  return false;
}

#endif
