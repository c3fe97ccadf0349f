// weights_dummy_values.h: one element of a dummy tensor (weights_dummy.h's scheme) as a function
// of the tensor's law and the element's index alone, for the host generator (weights_dummy.c)
// and the CUDA backend's (cuda_dummy.cu), so that both give the same bytes. Compiles as C and as
// CUDA (host and device). Pure functions.
#ifndef GE_MODEL_WEIGHTS_DUMMY_VALUES_H
#define GE_MODEL_WEIGHTS_DUMMY_VALUES_H

#include <stdint.h>

#ifdef __CUDACC__
#define DUMMY_FN static inline __host__ __device__
#else
#define DUMMY_FN static inline
#endif

typedef enum {
  DUMMY_BLOCK_BYTES,  // MXFP4 blocks: uniformly random bytes
  DUMMY_SCALES,       // MXFP4 scales: scale_center - 1, + 0 or + 1
  DUMMY_FLOATS,       // uniform in [center - half_width, center + half_width], rounded to bf16
} WeightsDummyKind;

// A checkpoint tensor's law (weights_dummy_law).
typedef struct {
  uint64_t key;  // the tensor's stream key: mix64(seed ^ FNV-1a(its name))
  WeightsDummyKind kind;
  double center, half_width;  // DUMMY_FLOATS
  int scale_center;           // DUMMY_SCALES
} WeightsDummyLaw;

// splitmix64's output function.
DUMMY_FN uint64_t dummy_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The k-th random word of the stream key.
DUMMY_FN uint64_t dummy_word(uint64_t key, int64_t k) {
  return dummy_mix64(key + (uint64_t)(k + 1) * 0x9e3779b97f4a7c15ull);
}

// Byte k of an MXFP4 blocks tensor: byte k % 8 of word k / 8.
DUMMY_FN uint8_t dummy_block_byte(const WeightsDummyLaw *law, int64_t k) {
  return (uint8_t)(dummy_word(law->key, k / 8) >> (8 * (k % 8)));
}

// Scale byte k: from word k, within 1 .. 254.
DUMMY_FN uint8_t dummy_scale(const WeightsDummyLaw *law, int64_t k) {
  const int s = law->scale_center - 1 + (int)(dummy_word(law->key, k) % 3);
  return (uint8_t)(s < 1 ? 1 : s > 254 ? 254 : s);
}

// Float element k before its rounding to bf16: center + half_width x a uniform draw in [-1, 1)
// with 53 random bits, in double (never contracted into a fused multiply-add: the host compiles
// with -ffp-contract=off, the device rounds each operation), then to float.
DUMMY_FN float dummy_float(const WeightsDummyLaw *law, int64_t k) {
  const double u = (double)(dummy_word(law->key, k) >> 11) * 0x1.0p-52 - 1.0;
#ifdef __CUDA_ARCH__
  return (float)__dadd_rn(law->center, __dmul_rn(law->half_width, u));
#else
  return (float)(law->center + law->half_width * u);
#endif
}

#endif
