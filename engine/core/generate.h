// generate.h: offline generation of one sequence (`gptoss-engine generate`): prefill the prompt
// in one forward call, then decode token by token with the sampler until a stop id or
// max_tokens. Allocates the runner's KV cache for the sequence and frees it after; no
// scheduler, no HTTP.
#ifndef GE_CORE_GENERATE_H
#define GE_CORE_GENERATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sampler.h"
#include "dist/runner.h"
#include "text/token_ids.h"

typedef struct {
  const uint32_t *prompt_ids;  // [num_prompt_ids]
  size_t num_prompt_ids;
  int max_tokens;
  SamplingParams sampling;
  uint64_t seed;
  bool ignore_eos;             // otherwise <|return|>, <|call|> and <|endoftext|> stop
  float *prompt_logits;        // NULL, or [num_prompt_ids, vocab] filled from the prefill
  const RouteProbe *prefill_probe;  // NULL, or router diagnostics of the prefill (a single
                                    // host-memory rank: runner_set_route_probe)
} GenerateRequest;

typedef struct {
  TokenIds output_ids;
  const char *finish_reason;  // "stop" or "length"
} GenerateResult;

// Needs runner_max_num_tokens >= num_prompt_ids. False with a message (empty prompt, an id
// outside the vocabulary, a context longer than the model's, no memory for the KV cache).
bool generate_run(Runner *runner, const GenerateRequest *r, GenerateResult *out, char *err,
                  size_t err_size);

#endif
