// bf16.h: bfloat16 <-> float32 conversions for the weight loader and the dummy weights. bf16 is
// the top half of a float32, so widening is exact; narrowing rounds to nearest even.
#ifndef GE_MODEL_BF16_H
#define GE_MODEL_BF16_H

#include <stdint.h>
#include <string.h>

static inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

// Round to nearest even; NaN stays a (quiet) NaN.
static inline uint16_t bf16_from_f32(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x0040u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (uint16_t)(bits >> 16);
}

#endif
