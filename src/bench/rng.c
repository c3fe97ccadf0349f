// rng.c: xoshiro256** (Blackman and Vigna, 2018) and the variates built on it. Pure arithmetic:
// no global state, no clock, no I/O.
#include "bench/rng.h"

#include <math.h>
#include <string.h>

#include "common/check.h"

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void rng_seed(Rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_next_u64(Rng *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

uint64_t rng_below(Rng *r, uint64_t n) {
  CHECK(n > 0);
  unsigned __int128 m = (unsigned __int128)rng_next_u64(r) * n;
  if ((uint64_t)m < n) {
    uint64_t threshold = -n % n;  // 2^64 mod n
    while ((uint64_t)m < threshold) m = (unsigned __int128)rng_next_u64(r) * n;
  }
  return (uint64_t)(m >> 64);
}

int64_t rng_range(Rng *r, int64_t lo, int64_t hi) {
  CHECK(lo <= hi);
  if (lo == hi) return lo;
  uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;  // 0 only for the full 64-bit range
  uint64_t offset = span ? rng_below(r, span) : rng_next_u64(r);
  return (int64_t)((uint64_t)lo + offset);
}

double rng_double(Rng *r) { return (double)(rng_next_u64(r) >> 11) * 0x1.0p-53; }

double rng_normal(Rng *r) {
  double u1 = 1.0 - rng_double(r);  // (0, 1]: log stays finite
  double u2 = rng_double(r);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double rng_exponential(Rng *r) { return -log(1.0 - rng_double(r)); }

double rng_gamma(Rng *r, double shape, double scale) {
  CHECK(shape > 0 && scale > 0);
  if (shape < 1.0) {
    double u = 1.0 - rng_double(r);
    return rng_gamma(r, shape + 1.0, scale) * pow(u, 1.0 / shape);
  }
  double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = rng_normal(r);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    double u = rng_double(r);
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * scale;
    if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v * scale;
  }
}

static void swap_bytes(unsigned char *a, unsigned char *b, size_t size) {
  unsigned char tmp[64];
  while (size > 0) {
    size_t n = size < sizeof tmp ? size : sizeof tmp;
    memcpy(tmp, a, n);
    memcpy(a, b, n);
    memcpy(b, tmp, n);
    a += n, b += n, size -= n;
  }
}

void rng_shuffle(Rng *r, void *base, size_t num, size_t size) {
  unsigned char *bytes = base;
  for (size_t i = num; i > 1; i--) {
    size_t j = (size_t)rng_below(r, i);
    if (j != i - 1) swap_bytes(bytes + j * size, bytes + (i - 1) * size, size);
  }
}
