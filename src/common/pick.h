// pick.h: choosing an index from a row of floats (a row of logits): the argmax, and the index a
// draw selects from the softmax of the row at a temperature. The engine's host sampler
// (engine/core/sampler.c) and the CPU backend's sample op (engine/backend/cpu/cpu_sample.c)
// both pick through these, so a row gives the same token on either. Pure functions over caller
// memory.
#ifndef GB_COMMON_PICK_H
#define GB_COMMON_PICK_H

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

#endif
