// cpu_avx512.h: small AVX-512 helpers the CPU backend's kernels share (a vector exp, lane sums,
// a 16x16 transpose, an MXFP4 block decoded to bf16), as static inline functions compiled for
// AVX-512 by target attributes, so only code that runs after the backend's CPU check may call
// them. Not for use outside engine/backend/cpu. Their one state is the MXFP4 table, which
// cpu_bf16.c owns and fills once.
#ifndef GE_BACKEND_CPU_CPU_AVX512_H
#define GE_BACKEND_CPU_CPU_AVX512_H

#include <immintrin.h>
#include <stdint.h>

#include "backend/cpu/cpu_exp.h"

#define CPU_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
#define CPU_AVX512_INLINE static inline __attribute__((always_inline)) CPU_AVX512_TARGET

// e^x per lane, within 2 ulp of expf (cpu_exp.h's constants and series), times 2^n by
// vscalefps. Below -104 the result is 0, above 89 +inf, NaN stays NaN.
CPU_AVX512_INLINE __m512 cpu_exp512(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(CPU_EXP_MAX), _mm512_max_ps(_mm512_set1_ps(CPU_EXP_MIN), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(CPU_EXP_LOG2E)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(CPU_EXP_LN2_HI), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(CPU_EXP_LN2_LO), r);
  __m512 p = _mm512_set1_ps(CPU_EXP_TAYLOR[0]);
#pragma GCC unroll 8
  for (int k = 1; k < CPU_EXP_TERMS; k++)
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(CPU_EXP_TAYLOR[k]));
  return _mm512_scalef_ps(p, n);
}

// Sums of the lanes of a[0..15], in order, as one vector: a shuffle tree of 45 instructions
// instead of 16 separate horizontal sums.
CPU_AVX512_INLINE __m512 cpu_sum16(const __m512 a[16]) {
  __m512 b[8], c[4], f[2];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++)  // per 128-bit lane: a[2i]'s partial sums even, a[2i+1]'s odd
    b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]),
                         _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++) {  // per 128-bit lane: a[4i] .. a[4i + 3]
    const __m512d b0 = _mm512_castps_pd(b[2 * i]), b1 = _mm512_castps_pd(b[2 * i + 1]);
    c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(b0, b1)),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(b0, b1)));
  }
#pragma GCC unroll 2
  for (int i = 0; i < 2; i++)  // 128-bit lanes 0 + 2 and 1 + 3 of c[2i], then of c[2i + 1]
    f[i] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0x44),
                         _mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0xee));
  return _mm512_add_ps(_mm512_shuffle_f32x4(f[0], f[1], 0x88),
                       _mm512_shuffle_f32x4(f[0], f[1], 0xdd));
}

// Transposes 16 rows of 16 floats in place: r[i] lane j <- r[j] lane i (64 shuffles).
CPU_AVX512_INLINE void cpu_transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {  // per 128-bit lane L: pairs of rows i, i + 1
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 4
  for (int g = 0; g < 4; g++) {  // u[4g + k] lane L: rows 4g .. 4g + 3 of column 4L + k
    const __m512d t0 = _mm512_castps_pd(t[4 * g]), t1 = _mm512_castps_pd(t[4 * g + 1]);
    const __m512d t2 = _mm512_castps_pd(t[4 * g + 2]), t3 = _mm512_castps_pd(t[4 * g + 3]);
    u[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++) {  // column 4L + k: lane L of u[k], u[4 + k], u[8 + k], u[12 + k]
    const __m512 a = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x44);
    const __m512 b = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xee);
    const __m512 c = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x44);
    const __m512 d = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xee);
    r[k] = _mm512_shuffle_f32x4(a, c, 0x88);
    r[4 + k] = _mm512_shuffle_f32x4(a, c, 0xdd);
    r[8 + k] = _mm512_shuffle_f32x4(b, d, 0x88);
    r[12 + k] = _mm512_shuffle_f32x4(b, d, 0xdd);
  }
}

// MXFP4 blocks as bf16: cpu_mxfp4_bf16_table[s][k] is code k at scale byte s, exactly (every
// e2m1 value times a power of two is a bf16). cpu_bf16.c owns the table; cpu_backend_create
// calls cpu_mxfp4_bf16_init, which fills it once a process, before any decode.
extern uint16_t cpu_mxfp4_bf16_table[256][16];
void cpu_mxfp4_bf16_init(void);

// One MXFP4 block (16 bytes of codes, one scale byte) as 32 bf16 values, exactly: byte j ->
// dword j -> words (low nibble, high nibble), the codes of elements 2j and 2j + 1, looked up in
// the scale's 16-entry table by one vpermw.
CPU_AVX512_INLINE __m512i cpu_mxfp4_block(const uint8_t *block, uint8_t scale) {
  const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)block));
  const __m512i codes = _mm512_ternarylogic_epi32(bytes, _mm512_slli_epi32(bytes, 12),
                                                  _mm512_set1_epi32(0x000f000f), 0xa8);
  const __m512i table =
      _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)cpu_mxfp4_bf16_table[scale]));
  return _mm512_permutexvar_epi16(codes, table);
}

#endif
