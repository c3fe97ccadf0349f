// rng.h: the load generator's deterministic pseudo-random numbers: xoshiro256** seeded through
// splitmix64, with uniform integers and doubles, normal, exponential and gamma variates, and a
// Fisher-Yates shuffle. Same seed, same sequence, on every machine. It does not reproduce
// numpy's or CPython's streams (vLLM's), and it is not for anything secret.
#ifndef GB_BENCH_RNG_H
#define GB_BENCH_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t s[4];  // xoshiro256** state, never all zero
} Rng;

// The state is four successive splitmix64 outputs of seed (any seed, 0 included).
void rng_seed(Rng *r, uint64_t seed);

uint64_t rng_next_u64(Rng *r);

// Uniform in [0, n), without modulo bias (Lemire's multiply-and-reject). n must be > 0.
uint64_t rng_below(Rng *r, uint64_t n);

// Uniform in [lo, hi], both inclusive. Returns lo without consuming a draw when lo == hi.
int64_t rng_range(Rng *r, int64_t lo, int64_t hi);

// Uniform in [0, 1) with 53 random bits.
double rng_double(Rng *r);

// Standard normal (Box-Muller, one value per two uniforms, nothing cached).
double rng_normal(Rng *r);

// Exponential with mean 1.
double rng_exponential(Rng *r);

// Gamma(shape, scale), mean shape*scale, variance shape*scale^2 (Marsaglia-Tsang 2000; for
// shape < 1 a Gamma(shape+1) draw times U^(1/shape)). shape and scale must be > 0.
double rng_gamma(Rng *r, double shape, double scale);

// Shuffles num elements of size bytes each in place; every permutation equally likely.
void rng_shuffle(Rng *r, void *base, size_t num, size_t size);

#endif
