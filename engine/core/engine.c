// engine.c: the serving engine: an inbox (submit/abort from any thread), the engine thread that
// owns the scheduler, the KV blocks and the request table, and the outbox of token events. With
// async scheduling a second thread executes step N (forward pass + sampling) while the engine
// thread updates from step N-1 and plans step N+1; without it the engine thread runs each step
// itself. Only the inbox, the outbox and the stats snapshot are shared, each behind its own lock.
#include "core/engine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/clock.h"
#include "core/batch_builder.h"
#include "core/block_manager.h"
#include "core/event_queue.h"
#include "core/request.h"
#include "core/scheduler.h"

// One planned step and what running it produced.
typedef struct {
  SchedOutput plan;
  BatchBuilder builder;
  uint32_t *sampled_ids;   // [max_num_seqs] by sample_row
  SampleRow *sample_rows;  // [max_num_seqs] by sample_row: what a device may sample
  int32_t *device_ids;     // [max_num_seqs] by sample_row: its ids, -1 where the host samples
  PickLogprobs *logprobs;  // [max_num_seqs] by sample_row, for requests that ask for them
} Step;

// The thread that runs steps in async mode: one step at a time, in order.
typedef struct {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t changed;
  Step *pending;  // handed over, not started
  Step *done;     // finished, not yet collected
  bool quit;
} Executor;

struct Engine {
  EngineConfig config;
  Runner *runner;
  BlockManager blocks;
  Scheduler sched;
  Step steps[2];  // async alternates; sync uses steps[0]
  float *logits;  // [max_num_seqs, vocab]
  SamplerScratch sampler;
  Executor executor;
  pthread_t thread;
  // inbox
  pthread_mutex_t inbox_lock;
  pthread_cond_t inbox_changed;
  Request **inbox;  // [num_inbox] submitted, not yet given to the scheduler
  size_t num_inbox, inbox_cap;
  uint64_t *aborts;  // [num_aborts]
  size_t num_aborts, aborts_cap;
  bool stopping;
  atomic_uint_fast64_t next_id;
  // outbox and stats
  EventQueue outbox;
  pthread_mutex_t stats_lock;
  EngineStats stats;
};

// ---------------------------------------------------------------------------------------------
// running one step: forward pass, then one sampled id per sampling request

// One request's next token from its row of logits (processed in place) and its draw: the
// logprobs of the raw row first when asked for, then logit bias, min_tokens and penalties, then
// the pick.
static uint32_t sample_request(Engine *e, Request *r, float *row, int vocab, double draw,
                               PickLogprobs *lp) {
  const EngineRequestParams *p = &r->params;
  SamplerInputs in = req_sampler_inputs(r);
  bool process = sampler_needs_processing(&p->sampling, &in);
  const float *raw = row;
  float log_norm = 0;
  if (p->logprobs) {
    log_norm = pick_logprobs(row, vocab, p->num_top_logprobs, lp);
    if (process) raw = sampler_keep_raw(row, vocab, &e->sampler);
  }
  if (process) sampler_process(row, vocab, &p->sampling, &in, &e->sampler);
  uint32_t id = sampler_sample_drawn(row, vocab, &p->sampling, draw, &e->sampler);
  if (p->logprobs) lp->logprob = raw[id] - log_norm;
  return id;
}

// The request's draw for this step, and whether a device may sample its row: only a row that
// needs nothing but the pick and the raw row's logprobs (no processing).
static SampleRow sample_row_of(const Engine *e, Request *r) {
  const EngineRequestParams *p = &r->params;
  SamplerInputs in = req_sampler_inputs(r);
  const double draw = sampler_draw(&p->sampling, &r->rng);
  const bool device = !e->config.host_sampling && !sampler_needs_processing(&p->sampling, &in);
  const float t = p->sampling.temperature > 0 ? p->sampling.temperature : 0;
  return (SampleRow){.temperature = device ? t : -1,
                     .top_k = p->sampling.top_k,
                     .top_p = p->sampling.top_p,
                     .draw = draw,
                     .logprobs = p->logprobs,
                     .num_top_logprobs = p->num_top_logprobs};
}

static void run_step(Engine *e, Step *step) {
  const SchedOutput *plan = &step->plan;
  int vocab = runner_config(e->runner)->vocab_size;
  int64_t start_ns = clock_now_ns();
  for (int row = 0; row < step->builder.batch.num_logits; row++)
    step->sample_rows[row] = (SampleRow){.temperature = -1, .top_p = 1.0f};
  for (int i = 0; i < plan->num_entries; i++) {
    const SchedEntry *entry = &plan->entries[i];
    if (entry->sample_row >= 0) step->sample_rows[entry->sample_row] = sample_row_of(e, entry->req);
  }
  runner_forward(e->runner, &step->builder.batch, e->logits, step->sample_rows, step->device_ids,
                 step->logprobs);
  for (int i = 0; i < plan->num_entries; i++) {
    const SchedEntry *entry = &plan->entries[i];
    if (entry->sample_row < 0) continue;
    int row = entry->sample_row;
    uint32_t id = step->device_ids[row] >= 0
                      ? (uint32_t)step->device_ids[row]
                      : sample_request(e, entry->req, e->logits + (size_t)row * (size_t)vocab,
                                       vocab, step->sample_rows[row].draw, &step->logprobs[row]);
    req_record_sample(entry->req, id);
    step->sampled_ids[row] = id;
  }
  if (e->config.step_slowdown > 1) {  // spins, so the extra time costs CPU as real work does
    int64_t now = clock_now_ns();
    int64_t until = now + (int64_t)((double)(now - start_ns) * (e->config.step_slowdown - 1));
    while (clock_now_ns() < until) continue;
  }
  double seconds = (double)(clock_now_ns() - start_ns) / 1e9;
  pthread_mutex_lock(&e->stats_lock);
  e->stats.num_steps++;
  e->stats.step_time_sum_s += seconds;
  int bucket = 0;  // bucket i: under 2^i * 100 us
  while (bucket < 15 && seconds >= 100e-6 * (double)(1u << bucket)) bucket++;
  e->stats.step_time_buckets[bucket]++;
  pthread_mutex_unlock(&e->stats_lock);
}

// Testing only (EngineConfig.forced_output_ids): on the engine thread, before sched_update takes
// the step's samples, so each request's next output position is its current output count.
static void force_output(const Engine *e, Step *step) {
  for (int i = 0; e->config.forced_output_ids && i < step->plan.num_entries; i++) {
    const SchedEntry *entry = &step->plan.entries[i];
    size_t pos = entry->sample_row < 0 ? SIZE_MAX : (size_t)req_num_output_tokens(entry->req);
    if (pos < e->config.num_forced_output_ids)
      step->sampled_ids[entry->sample_row] = e->config.forced_output_ids[pos];
  }
}

static void *executor_main(void *arg) {
  Engine *e = arg;
  Executor *x = &e->executor;
  pthread_mutex_lock(&x->lock);
  for (;;) {
    while (!x->pending && !x->quit) pthread_cond_wait(&x->changed, &x->lock);
    if (x->quit) break;
    Step *step = x->pending;
    x->pending = NULL;
    pthread_mutex_unlock(&x->lock);
    run_step(e, step);
    pthread_mutex_lock(&x->lock);
    x->done = step;
    pthread_cond_broadcast(&x->changed);
  }
  pthread_mutex_unlock(&x->lock);
  return NULL;
}

static void executor_launch(Executor *x, Step *step) {
  pthread_mutex_lock(&x->lock);
  CHECK(!x->pending && !x->done);
  x->pending = step;
  pthread_cond_broadcast(&x->changed);
  pthread_mutex_unlock(&x->lock);
}

static void executor_wait(Executor *x, Step *step) {
  pthread_mutex_lock(&x->lock);
  while (x->done != step) pthread_cond_wait(&x->changed, &x->lock);
  x->done = NULL;
  pthread_mutex_unlock(&x->lock);
}

// ---------------------------------------------------------------------------------------------
// the engine thread

// Moves the inbox into the scheduler. Returns false when the engine is stopping.
static bool drain_inbox(Engine *e, bool wait_if_idle) {
  pthread_mutex_lock(&e->inbox_lock);
  while (wait_if_idle && !e->stopping && e->num_inbox == 0 && e->num_aborts == 0)
    pthread_cond_wait(&e->inbox_changed, &e->inbox_lock);
  for (size_t i = 0; i < e->num_inbox; i++) sched_add(&e->sched, e->inbox[i]);
  for (size_t i = 0; i < e->num_aborts; i++) sched_abort(&e->sched, e->aborts[i]);
  e->num_inbox = e->num_aborts = 0;
  bool running = !e->stopping;
  pthread_mutex_unlock(&e->inbox_lock);
  return running;
}

// Stats first, so a consumer that has seen an event also sees the state after it.
static void publish(Engine *e) {
  pthread_mutex_lock(&e->stats_lock);
  sched_stats(&e->sched, &e->stats);
  pthread_mutex_unlock(&e->stats_lock);
  int num_events;
  const TokenEvent *events = sched_take_events(&e->sched, &num_events);
  event_queue_push(&e->outbox, events, (size_t)num_events);
}

static bool idle(const Engine *e) { return e->sched.num_running == 0 && e->sched.num_waiting == 0; }

static void loop_sync(Engine *e) {
  Step *step = &e->steps[0];
  while (drain_inbox(e, idle(e))) {
    sched_schedule(&e->sched, &step->plan);
    if (step->plan.num_tokens > 0) {
      batch_build(&step->builder, &step->plan);
      run_step(e, step);
      force_output(e, step);
    }
    sched_update(&e->sched, &step->plan, step->sampled_ids);
    publish(e);
  }
}

// Step N+1 is planned and built while step N runs on the executor.
static void loop_async(Engine *e) {
  Step *in_flight = NULL;
  for (int n = 0; drain_inbox(e, idle(e) && !in_flight); n ^= 1) {
    Step *next = &e->steps[n];
    sched_schedule(&e->sched, &next->plan);
    bool runs = next->plan.num_tokens > 0;
    if (runs) batch_build(&next->builder, &next->plan);
    if (in_flight) {
      executor_wait(&e->executor, in_flight);
      force_output(e, in_flight);
      if (runs) batch_patch_tokens(&next->builder, in_flight->sampled_ids);
    }
    if (runs) executor_launch(&e->executor, next);
    if (in_flight) sched_update(&e->sched, &in_flight->plan, in_flight->sampled_ids);
    if (!runs) sched_update(&e->sched, &next->plan, next->sampled_ids);
    in_flight = runs ? next : NULL;
    publish(e);
  }
  if (in_flight) {
    executor_wait(&e->executor, in_flight);
    force_output(e, in_flight);
    sched_update(&e->sched, &in_flight->plan, in_flight->sampled_ids);
  }
}

static void *engine_main(void *arg) {
  Engine *e = arg;
  if (e->config.async_scheduling)
    loop_async(e);
  else
    loop_sync(e);
  sched_abort_all(&e->sched);
  publish(e);
  return NULL;
}

// ---------------------------------------------------------------------------------------------
// public API

bool engine_hybrid_kv(const EngineConfig *config, const GptOssConfig *model_config) {
  return !config->disable_hybrid_kv_cache && config_has_both_layer_kinds(model_config);
}

bool engine_create(Engine **out, const EngineConfig *config, Runner *runner, char *err,
                   size_t err_size) {
  const GptOssConfig *model_config = runner_config(runner);
  const bool hybrid_kv = engine_hybrid_kv(config, model_config);
  if (hybrid_kv && config->num_kv_blocks < 2) {
    snprintf(err, err_size,
             "a hybrid KV cache needs at least 2 blocks (one is the null block), got %d; give "
             "the KV cache more memory or pass --disable-hybrid-kv-cache-manager",
             config->num_kv_blocks);
    return false;
  }
  size_t vocab = (size_t)model_config->vocab_size;
  float *logits = malloc((size_t)config->max_num_seqs * vocab * sizeof(float));
  if (!logits) {
    snprintf(err, err_size, "out of memory for the logits of %d sequences", config->max_num_seqs);
    return false;
  }
  if (!runner_kv_init(runner, config->num_kv_blocks, config->block_size, hybrid_kv, err,
                      err_size)) {
    free(logits);
    return false;
  }
  Engine *e = xcalloc(1, sizeof *e);
  e->config = *config;
  e->runner = runner;
  e->logits = logits;
  blocks_init_hybrid(&e->blocks, config->num_kv_blocks, config->block_size,
                     config->enable_prefix_caching, hybrid_kv ? model_config->sliding_window : 0,
                     config->max_num_batched_tokens);
  sched_init(&e->sched, config, &e->blocks);
  for (int i = 0; i < 2; i++) {
    sched_output_init(&e->steps[i].plan, &e->sched);
    batch_builder_init(&e->steps[i].builder, config, hybrid_kv);
    e->steps[i].sampled_ids = xcalloc((size_t)config->max_num_seqs, sizeof(uint32_t));
    e->steps[i].logprobs = xcalloc((size_t)config->max_num_seqs, sizeof(PickLogprobs));
    e->steps[i].sample_rows = xcalloc((size_t)config->max_num_seqs, sizeof(SampleRow));
    e->steps[i].device_ids = xcalloc((size_t)config->max_num_seqs, sizeof(int32_t));
    e->steps[i].plan.logprobs = e->steps[i].logprobs;
  }
  pthread_mutex_init(&e->inbox_lock, NULL);
  pthread_cond_init(&e->inbox_changed, NULL);
  pthread_mutex_init(&e->stats_lock, NULL);
  pthread_mutex_init(&e->executor.lock, NULL);
  pthread_cond_init(&e->executor.changed, NULL);
  event_queue_init(&e->outbox);
  atomic_init(&e->next_id, 1);
  sched_stats(&e->sched, &e->stats);
  *out = e;
  return true;
}

void engine_start(Engine *e) {
  if (e->config.async_scheduling)
    CHECK(pthread_create(&e->executor.thread, NULL, executor_main, e) == 0);
  CHECK(pthread_create(&e->thread, NULL, engine_main, e) == 0);
}

// The sampling fields engine_submit checks (the API checks types and ranges first).
static bool check_sampling(const EngineRequestParams *p, uint32_t vocab, char *err,
                           size_t err_size) {
  for (size_t i = 0; i < p->num_logit_bias; i++)
    if (p->logit_bias[i].token_id >= vocab) {
      snprintf(err, err_size,
               "token_id(s) [%u] in logit_bias contain out-of-vocab token ids. Vocabulary size: "
               "%u",
               p->logit_bias[i].token_id, vocab);
      return false;
    }
  for (size_t i = 0; i < p->num_stop_token_ids; i++)
    if (p->stop_token_ids[i] >= vocab) {
      snprintf(err, err_size, "stop_token_ids holds %u, outside the model's vocabulary (0..%u)",
               p->stop_token_ids[i], vocab - 1);
      return false;
    }
  if (p->sampling.min_tokens > p->max_tokens) {
    snprintf(err, err_size, "min_tokens must be less than or equal to max_tokens=%d, got %d.",
             p->max_tokens, p->sampling.min_tokens);
    return false;
  }
  if (p->logprobs && (p->num_top_logprobs < 0 || p->num_top_logprobs > PICK_MAX_LOGPROBS)) {
    snprintf(err, err_size,
             "Requested sample logprobs of %d, which is greater than max allowed: %d",
             p->num_top_logprobs, PICK_MAX_LOGPROBS);
    return false;
  }
  return true;
}

uint64_t engine_submit(Engine *e, const EngineRequestParams *p, char *err, size_t err_size) {
  if (!sched_check_request(&e->sched, p, err, err_size)) return 0;
  uint32_t vocab = (uint32_t)runner_config(e->runner)->vocab_size;
  for (size_t i = 0; i < p->num_prompt_ids; i++)
    if (p->prompt_ids[i] >= vocab) {
      snprintf(err, err_size, "prompt token %zu is %u, outside the model's vocabulary (0..%u)", i,
               p->prompt_ids[i], vocab - 1);
      return 0;
    }
  if (!check_sampling(p, vocab, err, err_size)) return 0;
  uint64_t id = atomic_fetch_add(&e->next_id, 1);
  Request *r = req_create(id, p, e->config.block_size, e->blocks.window > 0);
  pthread_mutex_lock(&e->inbox_lock);
  if (e->num_inbox == e->inbox_cap) {
    e->inbox_cap = e->inbox_cap ? 2 * e->inbox_cap : 64;
    e->inbox = xrealloc(e->inbox, e->inbox_cap * sizeof *e->inbox);
  }
  e->inbox[e->num_inbox++] = r;
  pthread_cond_signal(&e->inbox_changed);
  pthread_mutex_unlock(&e->inbox_lock);
  return id;
}

void engine_abort(Engine *e, uint64_t request_id) {
  pthread_mutex_lock(&e->inbox_lock);
  if (e->num_aborts == e->aborts_cap) {
    e->aborts_cap = e->aborts_cap ? 2 * e->aborts_cap : 64;
    e->aborts = xrealloc(e->aborts, e->aborts_cap * sizeof *e->aborts);
  }
  e->aborts[e->num_aborts++] = request_id;
  pthread_cond_signal(&e->inbox_changed);
  pthread_mutex_unlock(&e->inbox_lock);
}

size_t engine_poll_events(Engine *e, TokenEvent *out, size_t max_events, int64_t timeout_ns) {
  return event_queue_pop(&e->outbox, out, max_events, timeout_ns);
}

void engine_stats(Engine *e, EngineStats *out) {
  pthread_mutex_lock(&e->stats_lock);
  *out = e->stats;
  pthread_mutex_unlock(&e->stats_lock);
}

void engine_stop(Engine *e) {
  pthread_mutex_lock(&e->inbox_lock);
  e->stopping = true;
  pthread_cond_signal(&e->inbox_changed);
  pthread_mutex_unlock(&e->inbox_lock);
  pthread_join(e->thread, NULL);
  if (e->config.async_scheduling) {
    pthread_mutex_lock(&e->executor.lock);
    e->executor.quit = true;
    pthread_cond_broadcast(&e->executor.changed);
    pthread_mutex_unlock(&e->executor.lock);
    pthread_join(e->executor.thread, NULL);
  }
}

void engine_destroy(Engine *e) {
  for (size_t i = 0; i < e->num_inbox; i++) req_free(e->inbox[i]);
  free(e->inbox);
  free(e->aborts);
  for (int i = 0; i < 2; i++) {
    sched_output_free(&e->steps[i].plan);
    batch_builder_free(&e->steps[i].builder);
    free(e->steps[i].sampled_ids);
    free(e->steps[i].logprobs);
    free(e->steps[i].sample_rows);
    free(e->steps[i].device_ids);
  }
  sched_free(&e->sched);
  blocks_free(&e->blocks);
  free(e->logits);
  sampler_scratch_free(&e->sampler);
  runner_kv_free(e->runner);
  event_queue_free(&e->outbox);
  pthread_mutex_destroy(&e->inbox_lock);
  pthread_cond_destroy(&e->inbox_changed);
  pthread_mutex_destroy(&e->stats_lock);
  pthread_mutex_destroy(&e->executor.lock);
  pthread_cond_destroy(&e->executor.changed);
  free(e);
}
