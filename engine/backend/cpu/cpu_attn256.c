// cpu_attn256.c: the AVX2 kernel of the attention op (cpu_attention.c drives it), cpu_attn512.c's
// twin for CPUs with AVX2 and FMA but not AVX-512: a chunk of 8 keys transposed once (each head's
// 8 scores are then multiply-adds with broadcast query values), the online softmax on whole
// vectors (cpu_exp256), and p.v adding each key's value row scaled by its probability, for a
// block of up to 8 heads whose scores and sums stay in registers. Compiled for AVX2 by target
// attributes: cpu_attention calls it only when the backend has AVX2 and no AVX-512. Reads the
// cache, writes only its outputs.
#include <math.h>

#include "backend/cpu/cpu_avx2.h"
#include "backend/cpu/cpu_internal.h"

#define CPU_ATTN256_KEYS 8  // keys per chunk: one vector of scores per head

// CpuAttnKernel.transpose: 8 x 8 transposes.
CPU_AVX2_TARGET static void cpu_attn256_keys(const float *k_cache, int kv_dim, const int64_t *slot,
                                             int n, int head_dim, float *kt) {
  for (int d0 = 0; d0 < head_dim; d0 += 8) {
    __m256 r[8], t[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
      r[i] = i < n ? _mm256_loadu_ps(k_cache + slot[i] * kv_dim + d0) : _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int i = 0; i < 8; i += 2) {  // per 128-bit half: pairs of keys i, i + 1
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 2
    for (int g = 0; g < 8; g += 4) {  // r[g + k] half L: keys g .. g + 3 of dim 4L + k
      r[g] = _mm256_shuffle_ps(t[g], t[g + 2], 0x44);
      r[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], 0xee);
      r[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44);
      r[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xee);
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {  // dims k and 4 + k: the low and high halves of r[k], r[4 + k]
      _mm256_storeu_ps(kt + (d0 + k) * CPU_ATTN256_KEYS,
                       _mm256_permute2f128_ps(r[k], r[4 + k], 0x20));
      _mm256_storeu_ps(kt + (d0 + 4 + k) * CPU_ATTN256_KEYS,
                       _mm256_permute2f128_ps(r[k], r[4 + k], 0x31));
    }
  }
}

// Scores of up to CPU_ATTN_VEC_HEADS query heads (q[h], h < num) against the chunk's keys into
// sc[h], -inf past n: each transposed key row is loaded once for all of them. Heads past num
// repeat head 0's work.
CPU_AVX2_TARGET static void cpu_attn256_scores(const float *const *q, int num, const float *kt,
                                               int head_dim, float scale, __m256 valid,
                                               __m256 *sc) {
  const float *qh[CPU_ATTN_VEC_HEADS];
  __m256 s[CPU_ATTN_VEC_HEADS];
#pragma GCC unroll 8
  for (int h = 0; h < CPU_ATTN_VEC_HEADS; h++)
    qh[h] = q[h < num ? h : 0], s[h] = _mm256_setzero_ps();
  for (int d = 0; d < head_dim; d++) {
    const __m256 k = _mm256_loadu_ps(kt + d * CPU_ATTN256_KEYS);
#pragma GCC unroll 8
    for (int h = 0; h < CPU_ATTN_VEC_HEADS; h++)
      s[h] = _mm256_fmadd_ps(_mm256_broadcast_ss(qh[h] + d), k, s[h]);
  }
#pragma GCC unroll 8
  for (int h = 0; h < CPU_ATTN_VEC_HEADS; h++)
    sc[h] = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_mul_ps(s[h], _mm256_set1_ps(scale)),
                             valid);
}

// o[h] = o[h] * correction[h] + sum over the chunk's n keys of p[h][i] v_i, for up to
// CPU_ATTN_VEC_HEADS heads (h < num): each value vector is loaded once for all of them.
// o: [num][head_dim] (row stride head_dim), p: [num][8]
CPU_AVX2_TARGET static void cpu_attn256_values(float *o, const float *p, const float *correction,
                                               int num, const float *v_cache, int kv_dim,
                                               const int64_t *slot, int n, int head_dim) {
  for (int d0 = 0; d0 < head_dim; d0 += 8) {
    __m256 acc[CPU_ATTN_VEC_HEADS];
#pragma GCC unroll 8
    for (int h = 0; h < CPU_ATTN_VEC_HEADS; h++)
      acc[h] = h < num ? _mm256_mul_ps(_mm256_loadu_ps(o + h * head_dim + d0),
                                       _mm256_set1_ps(correction[h]))
                       : _mm256_setzero_ps();
    for (int i = 0; i < n; i++) {
      const __m256 v = _mm256_loadu_ps(v_cache + slot[i] * kv_dim + d0);
#pragma GCC unroll 8
      for (int h = 0; h < CPU_ATTN_VEC_HEADS; h++)
        acc[h] =
            _mm256_fmadd_ps(_mm256_set1_ps(p[(h < num ? h : 0) * CPU_ATTN256_KEYS + i]), v, acc[h]);
    }
#pragma GCC unroll 8
    for (int h = 0; h < CPU_ATTN_VEC_HEADS; h++)
      if (h < num) _mm256_storeu_ps(o + h * head_dim + d0, acc[h]);
  }
}

// The largest of the 8 lanes of v.
CPU_AVX2_INLINE float cpu_attn256_max8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

// CpuAttnKernel.heads.
CPU_AVX2_TARGET static void cpu_attn256_heads(const CpuAttnChunk *c, const float *const *q, int num,
                                              float *max, float *denom, float *o) {
  const __m256 valid = _mm256_castsi256_ps(
      _mm256_cmpgt_epi32(_mm256_set1_epi32(c->n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
  __m256 sc[CPU_ATTN_VEC_HEADS];
  cpu_attn256_scores(q, num, c->kt, c->head_dim, c->scale, valid, sc);
  float correction[CPU_ATTN_VEC_HEADS];
  for (int h = 0; h < num; h++) {
    const float chunk_max = fmaxf(max[h], cpu_attn256_max8(sc[h]));
    correction[h] = expf(max[h] - chunk_max);
    const __m256 pe =
        _mm256_and_ps(valid, cpu_exp256(_mm256_sub_ps(sc[h], _mm256_set1_ps(chunk_max))));
    max[h] = chunk_max;
    denom[h] = denom[h] * correction[h] + cpu_avx2_sum8(pe);
    _mm256_storeu_ps(c->p + h * CPU_ATTN256_KEYS, pe);
  }
  cpu_attn256_values(o, c->p, correction, num, c->v_cache, c->kv_dim, c->slot, c->n, c->head_dim);
}

const CpuAttnKernel cpu_attn256 = {CPU_ATTN256_KEYS, cpu_attn256_keys, cpu_attn256_heads};
