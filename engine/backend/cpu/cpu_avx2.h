// cpu_avx2.h: small AVX2 helpers the CPU backend's AVX2 kernels share (cpu_q8avx2.c,
// cpu_rowsavx2.c, cpu_attn256.c), for CPUs with AVX2 and FMA but not AVX-512: int8 dot products
// of 32 bytes by vpmaddubsw with the sign of one operand moved onto the other (AVX2 has no
// vpdpbusd), a vector exp, float lane sums, and input rows quantized as the AVX-512 kernels
// quantize them. Static inline functions
// compiled for AVX2 by target attributes, so only code that runs after the backend's CPU check may
// call them. Not for use outside engine/backend/cpu.
#ifndef GE_BACKEND_CPU_CPU_AVX2_H
#define GE_BACKEND_CPU_CPU_AVX2_H

#include <immintrin.h>
#include <stdint.h>

#include "backend/cpu/cpu_exp.h"

#define CPU_AVX2_TARGET __attribute__((target("avx2,fma")))
#define CPU_AVX2_INLINE static inline __attribute__((always_inline)) CPU_AVX2_TARGET

// acc + per int32 lane the sum of its 4 byte products w * x (w, x: signed bytes, x never -128,
// |w| * |x| * 2 below 2^15): vpmaddubsw takes |x| as its unsigned operand and w with x's sign.
CPU_AVX2_INLINE __m256i cpu_avx2_dot4(__m256i acc, __m256i w, __m256i x) {
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(x), _mm256_sign_epi8(w, x));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

// e^x per lane, within 2 ulp of expf (cpu_exp.h's constants and series, as cpu_avx512.h's
// cpu_exp512), times 2^n as two powers of two of at most half n each (AVX2 has no vscalefps; one
// factor 2^n would leave the float range). Below -104 the result is 0, above 89 +inf, NaN stays
// NaN.
CPU_AVX2_INLINE __m256 cpu_exp256(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(CPU_EXP_MAX), _mm256_max_ps(_mm256_set1_ps(CPU_EXP_MIN), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(CPU_EXP_LOG2E)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(CPU_EXP_LN2_HI), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(CPU_EXP_LN2_LO), r);
  __m256 p = _mm256_set1_ps(CPU_EXP_TAYLOR[0]);
#pragma GCC unroll 8
  for (int k = 1; k < CPU_EXP_TERMS; k++)
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(CPU_EXP_TAYLOR[k]));
  const __m256i ni = _mm256_cvtps_epi32(n);         // -150 .. 129, or garbage for NaN
  const __m256i half = _mm256_srai_epi32(ni, 1);    // -75 .. 64
  const __m256i rest = _mm256_sub_epi32(ni, half);  // -75 .. 65
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
  const __m256 f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(rest, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, f1), f2);
}

// The sum of the 8 lanes of v.
CPU_AVX2_INLINE float cpu_avx2_sum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// The largest |x[c]| of n values.
CPU_AVX2_INLINE float cpu_avx2_max_abs(const float *x, int64_t n) {
  const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) m = _mm256_max_ps(m, _mm256_and_ps(abs, _mm256_loadu_ps(x + c)));
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  float a = _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
  for (; c < n; c++) a = x[c] < 0 ? (-x[c] > a ? -x[c] : a) : (x[c] > a ? x[c] : a);
  return a;
}

// q[c] = x[c] * inv rounded to nearest even (as vcvtps2dq and the AVX-512 kernels round), for n
// values; returns the sum of the q. |x[c] * inv| must not exceed 127.
CPU_AVX2_INLINE int32_t cpu_avx2_quantize(const float *x, int64_t n, float inv, int8_t *q) {
  const __m256 f = _mm256_set1_ps(inv);
  __m256i sum = _mm256_setzero_si256();
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + c), f));
    sum = _mm256_add_epi32(sum, v);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64((__m128i *)(q + c), _mm_packs_epi16(w, w));
  }
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  int32_t total = _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1)));
  for (; c < n; c++) {
    q[c] = (int8_t)_mm_cvtss_si32(_mm_set_ss(x[c] * inv));
    total += q[c];
  }
  return total;
}

#endif
