// sampler.h: picks the next token from one row of logits: greedy, or temperature with top-k and
// top-p (nucleus), from a per-request seeded generator, so a request with a seed always samples
// the same tokens. Before that, sampler_process applies what vLLM's sampler applies to the
// logits (logit bias, min_tokens, repetition / frequency / presence penalties, in its order);
// common/pick.h's pick_logprobs gives the raw log-probabilities vLLM returns by default
// (logprobs_mode "raw_logprobs": the model's logits before any processing). Host-side; never
// allocates per call beyond its reusable scratch.
#ifndef GE_CORE_SAMPLER_H
#define GE_CORE_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/pick.h"

typedef struct {
  float temperature;         // 0: greedy (argmax, lowest id on ties)
  float top_p;               // (0, 1]; 1: off
  int top_k;                 // <= 0: off
  float presence_penalty;    // [-2, 2]: subtracted once from each token the output holds
  float frequency_penalty;   // [-2, 2]: subtracted per occurrence in the output
  float repetition_penalty;  // > 0: divides the positive, multiplies the negative logits of
                             // tokens in the prompt or the output; 1 (or 0, unset): off
  int min_tokens;            // stop tokens are masked until this many were generated
} SamplingParams;

// logit_bias: added to one token's logit.
typedef struct {
  uint32_t token_id;
  float bias;
} SamplerBias;

// What processing reads besides the params: the request's tokens, its bias and stop tokens.
typedef struct {
  const uint32_t *prompt_ids;  // [num_prompt_ids] (repetition penalty)
  size_t num_prompt_ids;
  const uint32_t *output_ids;  // [num_generated] the ids sampled so far (penalties); may be NULL
  size_t num_generated;        // when no penalty is on
  const SamplerBias *bias;     // [num_bias]
  size_t num_bias;
  const uint32_t *stop_ids;  // [num_stop_ids] masked (-inf) while num_generated < min_tokens
                             // (ids outside the vocabulary skipped)
  size_t num_stop_ids;
} SamplerInputs;

// A per-request random stream (splitmix64-seeded xorshift).
typedef struct {
  uint64_t state;
} SamplerRng;

void sampler_rng_seed(SamplerRng *rng, uint64_t seed);

// Reusable buffers, grown to the vocabulary; zero-initialise, free with sampler_scratch_free.
typedef struct {
  float *probs;  // [cap]
  void *top;     // pick_top's scratch for rows of cap
  size_t cap;
  uint32_t *counts;  // [vocab_cap] all 0 between calls (penalties count tokens here)
  float *raw;        // [vocab_cap] the unprocessed row, kept when logprobs need it
  size_t vocab_cap;
} SamplerScratch;

void sampler_scratch_free(SamplerScratch *s);

// True when sampler_process would change anything: a penalty, a bias, or min_tokens not reached
// with stop tokens to mask. The common path (none) costs nothing more.
bool sampler_needs_processing(const SamplingParams *p, const SamplerInputs *in);

// Applies to logits [vocab_size] in place, in vLLM's order: logit bias and the min_tokens mask,
// then the repetition, frequency and presence penalties. O(prompt + output + bias) per call.
void sampler_process(float *logits, int vocab_size, const SamplingParams *p,
                     const SamplerInputs *in, SamplerScratch *scratch);

// Copies logits [vocab_size] into the scratch (kept until the next call) and returns the copy.
const float *sampler_keep_raw(const float *logits, int vocab_size, SamplerScratch *scratch);

// The sampled id from logits [vocab_size]: sampler_sample_drawn with sampler_draw(p, rng).
uint32_t sampler_sample(const float *logits, int vocab_size, const SamplingParams *p,
                        SamplerRng *rng, SamplerScratch *scratch);

// The one uniform draw in [0, 1) a sample with p takes from rng (none, and 0, when greedy), so
// the draw can be taken before the logits exist (a device that samples is handed it).
double sampler_draw(const SamplingParams *p, SamplerRng *rng);

// The sampled id from logits [vocab_size] given the draw: greedy (argmax, lowest id on ties),
// or the first id at which the running sum of the probabilities at p's temperature passes draw
// times the kept set's mass (the whole vocabulary in id order; a top-k / top-p kept set most
// probable first).
uint32_t sampler_sample_drawn(const float *logits, int vocab_size, const SamplingParams *p,
                              double draw, SamplerScratch *scratch);

#endif
