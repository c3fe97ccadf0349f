// cpu_attn512.c: the AVX-512 kernel of the attention op (cpu_attention.c drives it): a chunk of
// 16 keys transposed once (so each head's 16 scores are multiply-adds with broadcast query
// values, no horizontal sums), the online softmax on whole vectors (cpu_exp512), and p.v adding
// each key's value row scaled by its probability, for a block of up to 8 heads whose scores and
// sums stay in registers: each key row and value row is loaded once per block, not once per head.
// Same arithmetic as the scalar loop (running max from the sink, rescaling per chunk), a
// different summation order. Compiled for AVX-512 by target attributes: cpu_attention calls it
// only when the CPU has AVX-512. Reads the cache, writes only its outputs.
#include <math.h>

#include "backend/cpu/cpu_avx512.h"
#include "backend/cpu/cpu_internal.h"

#define CPU_ATTN512_KEYS 16  // keys per chunk: one vector of scores per head

// CpuAttnKernel.transpose: 16 x 16 transposes.
CPU_AVX512_TARGET static void cpu_attn512_keys(const float *k_cache, int kv_dim,
                                               const int64_t *slot, int n, int head_dim,
                                               float *kt) {
  for (int d0 = 0; d0 < head_dim; d0 += 16) {
    __m512 r[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
      r[i] = i < n ? _mm512_loadu_ps(k_cache + slot[i] * kv_dim + d0) : _mm512_setzero_ps();
    cpu_transpose16(r);
#pragma GCC unroll 16
    for (int d = 0; d < 16; d++) _mm512_storeu_ps(kt + (d0 + d) * CPU_ATTN512_KEYS, r[d]);
  }
}

// Scores of up to CPU_ATTN_VEC_HEADS query heads (q[h], h < num) against the chunk's keys into
// sc[h], -inf past n: each transposed key row is loaded once for all of them, and each head
// keeps two partial sums (even and odd dimensions). Heads past num repeat head 0's work.
CPU_AVX512_TARGET static void cpu_attn512_scores(const float *const *q, int num, const float *kt,
                                                 int head_dim, float scale, __mmask16 valid,
                                                 __m512 *sc) {
  const float *qh[CPU_ATTN_VEC_HEADS];
  __m512 s0[CPU_ATTN_VEC_HEADS], s1[CPU_ATTN_VEC_HEADS];
#pragma GCC unroll 8
  for (int h = 0; h < CPU_ATTN_VEC_HEADS; h++)
    qh[h] = q[h < num ? h : 0], s0[h] = s1[h] = _mm512_setzero_ps();
  for (int d = 0; d < head_dim; d += 2) {
    const __m512 k0 = _mm512_loadu_ps(kt + d * CPU_ATTN512_KEYS);
    const __m512 k1 = _mm512_loadu_ps(kt + (d + 1) * CPU_ATTN512_KEYS);
#pragma GCC unroll 8
    for (int h = 0; h < CPU_ATTN_VEC_HEADS; h++) {
      s0[h] = _mm512_fmadd_ps(_mm512_set1_ps(qh[h][d]), k0, s0[h]);
      s1[h] = _mm512_fmadd_ps(_mm512_set1_ps(qh[h][d + 1]), k1, s1[h]);
    }
  }
#pragma GCC unroll 8
  for (int h = 0; h < CPU_ATTN_VEC_HEADS; h++) {
    const __m512 s = _mm512_mul_ps(_mm512_add_ps(s0[h], s1[h]), _mm512_set1_ps(scale));
    sc[h] = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), valid, s);
  }
}

// o[h] = o[h] * correction[h] + sum over the chunk's n keys of p[h][i] v_i, for up to
// CPU_ATTN_VEC_HEADS heads (h < num): each value vector is loaded once for all of them.
// o: [num][head_dim] (row stride head_dim), p: [num][16]
CPU_AVX512_TARGET static void cpu_attn512_values(float *o, const float *p, const float *correction,
                                                 int num, const float *v_cache, int kv_dim,
                                                 const int64_t *slot, int n, int head_dim) {
  for (int d0 = 0; d0 < head_dim; d0 += 16) {
    __m512 acc[CPU_ATTN_VEC_HEADS];
#pragma GCC unroll 8
    for (int h = 0; h < CPU_ATTN_VEC_HEADS; h++)
      acc[h] = h < num ? _mm512_mul_ps(_mm512_loadu_ps(o + h * head_dim + d0),
                                       _mm512_set1_ps(correction[h]))
                       : _mm512_setzero_ps();
    for (int i = 0; i < n; i++) {
      const __m512 v = _mm512_loadu_ps(v_cache + slot[i] * kv_dim + d0);
#pragma GCC unroll 8
      for (int h = 0; h < CPU_ATTN_VEC_HEADS; h++)
        acc[h] =
            _mm512_fmadd_ps(_mm512_set1_ps(p[(h < num ? h : 0) * CPU_ATTN512_KEYS + i]), v, acc[h]);
    }
#pragma GCC unroll 8
    for (int h = 0; h < CPU_ATTN_VEC_HEADS; h++)
      if (h < num) _mm512_storeu_ps(o + h * head_dim + d0, acc[h]);
  }
}

// CpuAttnKernel.heads.
CPU_AVX512_TARGET static void cpu_attn512_heads(const CpuAttnChunk *c, const float *const *q,
                                                int num, float *max, float *denom, float *o) {
  const __mmask16 valid = (__mmask16)((1u << c->n) - 1);
  __m512 sc[CPU_ATTN_VEC_HEADS];
  cpu_attn512_scores(q, num, c->kt, c->head_dim, c->scale, valid, sc);
  float correction[CPU_ATTN_VEC_HEADS];
  for (int h = 0; h < num; h++) {
    const float chunk_max = fmaxf(max[h], _mm512_reduce_max_ps(sc[h]));
    correction[h] = expf(max[h] - chunk_max);
    const __m512 pe =
        _mm512_maskz_mov_ps(valid, cpu_exp512(_mm512_sub_ps(sc[h], _mm512_set1_ps(chunk_max))));
    max[h] = chunk_max;
    denom[h] = denom[h] * correction[h] + _mm512_reduce_add_ps(pe);
    _mm512_storeu_ps(c->p + h * CPU_ATTN512_KEYS, pe);
  }
  cpu_attn512_values(o, c->p, correction, num, c->v_cache, c->kv_dim, c->slot, c->n, c->head_dim);
}

const CpuAttnKernel cpu_attn512 = {CPU_ATTN512_KEYS, cpu_attn512_keys, cpu_attn512_heads};
