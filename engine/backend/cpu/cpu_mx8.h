// cpu_mx8.h: what the two MXFP4 kernels on 8-bit inputs share (cpu_mx8.c, tiles of 16 weight
// rows decoded once per call for many input rows; cpu_mx8row.c, weight rows read in place for a
// few): the code table, the half-scales and the quantization of an input block. Static inline
// functions compiled for AVX-512 VNNI by target attributes, so only code that runs after the
// backend's CPU check may call them. Not for use outside engine/backend/cpu.
#ifndef GE_BACKEND_CPU_CPU_MX8_H
#define GE_BACKEND_CPU_CPU_MX8_H

#include <float.h>
#include <immintrin.h>
#include <stdint.h>

#include "model/q8.h"

#define CPU_MX8_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define CPU_MX8_INLINE static inline __attribute__((always_inline)) CPU_MX8_TARGET

// 2 * e2m1 value + CPU_MX8_OFFSET per code (0 .. 24, exact: vpdpbusd's unsigned operand),
// repeated in each 128-bit lane for vpshufb. A block's sums start at -12 * its input sum.
static const int8_t CPU_MX8_CODES[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};
#define CPU_MX8_OFFSET 12

CPU_MX8_INLINE __m512i cpu_mx8_code_table(void) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)CPU_MX8_CODES));
}

// h = 2^(s - 128) per lane (mxfp4_value(1, s)): half of the block's scale, as the codes are
// twice the e2m1 values. The float with exponent field s - 1, except the two subnormal ones.
CPU_MX8_INLINE __m512 cpu_mx8_half_scale(__m512i s) {
  const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(s, _mm512_set1_epi32(1)), 23);
  const __mmask16 s0 = _mm512_cmpeq_epi32_mask(s, _mm512_setzero_si512());
  const __mmask16 s1 = _mm512_cmpeq_epi32_mask(s, _mm512_set1_epi32(1));
  const __m512i h = _mm512_mask_blend_epi32(s1, normal, _mm512_set1_epi32(0x00400000));  // 2^-127
  return _mm512_castsi512_ps(_mm512_mask_blend_epi32(s0, h, _mm512_set1_epi32(0x00200000)));
}

// Quantizes one 32-column block of an input row: q = x * (127 / max |x|) to nearest even
// (*lo: columns 0 .. 15, *hi: 16 .. 31, as int32 lanes); returns the scale max |x| / 127 (a
// block below the smallest normal float is taken as zeros).  x: [32]
CPU_MX8_INLINE float cpu_mx8_quantize_block(const float *x, __m512i *lo, __m512i *hi) {
  const __m512 a = _mm512_loadu_ps(x), b = _mm512_loadu_ps(x + 16);
  const float m = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
  const __m512 inv = _mm512_set1_ps(m >= FLT_MIN ? (float)Q8_MAX / m : 0.0f);
  *lo = _mm512_cvtps_epi32(_mm512_mul_ps(a, inv));
  *hi = _mm512_cvtps_epi32(_mm512_mul_ps(b, inv));
  return m / (float)Q8_MAX;
}

#endif
