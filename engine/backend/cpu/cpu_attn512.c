// cpu_attn512.c: the AVX-512 twin of cpu_attention.c's inner loop: one token's query heads of one
// KV head over its visible keys, 16 keys at a time. The 16 keys are transposed once (so each
// head's 16 scores are multiply-adds with broadcast query values, no horizontal sums), the
// online softmax runs on whole vectors (cpu_exp512), and p.v adds each key's value row scaled by
// its probability. Heads go in blocks of 8 (GPT-OSS's group), whose scores and sums stay in
// registers: each key row and value row is loaded once per block, not once per head. Same
// arithmetic as the scalar loop (running max from the sink, rescaling per chunk), a different
// summation order. Compiled for AVX-512 by target attributes: cpu_attention calls it only when the
// CPU has AVX-512. Reads the cache, writes only out and its scratch.
#include <math.h>

#include "backend/cpu/cpu_avx512.h"
#include "backend/cpu/cpu_internal.h"
#include "common/check.h"

#define CPU_ATTN512_KEYS 16      // keys per chunk: one vector of scores per head
#define CPU_ATTN512_MAX_DIM 256  // largest head_dim (a multiple of 16)
#define CPU_ATTN512_HEADS 8      // query heads scored together (GPT-OSS's group)

bool cpu_attn512_fits(const AttentionArgs *a) {
  return a->head_dim % 16 == 0 && a->head_dim <= CPU_ATTN512_MAX_DIM &&
         a->num_heads / a->num_kv_heads <= CPU_ATTN512_MAX_GROUP;
}

size_t cpu_attn512_scratch_floats(const AttentionArgs *a) {
  const size_t group = (size_t)(a->num_heads / a->num_kv_heads), d = (size_t)a->head_dim;
  return d * CPU_ATTN512_KEYS + CPU_ATTN512_HEADS * CPU_ATTN512_KEYS + group * d;
}

// kt[d][i] = key i's value d for the chunk's n keys (zeros past n).
// slot: [n] cache slots, k_cache: [slots, kv_dim] from this head's part, kt: [head_dim, 16]
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

// Scores of up to CPU_ATTN512_HEADS query heads (q[h], h < num) against the chunk's keys into
// sc[h], -inf past n: each transposed key row is loaded once for all of them, and each head
// keeps two partial sums (even and odd dimensions). Heads past num repeat head 0's work.
CPU_AVX512_TARGET static void cpu_attn512_scores(const float *const *q, int num, const float *kt,
                                                 int head_dim, float scale, __mmask16 valid,
                                                 __m512 *sc) {
  const float *qh[CPU_ATTN512_HEADS];
  __m512 s0[CPU_ATTN512_HEADS], s1[CPU_ATTN512_HEADS];
#pragma GCC unroll 8
  for (int h = 0; h < CPU_ATTN512_HEADS; h++)
    qh[h] = q[h < num ? h : 0], s0[h] = s1[h] = _mm512_setzero_ps();
  for (int d = 0; d < head_dim; d += 2) {
    const __m512 k0 = _mm512_loadu_ps(kt + d * CPU_ATTN512_KEYS);
    const __m512 k1 = _mm512_loadu_ps(kt + (d + 1) * CPU_ATTN512_KEYS);
#pragma GCC unroll 8
    for (int h = 0; h < CPU_ATTN512_HEADS; h++) {
      s0[h] = _mm512_fmadd_ps(_mm512_set1_ps(qh[h][d]), k0, s0[h]);
      s1[h] = _mm512_fmadd_ps(_mm512_set1_ps(qh[h][d + 1]), k1, s1[h]);
    }
  }
#pragma GCC unroll 8
  for (int h = 0; h < CPU_ATTN512_HEADS; h++) {
    const __m512 s = _mm512_mul_ps(_mm512_add_ps(s0[h], s1[h]), _mm512_set1_ps(scale));
    sc[h] = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), valid, s);
  }
}

// o[h] = o[h] * correction[h] + sum over the chunk's n keys of p[h][i] v_i, for up to
// CPU_ATTN512_HEADS heads (h < num): each value vector is loaded once for all of them.
// o: [num][head_dim] (row stride head_dim), p: [num][16]
CPU_AVX512_TARGET static void cpu_attn512_values(float *o, const float *p, const float *correction,
                                                 int num, const float *v_cache, int kv_dim,
                                                 const int64_t *slot, int n, int head_dim) {
  for (int d0 = 0; d0 < head_dim; d0 += 16) {
    __m512 acc[CPU_ATTN512_HEADS];
#pragma GCC unroll 8
    for (int h = 0; h < CPU_ATTN512_HEADS; h++)
      acc[h] = h < num ? _mm512_mul_ps(_mm512_loadu_ps(o + h * head_dim + d0),
                                       _mm512_set1_ps(correction[h]))
                       : _mm512_setzero_ps();
    for (int i = 0; i < n; i++) {
      const __m512 v = _mm512_loadu_ps(v_cache + slot[i] * kv_dim + d0);
#pragma GCC unroll 8
      for (int h = 0; h < CPU_ATTN512_HEADS; h++)
        acc[h] =
            _mm512_fmadd_ps(_mm512_set1_ps(p[(h < num ? h : 0) * CPU_ATTN512_KEYS + i]), v, acc[h]);
    }
#pragma GCC unroll 8
    for (int h = 0; h < CPU_ATTN512_HEADS; h++)
      if (h < num) _mm512_storeu_ps(o + h * head_dim + d0, acc[h]);
  }
}

CPU_AVX512_TARGET void cpu_attn512_group(const AttentionArgs *a, int t, int s, int kvh, int lo,
                                         int hi, float *scratch) {
  const Batch *b = a->batch;
  const KvCache *kv = a->kv;
  const int head_dim = a->head_dim, group = a->num_heads / a->num_kv_heads;
  const int kv_dim = a->num_kv_heads * head_dim, bs = kv->block_size;
  const float *k_cache = kv->k[a->layer] + kvh * head_dim;  // [slots, kv_dim], this head's part
  const float *v_cache = kv->v[a->layer] + kvh * head_dim;  // [slots, kv_dim], this head's part
  const int32_t *blocks = b->block_tables + (int64_t)s * b->max_blocks_per_seq;  // [max_blocks]
  const float *sinks = a->sinks + kvh * group;                                   // [group]
  float *kt = scratch;                          // [head_dim, 16] the chunk's keys, transposed
  float *p = kt + head_dim * CPU_ATTN512_KEYS;  // [8, 16] a head block's probabilities
  float *o = p + CPU_ATTN512_HEADS * CPU_ATTN512_KEYS;  // [group, head_dim] running sums of p v
  float max[CPU_ATTN512_MAX_GROUP], denom[CPU_ATTN512_MAX_GROUP];  // [group]
  for (int g = 0; g < group; g++) max[g] = sinks[g], denom[g] = 0.0f;
  for (int i = 0; i < group * head_dim; i++) o[i] = 0.0f;
  for (int j0 = lo; j0 <= hi; j0 += CPU_ATTN512_KEYS) {
    const int n = hi - j0 + 1 < CPU_ATTN512_KEYS ? hi - j0 + 1 : CPU_ATTN512_KEYS;
    const __mmask16 valid = (__mmask16)((1u << n) - 1);
    int64_t slot[CPU_ATTN512_KEYS];  // cache slot of key j0 + i
    for (int i = 0; i < n; i++) {
      const int j = j0 + i;
      CHECK(j / bs < b->max_blocks_per_seq);
      slot[i] = (int64_t)blocks[j / bs] * bs + j % bs;
    }
    cpu_attn512_keys(k_cache, kv_dim, slot, n, head_dim, kt);
    for (int g0 = 0; g0 < group; g0 += CPU_ATTN512_HEADS) {
      const int num = group - g0 < CPU_ATTN512_HEADS ? group - g0 : CPU_ATTN512_HEADS;
      const float *q[CPU_ATTN512_HEADS];
      for (int h = 0; h < num; h++)
        q[h] = a->q + (int64_t)t * a->q_stride + (kvh * group + g0 + h) * head_dim;
      __m512 sc[CPU_ATTN512_HEADS];
      cpu_attn512_scores(q, num, kt, head_dim, a->scale, valid, sc);
      float correction[CPU_ATTN512_HEADS];
      for (int h = 0; h < num; h++) {
        const int g = g0 + h;
        const float chunk_max = fmaxf(max[g], _mm512_reduce_max_ps(sc[h]));
        correction[h] = expf(max[g] - chunk_max);
        const __m512 pe =
            _mm512_maskz_mov_ps(valid, cpu_exp512(_mm512_sub_ps(sc[h], _mm512_set1_ps(chunk_max))));
        max[g] = chunk_max;
        denom[g] = denom[g] * correction[h] + _mm512_reduce_add_ps(pe);
        _mm512_storeu_ps(p + h * CPU_ATTN512_KEYS, pe);
      }
      cpu_attn512_values(o + g0 * head_dim, p, correction, num, v_cache, kv_dim, slot, n, head_dim);
    }
  }
  for (int g = 0; g < group; g++) {
    const __m512 inv = _mm512_set1_ps(1.0f / (denom[g] + expf(sinks[g] - max[g])));
    float *out = a->out + (int64_t)t * a->num_heads * head_dim + (kvh * group + g) * head_dim;
    for (int d0 = 0; d0 < head_dim; d0 += 16)
      _mm512_storeu_ps(out + d0, _mm512_mul_ps(_mm512_loadu_ps(o + g * head_dim + d0), inv));
  }
}
