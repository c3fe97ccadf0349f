// sampler.c: greedy / temperature / top-k / top-p sampling over a vocabulary-sized row. The
// argmax, the softmax and the draw over the whole vocabulary or over a top-k / top-p kept set are
// common/pick.h's, which the CPU backend's sample op shares.
#include "core/sampler.h"

#include <stdlib.h>

#include "common/check.h"
#include "common/pick.h"

void sampler_rng_seed(SamplerRng *rng, uint64_t seed) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull;  // splitmix64
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  rng->state = (z ^ (z >> 31)) | 1;
}

// Uniform in [0, 1) with 53 random bits (xorshift64*).
static double rng_uniform(SamplerRng *rng) {
  uint64_t x = rng->state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  rng->state = x;
  return (double)((x * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53;
}

void sampler_scratch_free(SamplerScratch *s) {
  free(s->probs);
  free(s->top);
  free(s->counts);
  free(s->raw);
  *s = (SamplerScratch){0};
}

static void scratch_reserve(SamplerScratch *s, size_t n) {
  if (n <= s->cap) return;
  s->probs = xrealloc(s->probs, n * sizeof *s->probs);
  s->top = xrealloc(s->top, pick_top_scratch_bytes((int)n));
  s->cap = n;
}

double sampler_draw(const SamplingParams *p, SamplerRng *rng) {
  return p->temperature <= 0 ? 0 : rng_uniform(rng);
}

uint32_t sampler_sample_drawn(const float *logits, int vocab_size, const SamplingParams *p,
                              double draw, SamplerScratch *s) {
  if (p->temperature <= 0) return pick_argmax(logits, vocab_size);
  scratch_reserve(s, (size_t)vocab_size);
  pick_softmax(logits, vocab_size, p->temperature, s->probs);
  return pick_top(s->probs, vocab_size, p->top_k, p->top_p, draw, s->top);
}

uint32_t sampler_sample(const float *logits, int vocab_size, const SamplingParams *p,
                        SamplerRng *rng, SamplerScratch *s) {
  return sampler_sample_drawn(logits, vocab_size, p, sampler_draw(p, rng), s);
}
