// pick.h: choosing an index from a row of floats (a row of logits): the argmax, and the index a
// draw selects from the softmax of the row at a temperature, over the whole row or over its
// top-k / top-p kept set, and the row's log-softmax for logprobs. The engine's host sampler
// (engine/core/sampler.c) and the CPU backend's sample op (engine/backend/cpu/cpu_sample.c)
// both pick through these, so a row gives the same token on either. Pure functions over caller
// memory.
#ifndef GB_COMMON_PICK_H
#define GB_COMMON_PICK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// The index of the largest of x[0 .. n), the lowest on ties (-0 == +0); NaNs never win (a NaN
// at index 0 gives 0).
uint32_t pick_argmax(const float *x, int n);

// probs[i] = exp((x[i] - max) / temperature) / (their sum), temperature > 0.
// x, probs: [n]
void pick_softmax(const float *x, int n, float temperature, float *probs);

// The first index, in index order, at which the running sum of probs passes draw (in [0, 1))
// times their total; the last index when rounding leaves none.  probs: [n]
uint32_t pick_drawn(const float *probs, int n, double draw);

// True when top_k and top_p keep all n entries (top_k <= 0 or >= n, and top_p 1): pick_top is
// then pick_drawn.
bool pick_keeps_all(int n, int top_k, float top_p);

// vLLM's max_logprobs default.
enum { PICK_MAX_LOGPROBS = 20 };

// The sampled token's log-probability and the num_top most probable (descending, lower id
// first on ties), all of the raw logits' log-softmax.
typedef struct {
  float logprob;
  int num_top;
  uint32_t top_ids[PICK_MAX_LOGPROBS];
  float top_logprobs[PICK_MAX_LOGPROBS];
} PickLogprobs;

// The log-softmax of logits [n] (the raw row): its num_top (0 .. PICK_MAX_LOGPROBS) most
// probable into out (NaNs skipped), the log normaliser returned; the sampled id's logprob is
// then logits[id] - the normaliser.
float pick_logprobs(const float *logits, int n, int num_top, PickLogprobs *out);

// Bytes of scratch pick_top needs for rows of n entries.
size_t pick_top_scratch_bytes(int n);

// The index a draw selects from the kept set of probs (normalised, [n]), which is: the top_k most
// probable (top_k <= 0 or >= n: all), then the smallest run of those, most probable first (lower
// index first on ties), whose share of their mass reaches top_p (1: all of them), as vLLM keeps
// them; the pick is the first, in that order, at which the running sum passes draw times the
// kept set's mass (the last when rounding leaves none). scratch: pick_top_scratch_bytes(n).
// Exact without sorting the row: probabilities are bucketed by the high bits of their float
// (monotonic for positive floats), and only the buckets that can hold the kept set are sorted.
uint32_t pick_top(const float *probs, int n, int top_k, float top_p, double draw, void *scratch);

#endif
