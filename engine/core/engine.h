// engine.h: the serving engine as the HTTP front end sees it: submit requests and abort them from
// any thread (the inbox), and read token events keyed by request id (the outbox). One engine
// thread owns the scheduler, the KV blocks and the request table; nothing here blocks it.
// Plain structs in and out, no callbacks.
#ifndef GE_CORE_ENGINE_H
#define GE_CORE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sampler.h"
#include "dist/runner.h"

typedef struct {
  int max_num_batched_tokens;    // token budget of one step (prefill chunks + decodes)
  int max_num_seqs;              // running requests at most
  int max_model_len;             // prompt + output tokens of one request at most
  int block_size;                // tokens per KV block (16)
  int num_kv_blocks;             // KV capacity = num_kv_blocks * block_size tokens
  bool async_scheduling;         // plan step N+1 while step N executes
  bool enable_prefix_caching;    // share the KV of full blocks with the same token prefix (vLLM v1)
  bool disable_hybrid_kv_cache;  // vLLM's --disable-hybrid-kv-cache-manager: the sliding layers
                                 // keep every position's KV, as the full layers do; otherwise
                                 // only their window's (core/block_manager.h, hybrid pools)
  bool host_sampling;            // sample every row on the host, even where the backend samples
                                 // on its device (backend.h, sample): for comparing the two
  double step_slowdown;          // testing only (> 1: each step spins until it has taken this
                                 // many times its own time; the gate's slowdown test); 0 or 1: off
  const uint32_t *forced_output_ids;  // testing only: output position i of every request is
  size_t num_forced_output_ids;       // forced_output_ids[i] whatever was sampled (the API
                                      // tests' scripted harmony); borrowed; NULL: off
} EngineConfig;

typedef struct {
  const uint32_t *prompt_ids;  // [num_prompt_ids], copied by engine_submit
  size_t num_prompt_ids;
  int max_tokens;  // >= 1
  SamplingParams sampling;
  uint64_t seed;
  bool ignore_eos;                // otherwise <|return|>, <|call|>, <|endoftext|> finish it
  const SamplerBias *logit_bias;  // [num_logit_bias] copied by engine_submit
  size_t num_logit_bias;
  const uint32_t *stop_token_ids;  // [num_stop_token_ids] copied; each finishes the request
  size_t num_stop_token_ids;       // (FINISH_STOP, the token its last), ignore_eos or not
  bool logprobs;                   // events carry the sampled token's logprob
  int num_top_logprobs;            // and this many of the most probable (<= PICK_MAX_LOGPROBS)
} EngineRequestParams;

typedef enum {
  FINISH_NONE,    // more events follow
  FINISH_STOP,    // a stop token (included as the last token)
  FINISH_LENGTH,  // max_tokens or max_model_len reached
  FINISH_ABORT,   // engine_abort, or the engine is stopping
} FinishReason;

typedef struct {
  uint64_t request_id;
  bool has_token;
  uint32_t token_id;           // when has_token
  FinishReason finish;         // != FINISH_NONE on the request's last event
  uint32_t num_prompt_tokens;  // for usage
  uint32_t num_output_tokens;  // generated so far, this token included
  bool has_logprobs;           // when has_token and the request asked for logprobs
  PickLogprobs logprobs;       // the raw logits' (vLLM's default logprobs_mode)
} TokenEvent;

typedef struct {
  int num_running;
  int num_waiting;
  int num_kv_blocks_used;
  int num_kv_blocks;
  uint64_t num_prompt_tokens;      // prefilled so far, prefix-cache hits and recomputation
                                   // included (vLLM's prompt tokens)
  uint64_t num_generation_tokens;  // sampled so far
  uint64_t num_preemptions;
  uint64_t num_steps;
  uint64_t step_time_buckets[16];  // steps by wall time: bucket 0 under 100 us, bucket i in
                                   // [2^(i-1), 2^i) * 100 us, bucket 15 everything longer
  double step_time_sum_s;
  uint64_t prefix_cache_queries;  // prompt tokens looked up in the prefix cache (vLLM's
                                  // prefix_cache_queries); 0 while prefix caching is off
  uint64_t prefix_cache_hits;     // of those, tokens whose KV was found cached
} EngineStats;

typedef struct Engine Engine;

// Whether an engine of config on a model of model_config keeps a hybrid KV cache (a model with
// sliding and full layers, unless config disables it): num_kv_blocks then counts blocks of half
// the layers (runner_kv_bytes_per_token(runner, true)), one of them the null block.
bool engine_hybrid_kv(const EngineConfig *config, const GptOssConfig *model_config);

// Runs the model on runner (which it borrows) and allocates its KV cache from config. False with
// a message.
bool engine_create(Engine **out, const EngineConfig *config, Runner *runner, char *err,
                   size_t err_size);
// Starts the engine thread.
void engine_start(Engine *e);

// Queues a request (thread-safe). Returns its id (> 0), or 0 with err when it can never run:
// an empty prompt, prompt + max_tokens beyond max_model_len, more KV than the whole cache, an id
// (prompt, logit_bias, stop_token_ids) outside the vocabulary, min_tokens beyond max_tokens,
// more than PICK_MAX_LOGPROBS top logprobs. The caller turns that into HTTP 400.
uint64_t engine_submit(Engine *e, const EngineRequestParams *p, char *err, size_t err_size);
// Aborts a request (thread-safe; unknown or finished ids are ignored). Its blocks are freed and
// a FINISH_ABORT event follows.
void engine_abort(Engine *e, uint64_t request_id);

// Moves up to max_events events into out, waiting up to timeout_ns for the first. One consumer.
size_t engine_poll_events(Engine *e, TokenEvent *out, size_t max_events, int64_t timeout_ns);

// A consistent snapshot for /metrics (thread-safe).
void engine_stats(Engine *e, EngineStats *out);

// Stops the engine thread: in-flight requests get FINISH_ABORT. Then engine_destroy frees it.
void engine_stop(Engine *e);
void engine_destroy(Engine *e);

#endif
