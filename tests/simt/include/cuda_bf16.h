// cuda_bf16.h (tests/simt): bf16 and bf16x2 on the host, rounding to nearest even as the GPU does.
#ifndef GE_TESTS_SIMT_CUDA_BF16_H
#define GE_TESTS_SIMT_CUDA_BF16_H
#include "cuda_runtime.h"
struct __nv_bfloat16;
static inline __nv_bfloat16 emu_bf16_raw(uint16_t b);
static inline float emu_bf16_float(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }
static inline uint16_t emu_bf16_round(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
struct __nv_bfloat16 {
  uint16_t b;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : b(emu_bf16_round(f)) {}
  explicit operator float() const { return emu_bf16_float(b); }
};
static inline __nv_bfloat16 emu_bf16_raw(uint16_t b) {
  __nv_bfloat16 h;
  h.b = b;
  return h;
}
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
static inline float __bfloat162float(__nv_bfloat16 h) { return emu_bf16_float(h.b); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return emu_bf16_raw(emu_bf16_round(f)); }
static inline __nv_bfloat16 __float2bfloat16(float f) { return __float2bfloat16_rn(f); }
static inline float2 __bfloat1622float2(__nv_bfloat162 h) {
  return float2{__bfloat162float(h.x), __bfloat162float(h.y)};
}
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
  return __nv_bfloat162{__float2bfloat16_rn(a), __float2bfloat16_rn(b)};
}
static inline __nv_bfloat162 __float22bfloat162_rn(float2 v) {
  return __floats2bfloat162_rn(v.x, v.y);
}
static inline __nv_bfloat162 __hmul2(__nv_bfloat162 a, __nv_bfloat162 b) {
  return __floats2bfloat162_rn(__bfloat162float(a.x) * __bfloat162float(b.x),
                               __bfloat162float(a.y) * __bfloat162float(b.y));
}

#endif
