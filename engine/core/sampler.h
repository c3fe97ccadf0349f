// sampler.h: picks the next token from one row of logits: greedy, or temperature with top-k and
// top-p (nucleus), from a per-request seeded generator, so a request with a seed always samples
// the same tokens. Host-side; never allocates per call beyond its reusable scratch.
#ifndef GE_CORE_SAMPLER_H
#define GE_CORE_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  float temperature;  // 0: greedy (argmax, lowest id on ties)
  float top_p;        // (0, 1]; 1: off
  int top_k;          // <= 0: off
} SamplingParams;

// Buckets of probabilities by the 12 high bits of their float (the sign bit is always 0).
#define SAMPLER_BUCKET_SHIFT 20
#define SAMPLER_NUM_BUCKETS (1u << (32 - SAMPLER_BUCKET_SHIFT - 1))

// A per-request random stream (splitmix64-seeded xorshift).
typedef struct {
  uint64_t state;
} SamplerRng;

void sampler_rng_seed(SamplerRng *rng, uint64_t seed);

// Reusable buffers, grown to the vocabulary; zero-initialise, free with sampler_scratch_free.
typedef struct {
  float *probs;        // [cap]
  uint32_t *ids;       // [cap]
  uint32_t *bucket_counts;  // [SAMPLER_NUM_BUCKETS] probabilities per bucket
  double *bucket_mass;      // [SAMPLER_NUM_BUCKETS] their sum
  size_t cap;
} SamplerScratch;

void sampler_scratch_free(SamplerScratch *s);

// The sampled id from logits [vocab_size].
uint32_t sampler_sample(const float *logits, int vocab_size, const SamplingParams *p,
                        SamplerRng *rng, SamplerScratch *scratch);

#endif
