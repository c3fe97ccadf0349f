// sampler.c: greedy / temperature / top-k / top-p sampling over a vocabulary-sized row. Top-k and
// top-p avoid sorting the whole vocabulary: probabilities are bucketed by the high bits of their
// float representation (monotonic for positive floats), only the buckets that can hold the kept
// set are sorted, and the kept set is exact. The argmax, the softmax and the draw over the whole
// vocabulary are common/pick.h's, which the CPU backend's sample op shares.
#include "core/sampler.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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
  free(s->ids);
  free(s->bucket_counts);
  free(s->bucket_mass);
  free(s->counts);
  free(s->raw);
  *s = (SamplerScratch){0};
}

static void scratch_reserve(SamplerScratch *s, size_t n) {
  if (!s->bucket_counts) {
    s->bucket_counts = xmalloc(SAMPLER_NUM_BUCKETS * sizeof *s->bucket_counts);
    s->bucket_mass = xmalloc(SAMPLER_NUM_BUCKETS * sizeof *s->bucket_mass);
  }
  if (n <= s->cap) return;
  s->probs = xrealloc(s->probs, n * sizeof *s->probs);
  s->ids = xrealloc(s->ids, n * sizeof *s->ids);
  s->cap = n;
}

static uint32_t bucket_of(float p) {
  uint32_t bits;
  memcpy(&bits, &p, sizeof bits);
  return bits >> SAMPLER_BUCKET_SHIFT;
}

static int by_prob_desc(const void *a, const void *b, void *probs) {
  float pa = ((const float *)probs)[*(const uint32_t *)a];
  float pb = ((const float *)probs)[*(const uint32_t *)b];
  if (pa != pb) return pa < pb ? 1 : -1;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;  // lower id first on ties
}

// Fills s->ids with the ids of the kept set in descending probability and returns its size:
// the top_k most probable, then (as vLLM does) the smallest prefix of those whose share of
// their mass reaches top_p. probs [n] are normalised.
static size_t kept_set(SamplerScratch *s, int n, int top_k, float top_p) {
  const float *probs = s->probs;
  uint32_t *counts = s->bucket_counts;
  double *mass = s->bucket_mass;
  memset(counts, 0, SAMPLER_NUM_BUCKETS * sizeof *counts);
  memset(mass, 0, SAMPLER_NUM_BUCKETS * sizeof *mass);
  for (int i = 0; i < n; i++) {
    counts[bucket_of(probs[i])]++;
    mass[bucket_of(probs[i])] += probs[i];
  }
  // Walk buckets from the most probable until they hold the top k (with top-k) or top_p of the
  // mass (without): that bucket and those above it hold the kept set.
  bool has_k = top_k > 0 && top_k < n;
  size_t k_limit = has_k ? (size_t)top_k : (size_t)n;
  size_t num_above = 0;
  double mass_above = 0;
  int64_t boundary = SAMPLER_NUM_BUCKETS - 1;
  for (; boundary >= 0; boundary--) {
    num_above += counts[boundary];
    mass_above += mass[boundary];
    if (has_k ? num_above >= k_limit : mass_above >= top_p) break;
  }
  if (boundary < 0) boundary = 0;
  size_t num = 0;
  for (int i = 0; i < n; i++)
    if (bucket_of(probs[i]) >= (uint32_t)boundary) s->ids[num++] = (uint32_t)i;
  qsort_r(s->ids, num, sizeof *s->ids, by_prob_desc, (void *)probs);
  if (num > k_limit) num = k_limit;
  double top_k_mass = 0;
  for (size_t i = 0; i < num; i++) top_k_mass += probs[s->ids[i]];
  size_t keep = 0;
  double cumulative = 0;
  while (keep < num) {
    cumulative += probs[s->ids[keep++]];
    if (cumulative >= top_p * top_k_mass) break;
  }
  return keep;
}

double sampler_draw(const SamplingParams *p, SamplerRng *rng) {
  return p->temperature <= 0 ? 0 : rng_uniform(rng);
}

bool sampler_whole_vocabulary(const SamplingParams *p, int vocab_size) {
  return p->temperature <= 0 || ((p->top_k <= 0 || p->top_k >= vocab_size) && !(p->top_p < 1.0f));
}

uint32_t sampler_sample_drawn(const float *logits, int vocab_size, const SamplingParams *p,
                              double draw, SamplerScratch *s) {
  if (p->temperature <= 0) return pick_argmax(logits, vocab_size);
  scratch_reserve(s, (size_t)vocab_size);
  pick_softmax(logits, vocab_size, p->temperature, s->probs);
  if (sampler_whole_vocabulary(p, vocab_size)) return pick_drawn(s->probs, vocab_size, draw);
  const size_t num = kept_set(s, vocab_size, p->top_k, p->top_p);
  double kept_mass = 0;
  for (size_t i = 0; i < num; i++) kept_mass += s->probs[s->ids[i]];
  double u = draw * kept_mass;
  for (size_t i = 0; i < num; i++) {
    u -= s->probs[s->ids[i]];
    if (u < 0) return s->ids[i];
  }
  return s->ids[num - 1];  // rounding at the end
}

uint32_t sampler_sample(const float *logits, int vocab_size, const SamplingParams *p,
                        SamplerRng *rng, SamplerScratch *s) {
  return sampler_sample_drawn(logits, vocab_size, p, sampler_draw(p, rng), s);
}
