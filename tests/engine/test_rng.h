// test_rng.h: the engine tests' random numbers: a xorshift64 stream (deterministic from its
// seed, the same on every machine) and arrays of uniform floats. Header-only, for tests.
#ifndef GE_TESTS_TEST_RNG_H
#define GE_TESTS_TEST_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "common/check.h"

typedef struct {
  uint64_t s;  // the seed, then the state; never 0
} Rng;

static inline uint64_t rng_next(Rng *r) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return r->s;
}

// Uniform in [-1, 1).
static inline float rng_float(Rng *r) {
  return (float)((double)(rng_next(r) >> 11) * 0x1p-52 - 1.0);
}

// x[i] uniform in [-scale, scale).
static inline void fill(Rng *r, float *x, size_t n, float scale) {
  for (size_t i = 0; i < n; i++) x[i] = rng_float(r) * scale;
}

// A new array of n uniform floats in [-scale, scale) (free it).
static inline float *random_floats(Rng *r, size_t n, float scale) {
  float *x = xmalloc((n ? n : 1) * sizeof(float));
  fill(r, x, n, scale);
  return x;
}

#endif
