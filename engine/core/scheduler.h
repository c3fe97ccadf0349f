// scheduler.h: continuous batching with chunked prefill, vLLM v1 semantics (spec vllm-bench.md
// section 8). Each step serves the running requests first, in admission order (one decode token
// each, or the next chunk of a prefill in progress), then, if nothing was preempted, admits
// waiting requests first-come-first-served with prefill chunks, within max_num_batched_tokens
// tokens and max_num_seqs running requests. KV blocks are taken as tokens reach them (a hybrid
// pool, core/block_manager.h: the sliding layers' blocks are released as they leave the window
// of the request's next token); when the pool runs dry the most recently admitted running
// request is preempted: its blocks are freed, it goes back to the head of the queue and is
// recomputed later.
//
// Prefix caching (config.enable_prefix_caching, vLLM v1's automatic prefix caching): a request
// admitted from the queue, new or preempted, first takes its longest run of cached full blocks
// from the BlockManager (never its last token) and starts its prefill after them
// (num_computed_tokens = the tokens hit). A block is offered to the cache in the sched_update
// of the step that wrote its KV, so no request ever reads a block whose KV a step still has to
// write (in async mode step N+1, planned before update N, cannot hit the blocks step N fills);
// the one exception, a hybrid pool's window block released when step N+1 is planned, is
// offered then (core/block_manager.h, blocks_slide), when only steps after N can hit it. Counted as
// vLLM's PrefixCacheStats: per admitted request that was never preempted, its tokens (queries) and
// the tokens hit.
//
// Owns the requests handed to it (waiting, running, and finished ones a step in flight still
// names), the id table and the token events. Pure host bookkeeping over the BlockManager: it
// never runs the model, never samples, never blocks and takes no locks (the engine thread owns
// it). Per-step cost is O(running requests + scheduled tokens); nothing allocates per token.
//
// The engine loop, synchronous (async_scheduling off):
//   drain the inbox: sched_add (requests from req_create), sched_abort
//   sched_schedule(s, &out)
//   batch_build (core/batch_builder.h), model_forward, sample one id per row 0 .. num_samples-1
//     (the entry with sample_row k gives the request, its sampling params and rng)
//   sched_update(s, &out, sampled_ids)
//   sched_take_events -> outbox
// Every SchedOutput goes to sched_update exactly once, in schedule order, even an empty one.
//
// Asynchronous (async_scheduling on): step N+1 is scheduled and built while step N executes,
// so at most one step is in flight when sched_schedule runs (the engine keeps two SchedOutputs
// and two BatchBuilders and alternates):
//   schedule N+1, build N+1
//   wait for step N's sampled ids; batch_patch_tokens(N+1's builder, N's ids) (or the same
//     gather on the device), then launch N+1
//   sched_update(N), events
// A decode scheduled before its input token is known counts a placeholder (the request's
// num_output_placeholders): its SchedEntry names the row of the previous step's samples that
// holds that token (prev_sample_row), and sched_update resolves placeholders in step order. A
// request that stops at step N may already sit in step N+1: its N+1 output is dropped (one
// wasted slot, as in vLLM), and a request whose tokens in flight already reach max_tokens is
// not scheduled again. Greedy outputs are the same with and without async scheduling.
// Blocks freed at update N can be handed out in step N+2 while step N+1, which may still write
// the finished request's KV into them, has not run, and window blocks released when step N+1
// is planned can be handed out in step N+1 while step N, which still reads them, has not run:
// steps must execute in order (one stream).
#ifndef GE_CORE_SCHEDULER_H
#define GE_CORE_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/block_manager.h"
#include "core/engine.h"
#include "core/request.h"
#include "core/request_table.h"

// One request's share of a step.
typedef struct {
  Request *req;         // valid until sched_update takes this output, even if it finishes first
  int num_new_tokens;   // tokens fed this step: positions start_pos .. start_pos + num_new_tokens
  int start_pos;        // the request's num_computed_tokens before this step
  int sample_row;       // row of this step's sampled ids for this request; -1: a prefill chunk
                        // short of the end of the tokens samples nothing
  int prev_sample_row;  // async only: the input token is the previous step's sampled id at this
                        // row (not known when scheduled); -1: every input token is known
} SchedEntry;

// One step's plan. Reusable: sched_output_init sizes it once for max_num_seqs requests.
typedef struct {
  uint64_t step;        // 1, 2, ... in schedule order
  SchedEntry *entries;  // [num_entries] batch order: running requests, then new admissions
  int num_entries;
  int num_tokens;           // sum of num_new_tokens, <= max_num_batched_tokens
  int num_samples;          // entries that sample; their sample_row are 0 .. num_samples - 1
  uint64_t *preempted_ids;  // [num_preempted] sent back to the waiting queue this step
  int num_preempted;
  int capacity;                  // entries and preempted_ids hold max_num_seqs each
  const PickLogprobs *logprobs;  // [capacity] by sample_row, filled by whoever runs the step,
                                 // for requests that ask for logprobs; NULL: none
} SchedOutput;

typedef struct {
  EngineConfig config;
  BlockManager *blocks;
  Request **running;  // [max_num_seqs] admission order; NULL holes until compacted
  int running_len;    // slots of running in use, holes included
  int num_running;
  bool running_has_holes;
  Request *waiting_head;  // FCFS queue through Request.prev/next; preempted ones at the head
  Request *waiting_tail;
  int num_waiting;
  Request *retired;    // finished, but a step in flight still names them
  RequestTable table;  // id -> waiting or running request
  TokenEvent *events;  // [events_capacity] since the last sched_take_events
  int num_events;
  int events_capacity;
  uint64_t num_steps_scheduled;
  uint64_t num_steps_updated;
  uint64_t num_prompt_tokens;      // prefilled, recomputation included
  uint64_t num_generation_tokens;  // sampled tokens appended to requests
  uint64_t num_preemptions;
  uint64_t num_prefix_cache_queries;  // tokens of admitted, never preempted requests
  uint64_t num_prefix_cache_hits;     // of those, tokens found in the prefix cache
} Scheduler;

// The config is copied; blocks (sized from the same config, caching as
// config.enable_prefix_caching) stays the caller's.
void sched_init(Scheduler *s, const EngineConfig *config, BlockManager *blocks);
// Frees every request the scheduler owns (SchedOutputs still in flight become invalid).
void sched_free(Scheduler *s);

// Admission check, from any thread (reads only what sched_init set): false with a message that
// the caller turns into HTTP 400 when the request can never run: an empty prompt, max_tokens
// < 1, a prompt or prompt + max_tokens beyond max_model_len, or more KV blocks than the whole
// cache. The model's vocabulary is the caller's to check.
bool sched_check_request(const Scheduler *s, const EngineRequestParams *p, char *err,
                         size_t err_size);

// Queues r (from req_create, after sched_check_request) at the tail; the scheduler owns it now.
void sched_add(Scheduler *s, Request *r);

// Aborts a waiting or running request: its blocks are freed and a FINISH_ABORT event queued.
// False (nothing happens) when the id is unknown or already finished.
bool sched_abort(Scheduler *s, uint64_t id);
// Aborts every waiting and running request (engine stop).
void sched_abort_all(Scheduler *s);

void sched_output_init(SchedOutput *out, const Scheduler *s);
void sched_output_free(SchedOutput *out);

// Plans the next step into out. Advances the scheduled requests' num_computed_tokens and
// placeholders at once, so the next step can be planned before this one's output is known.
void sched_schedule(Scheduler *s, SchedOutput *out);

// Takes a step's output: sampled_ids [out->num_samples] by sample_row. Offers the full blocks
// the step wrote to the prefix cache, appends each token to its request, finishes requests on a
// stop id (200002, 200012, 199999 unless ignore_eos) or at max_tokens (prompt + max_tokens <=
// max_model_len by admission), frees their blocks, and queues one event per token (the
// finishing one carries the reason).
void sched_update(Scheduler *s, const SchedOutput *out, const uint32_t *sampled_ids);

// The events queued since the last call ([*num_events], valid until the next sched_ call).
const TokenEvent *sched_take_events(Scheduler *s, int *num_events);

// Fills the scheduler's fields of EngineStats: num_running, num_waiting, num_kv_blocks_used,
// num_kv_blocks, num_prompt_tokens, num_generation_tokens, num_preemptions, prefix_cache_queries
// and prefix_cache_hits. The step count and step times are the engine's.
void sched_stats(const Scheduler *s, EngineStats *out);

#endif
