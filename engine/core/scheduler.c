// scheduler.c: the step planner and the bookkeeping after each step. Running requests live in
// an array in admission order (finishes and aborts leave NULL holes, closed by one compaction
// pass per step; preemption pops from the end); waiting and retired requests in intrusive
// doubly linked lists; everything is O(1) per request touched, plus the block manager's
// O(blocks touched) for its blocks and their prefix-cache hashes.
#include "core/scheduler.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/check.h"
#include "common/clock.h"
#include "text/tokenizer.h"

// ---------------------------------------------------------------------------------------------
// Lists

static void list_push_front(Request **head, Request **tail, Request *r) {
  r->prev = NULL;
  r->next = *head;
  if (*head)
    (*head)->prev = r;
  else if (tail)
    *tail = r;
  *head = r;
}

static void list_remove(Request **head, Request **tail, Request *r) {
  if (r->prev)
    r->prev->next = r->next;
  else
    *head = r->next;
  if (r->next)
    r->next->prev = r->prev;
  else if (tail)
    *tail = r->prev;
  r->prev = r->next = NULL;
}

static void waiting_push_back(Scheduler *s, Request *r) {
  r->next = NULL;
  r->prev = s->waiting_tail;
  if (s->waiting_tail)
    s->waiting_tail->next = r;
  else
    s->waiting_head = r;
  s->waiting_tail = r;
  s->num_waiting++;
}

static void waiting_push_front(Scheduler *s, Request *r) {
  list_push_front(&s->waiting_head, &s->waiting_tail, r);
  s->num_waiting++;
}

static void waiting_remove(Scheduler *s, Request *r) {
  list_remove(&s->waiting_head, &s->waiting_tail, r);
  s->num_waiting--;
}

static void running_push(Scheduler *s, Request *r) {
  CHECK(s->running_len < s->config.max_num_seqs);
  r->running_index = s->running_len;
  s->running[s->running_len++] = r;
  s->num_running++;
}

static void running_remove(Scheduler *s, Request *r) {
  CHECK(s->running[r->running_index] == r);
  s->running[r->running_index] = NULL;
  r->running_index = -1;
  s->num_running--;
  s->running_has_holes = true;
}

// Closes the holes, keeping admission order.
static void running_compact(Scheduler *s) {
  if (!s->running_has_holes) return;
  int n = 0;
  for (int i = 0; i < s->running_len; i++) {
    Request *r = s->running[i];
    if (!r) continue;
    r->running_index = n;
    s->running[n++] = r;
  }
  s->running_len = n;
  s->running_has_holes = false;
}

// ---------------------------------------------------------------------------------------------
// Life cycle

void sched_init(Scheduler *s, const EngineConfig *config, BlockManager *blocks) {
  CHECK(config->max_num_seqs > 0 && config->max_num_batched_tokens > 0);
  CHECK(config->block_size == blocks->block_size &&
        config->enable_prefix_caching == blocks->enable_caching);
  CHECK(blocks->window == 0 || blocks->max_chunk_tokens >= config->max_num_batched_tokens);
  *s = (Scheduler){.config = *config, .blocks = blocks};
  s->running = xcalloc((size_t)config->max_num_seqs, sizeof *s->running);
  req_table_init(&s->table);
  s->events_capacity = config->max_num_seqs;
  s->events = xmalloc((size_t)s->events_capacity * sizeof *s->events);
}

static void free_list(Request *r) {
  while (r) {
    Request *next = r->next;
    req_free(r);
    r = next;
  }
}

void sched_free(Scheduler *s) {
  for (int i = 0; i < s->running_len; i++) {
    if (!s->running[i]) continue;
    blocks_release(s->blocks, &s->running[i]->blocks);
    req_free(s->running[i]);
  }
  free_list(s->waiting_head);
  free_list(s->retired);
  free(s->running);
  free(s->events);
  req_table_free(&s->table);
  *s = (Scheduler){0};
}

bool sched_check_request(const Scheduler *s, const EngineRequestParams *p, char *err,
                         size_t err_size) {
  const EngineConfig *c = &s->config;
  if (p->num_prompt_ids == 0) {
    snprintf(err, err_size, "the prompt is empty");
    return false;
  }
  if (p->max_tokens < 1) {
    snprintf(err, err_size, "max_tokens must be at least 1, got %d", p->max_tokens);
    return false;
  }
  long long total = (long long)p->num_prompt_ids + p->max_tokens;
  if (total > c->max_model_len) {
    snprintf(err, err_size,
             "This model's maximum context length is %d tokens. However, you requested %lld "
             "tokens (%zu in the prompt, %d for the completion). Please reduce the length of "
             "the prompt or max_tokens.",
             c->max_model_len, total, p->num_prompt_ids, p->max_tokens);
    return false;
  }
  if (!blocks_can_ever_fit(s->blocks, (int)total)) {
    snprintf(err, err_size,
             "the request needs %d KV blocks (%lld tokens) but the whole KV cache has %d blocks "
             "of %d tokens; reduce the prompt or max_tokens",
             blocks_most_needed(s->blocks, (int)total), total, blocks_num_usable(s->blocks),
             c->block_size);
    return false;
  }
  return true;
}

void sched_add(Scheduler *s, Request *r) {
  CHECK(r->status == REQ_WAITING && r->num_computed_tokens == 0);
  CHECK(r->max_num_tokens <= s->config.max_model_len &&
        blocks_can_ever_fit(s->blocks, r->max_num_tokens));
  req_table_put(&s->table, r);
  waiting_push_back(s, r);
}

void sched_output_init(SchedOutput *out, const Scheduler *s) {
  int n = s->config.max_num_seqs;
  *out = (SchedOutput){.capacity = n};
  out->entries = xmalloc((size_t)n * sizeof *out->entries);
  out->preempted_ids = xmalloc((size_t)n * sizeof *out->preempted_ids);
}

void sched_output_free(SchedOutput *out) {
  free(out->entries);
  free(out->preempted_ids);
  *out = (SchedOutput){0};
}

// ---------------------------------------------------------------------------------------------
// Events and finishing

static void push_event(Scheduler *s, const Request *r, bool has_token, uint32_t token_id) {
  if (s->num_events == s->events_capacity) {
    s->events_capacity *= 2;
    s->events = xrealloc(s->events, (size_t)s->events_capacity * sizeof *s->events);
  }
  s->events[s->num_events++] = (TokenEvent){
      .request_id = r->id,
      .has_token = has_token,
      .token_id = token_id,
      .finish = r->finish,
      .num_prompt_tokens = (uint32_t)r->num_prompt_tokens,
      .num_output_tokens = (uint32_t)req_num_output_tokens(r),
  };
}

// Takes r out of the queues, frees its blocks and queues its last event (with the token that
// finished it, if any); frees r too unless a step in flight names it.
static void finish(Scheduler *s, Request *r, FinishReason reason, bool has_token, uint32_t token_id,
                   int64_t now_ns) {
  CHECK(r->status != REQ_FINISHED && reason != FINISH_NONE);
  if (r->status == REQ_RUNNING)
    running_remove(s, r);
  else
    waiting_remove(s, r);
  blocks_release(s->blocks, &r->blocks);
  req_table_remove(&s->table, r->id);
  r->status = REQ_FINISHED;
  r->finish = reason;
  r->finish_ns = now_ns;
  push_event(s, r, has_token, token_id);
  if (r->num_steps_in_flight == 0)
    req_free(r);
  else
    list_push_front(&s->retired, NULL, r);
}

bool sched_abort(Scheduler *s, uint64_t id) {
  Request *r = req_table_get(&s->table, id);
  if (!r) return false;
  finish(s, r, FINISH_ABORT, false, 0, clock_now_ns());
  return true;
}

void sched_abort_all(Scheduler *s) {
  int64_t now_ns = clock_now_ns();
  for (int i = 0; i < s->running_len; i++)
    if (s->running[i]) finish(s, s->running[i], FINISH_ABORT, false, 0, now_ns);
  while (s->waiting_head) finish(s, s->waiting_head, FINISH_ABORT, false, 0, now_ns);
}

const TokenEvent *sched_take_events(Scheduler *s, int *num_events) {
  *num_events = s->num_events;
  s->num_events = 0;
  return s->events;
}

// ---------------------------------------------------------------------------------------------
// Scheduling

// Sends the most recently admitted running request back to the head of the queue, to be
// recomputed (after its blocks still cached, if any). Its placeholders stay: the step in flight
// (async) still delivers them.
static Request *preempt_last(Scheduler *s, SchedOutput *out) {
  CHECK(s->running_len > 0 && !s->running_has_holes);
  Request *r = s->running[s->running_len - 1];
  running_remove(s, r);
  s->running_len--;
  s->running_has_holes = false;
  blocks_release(s->blocks, &r->blocks);
  r->status = REQ_WAITING;
  r->num_computed_tokens = 0;
  r->num_preemptions++;
  s->num_preemptions++;
  waiting_push_front(s, r);
  out->preempted_ids[out->num_preempted++] = r->id;
  return r;
}

// Appends (r, n) to the step and advances r as if the step had run: its computed tokens, and a
// placeholder for the token the step will sample when it reaches the end of r's tokens.
static void add_entry(Scheduler *s, SchedOutput *out, Request *r, int n) {
  SchedEntry *e = &out->entries[out->num_entries++];
  *e = (SchedEntry){.req = r,
                    .num_new_tokens = n,
                    .start_pos = r->num_computed_tokens,
                    .sample_row = -1,
                    .prev_sample_row = -1};
  if (r->num_computed_tokens >= r->num_tokens) {
    // The input is the token the step in flight samples (async): one placeholder, one decode.
    CHECK(r->num_output_placeholders == 1 && n == 1 && r->last_sample_step + 1 == out->step);
    e->prev_sample_row = r->last_sample_row;
  }
  if (e->start_pos < r->num_prefill_tokens) {
    int end = e->start_pos + n < r->num_prefill_tokens ? e->start_pos + n : r->num_prefill_tokens;
    s->num_prompt_tokens += (uint64_t)(end - e->start_pos);
  }
  r->num_computed_tokens += n;
  if (r->num_computed_tokens == r->num_tokens + r->num_output_placeholders) {
    e->sample_row = out->num_samples++;
    r->num_output_placeholders++;
    r->last_sample_row = e->sample_row;
    r->last_sample_step = out->step;
  }
  r->num_steps_in_flight++;
  out->num_tokens += n;
}

void sched_schedule(Scheduler *s, SchedOutput *out) {
  uint64_t max_in_flight = s->config.async_scheduling ? 1 : 0;
  CHECK(s->num_steps_scheduled - s->num_steps_updated <= max_in_flight);
  CHECK(out->capacity == s->config.max_num_seqs);
  out->step = ++s->num_steps_scheduled;
  out->num_entries = out->num_tokens = out->num_samples = out->num_preempted = 0;
  running_compact(s);
  int budget = s->config.max_num_batched_tokens;

  // Running requests first, in admission order.
  for (int i = 0; i < s->running_len && budget > 0; i++) {
    Request *r = s->running[i];
    int num_pending = r->num_tokens + r->num_output_placeholders;
    if (num_pending >= r->max_num_tokens) continue;  // async: the steps in flight finish it
    int n = num_pending - r->num_computed_tokens;
    CHECK(n > 0);
    if (n > budget) n = budget;
    // Release the window blocks this step no longer sees (a hybrid pool), then take blocks,
    // preempting from the back until they fit or r itself was preempted.
    blocks_slide(s->blocks, &r->blocks, r->token_ids, r->num_tokens, r->num_computed_tokens);
    bool preempted_self = false;
    while (!preempted_self && !blocks_grow(s->blocks, &r->blocks, r->num_computed_tokens + n))
      preempted_self = preempt_last(s, out) == r;
    if (preempted_self) break;
    add_entry(s, out, r, n);
    budget -= n;
  }

  // Then waiting requests, first come first served, unless this step had to preempt. Each
  // starts after its longest run of cached full blocks (prefix caching) and computes the rest.
  while (out->num_preempted == 0 && s->waiting_head && budget > 0 &&
         s->num_running < s->config.max_num_seqs) {
    Request *r = s->waiting_head;
    CHECK(r->num_computed_tokens == 0 && r->num_output_placeholders == 0);
    int num_hit_blocks = blocks_find_cached(s->blocks, &r->blocks, r->token_ids, r->num_tokens);
    int num_hit_tokens = num_hit_blocks * s->config.block_size;
    int n = r->num_tokens - num_hit_tokens < budget ? r->num_tokens - num_hit_tokens : budget;
    if (!blocks_admit(s->blocks, &r->blocks, num_hit_blocks, num_hit_tokens + n)) break;
    waiting_remove(s, r);
    r->status = REQ_RUNNING;
    r->num_prefill_tokens = r->num_tokens;
    r->num_computed_tokens = num_hit_tokens;
    s->num_prompt_tokens += (uint64_t)num_hit_tokens;  // vLLM's prompt tokens include hits
    // vLLM's PrefixCacheStats: a recomputed (preempted) request's lookup is not counted.
    if (s->config.enable_prefix_caching && r->num_preemptions == 0) {
      s->num_prefix_cache_queries += (uint64_t)r->num_tokens;
      s->num_prefix_cache_hits += (uint64_t)num_hit_tokens;
    }
    running_push(s, r);
    add_entry(s, out, r, n);
    budget -= n;
  }
}

// ---------------------------------------------------------------------------------------------
// Update

void sched_update(Scheduler *s, const SchedOutput *out, const uint32_t *sampled_ids) {
  CHECK(out->step == s->num_steps_updated + 1);
  s->num_steps_updated++;
  int64_t now_ns = clock_now_ns();
  for (int i = 0; i < out->num_entries; i++) {
    const SchedEntry *e = &out->entries[i];
    Request *r = e->req;
    r->num_steps_in_flight--;
    if (r->status == REQ_FINISHED) {  // stopped or aborted after this step was planned
      if (r->num_steps_in_flight == 0) {
        list_remove(&s->retired, NULL, r);
        req_free(r);
      }
      continue;
    }
    // This step wrote the KV of positions < start_pos + num_new_tokens (all known tokens): their
    // full blocks can be shared now. A request preempted since (async) holds no blocks.
    if (r->status == REQ_RUNNING) {
      CHECK(e->start_pos + e->num_new_tokens <= r->num_tokens);
      blocks_cache(s->blocks, &r->blocks, r->token_ids, e->start_pos + e->num_new_tokens);
    }
    if (e->sample_row < 0) continue;
    // A preempted (now waiting) request still takes the token: it was computed from its KV.
    uint32_t id = sampled_ids[e->sample_row];
    CHECK(r->num_output_placeholders > 0 && r->num_tokens < r->max_num_tokens);
    r->num_output_placeholders--;
    r->token_ids[r->num_tokens++] = id;
    s->num_generation_tokens++;
    if (req_num_output_tokens(r) == 1) r->first_token_ns = now_ns;
    FinishReason reason = req_is_stop_token(r, id)             ? FINISH_STOP
                          : r->num_tokens == r->max_num_tokens ? FINISH_LENGTH
                                                               : FINISH_NONE;
    bool logprobs = r->params.logprobs && out->logprobs;  // r may be freed by finish
    if (reason == FINISH_NONE)
      push_event(s, r, true, id);
    else
      finish(s, r, reason, true, id, now_ns);
    if (logprobs) {
      s->events[s->num_events - 1].has_logprobs = true;
      s->events[s->num_events - 1].logprobs = out->logprobs[e->sample_row];
    }
  }
}

void sched_stats(const Scheduler *s, EngineStats *out) {
  out->num_running = s->num_running;
  out->num_waiting = s->num_waiting;
  out->num_kv_blocks_used = blocks_num_used(s->blocks);
  out->num_kv_blocks = blocks_num_usable(s->blocks);
  out->num_prompt_tokens = s->num_prompt_tokens;
  out->num_generation_tokens = s->num_generation_tokens;
  out->num_preemptions = s->num_preemptions;
  out->prefix_cache_queries = s->num_prefix_cache_queries;
  out->prefix_cache_hits = s->num_prefix_cache_hits;
}
