// request.h: the engine-side request: its parameters, its tokens (prompt then output), how many
// of them have KV (num_computed_tokens), the tokens sampled but not yet seen (async
// placeholders), its KV block table, sampler stream and state (the ids it sampled, for the
// penalties; its stop tokens) and timing. Plain data that the scheduler
// advances; it schedules nothing itself. req_create and req_free may run on any thread; once
// handed to the scheduler (sched_add) a request belongs to the engine thread.
#ifndef GE_CORE_REQUEST_H
#define GE_CORE_REQUEST_H

#include <stdint.h>

#include "core/block_manager.h"
#include "core/engine.h"
#include "core/sampler.h"

typedef enum {
  REQ_WAITING,   // queued, or preempted: no KV blocks
  REQ_RUNNING,   // admitted: its KV blocks cover num_computed_tokens
  REQ_FINISHED,  // stopped or aborted; blocks freed, waits only for in-flight steps to drop it
} RequestStatus;

typedef struct Request Request;
struct Request {
  // What every step reads first (the first cache lines).
  uint64_t id;
  uint32_t *token_ids;  // [max_num_tokens] prompt, then output: the first num_tokens known
  BlockTable blocks;
  int num_tokens;  // prompt + output tokens known
  int num_prompt_tokens;
  int max_num_tokens;           // num_prompt_tokens + params.max_tokens
  int num_computed_tokens;      // tokens whose KV is written, or will be by steps in flight
  int num_output_placeholders;  // tokens scheduled steps will sample, not yet in token_ids
  int num_prefill_tokens;       // tokens to prefill since admission (prompt, or all on recompute)
  RequestStatus status;
  FinishReason finish;
  // scheduler bookkeeping
  int running_index;        // slot in the scheduler's running array while REQ_RUNNING
  int num_steps_in_flight;  // scheduled steps whose output sched_update has not taken yet
  int last_sample_row;      // row of this request's sample in the last step that sampled it
  int num_preemptions;
  uint64_t last_sample_step;   // that step's number
  Request *prev, *next;        // the waiting queue, or the list of finished requests in flight
  EngineRequestParams params;  // params.prompt_ids points into token_ids
  SamplerRng rng;
  // sampling state: run_step's alone (the executor thread in async mode), so it never waits for
  // sched_update to learn a sampled id
  uint32_t *sampled_ids;  // [params.max_tokens] with a penalty on: each id sampled; else NULL
  int num_sampled;        // ids sampled so far (min_tokens counts these)
  uint32_t *stop_ids;     // [num_stop_ids] the harmony stop tokens, then stop_token_ids
  int num_stop_ids;
  // timing (clock_now_ns)
  int64_t arrival_ns;      // req_create
  int64_t first_token_ns;  // the first output token reached sched_update
  int64_t finish_ns;       // finished or aborted
};

// A copy of p (prompt ids, logit bias and stop ids included) as a WAITING request; p must have
// passed sched_check_request. One allocation, sized once for num_prompt_ids + max_tokens tokens
// (and window block ids too, for a hybrid block pool: core/block_manager.h).
Request *req_create(uint64_t id, const EngineRequestParams *p, int block_size, bool hybrid_kv);
void req_free(Request *r);

// Whether id finishes r: a harmony stop token (unless ignore_eos) or one of its stop_token_ids.
bool req_is_stop_token(const Request *r, uint32_t id);

// What sampler_process reads for r's next token; ids sampled so far come from run_step's own
// record, never from token_ids (which sched_update fills, possibly later).
SamplerInputs req_sampler_inputs(const Request *r);

// Records the id run_step sampled for r.
void req_record_sample(Request *r, uint32_t id);

static inline int req_num_output_tokens(const Request *r) {
  return r->num_tokens - r->num_prompt_tokens;
}

#endif
