// cpu_attention.c: paged causal attention with sinks (spec gptoss-model.md section 2.1): each
// (token, kv head) pair walks that token's visible keys in its sequence's blocks with an online
// softmax for the query heads of the group, the running max starting at each head's sink; the
// pairs are split across threads. This file's scalar loop is the portable one; on AVX-512 CPUs
// each pair goes to its vector loop with cpu_attn512.c's kernel, on AVX2 ones with
// cpu_attn256.c's. Reads the cache, never writes it
// (kv_write comes first).
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "common/check.h"

// Keys scored together before the running sums are rescaled.
#define CPU_ATTN_CHUNK 32

// The sequence that owns token t: query_start[s] <= t < query_start[s + 1].
static int cpu_attn_seq_of(const Batch *b, int t) {
  int lo = 0, hi = b->num_seqs - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (b->query_start[mid] <= t)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// Online softmax state of one query head.
typedef struct {
  float max;    // running max of the logits seen (starts at the sink)
  float denom;  // sum of exp(logit - max) over the keys seen
  float *acc;   // [head_dim] sum of exp(logit - max) * v
} CpuAttnHead;

// Attention of token t's query heads in kv head kvh's group over keys lo .. hi of sequence s.
// scores: [group, CPU_ATTN_CHUNK], acc: [group, head_dim]
static void cpu_attn_group(const AttentionArgs *a, int t, int s, int kvh, int lo, int hi,
                           float *scores, float *acc) {
  const Batch *b = a->batch;
  const KvCache *kv = a->kv;
  const int head_dim = a->head_dim, group = a->num_heads / a->num_kv_heads;
  const int kv_dim = a->num_kv_heads * head_dim, bs = kv->block_size;
  const float *k_cache = (const float *)kv->k[a->layer] + kvh * head_dim;        // [slots, kv_dim]
  const float *v_cache = (const float *)kv->v[a->layer] + kvh * head_dim;        // this head's part
  const int32_t *blocks = b->block_tables + (int64_t)s * b->max_blocks_per_seq;  // [max_blocks]
  CpuAttnHead heads[group];
  for (int g = 0; g < group; g++) {
    heads[g] = (CpuAttnHead){a->sinks[kvh * group + g], 0.0f, acc + g * head_dim};
    memset(heads[g].acc, 0, (size_t)head_dim * sizeof(float));
  }
  for (int j0 = lo; j0 <= hi; j0 += CPU_ATTN_CHUNK) {
    const int n = hi - j0 + 1 < CPU_ATTN_CHUNK ? hi - j0 + 1 : CPU_ATTN_CHUNK;
    int64_t slot[CPU_ATTN_CHUNK];  // cache slot of key j0 + i
    for (int i = 0; i < n; i++) {
      int j = j0 + i;
      CHECK(j / bs < b->max_blocks_per_seq);
      slot[i] = (int64_t)blocks[j / bs] * bs + j % bs;
    }
    for (int g = 0; g < group; g++) {
      const float *q = a->q + (int64_t)t * a->q_stride + (kvh * group + g) * head_dim;
      float *sc = scores + g * CPU_ATTN_CHUNK;
      float chunk_max = heads[g].max;
      for (int i = 0; i < n; i++) {
        sc[i] = cpu_dot(q, k_cache + slot[i] * kv_dim, head_dim) * a->scale;
        if (sc[i] > chunk_max) chunk_max = sc[i];
      }
      CpuAttnHead *h = &heads[g];
      const float correction = expf(h->max - chunk_max);
      h->max = chunk_max;
      h->denom *= correction;
      for (int d = 0; d < head_dim; d++) h->acc[d] *= correction;
      for (int i = 0; i < n; i++) {
        const float p = expf(sc[i] - chunk_max);
        const float *v = v_cache + slot[i] * kv_dim;  // [head_dim]
        h->denom += p;
        for (int d = 0; d < head_dim; d++) h->acc[d] += p * v[d];
      }
    }
  }
  for (int g = 0; g < group; g++) {
    const CpuAttnHead *h = &heads[g];
    const float inv = 1.0f / (h->denom + expf(a->sinks[kvh * group + g] - h->max));
    float *o = a->out + (int64_t)t * a->num_heads * head_dim + (kvh * group + g) * head_dim;
    for (int d = 0; d < head_dim; d++) o[d] = h->acc[d] * inv;
  }
}

// Whether vector kernel k takes a's heads: head_dim a multiple of its keys up to
// CPU_ATTN_VEC_MAX_DIM, at most CPU_ATTN_VEC_MAX_GROUP query heads per kv head.
static bool cpu_attn_vec_fits(const CpuAttnKernel *k, const AttentionArgs *a) {
  return a->head_dim % k->keys == 0 && a->head_dim <= CPU_ATTN_VEC_MAX_DIM &&
         a->num_heads / a->num_kv_heads <= CPU_ATTN_VEC_MAX_GROUP;
}

// Floats of one thread's scratch for kernel k: the chunk's keys transposed, a head block's
// probabilities, the group's running sums.
static size_t cpu_attn_vec_scratch_floats(const CpuAttnKernel *k, const AttentionArgs *a) {
  const size_t group = (size_t)(a->num_heads / a->num_kv_heads), d = (size_t)a->head_dim;
  return d * (size_t)k->keys + CPU_ATTN_VEC_HEADS * (size_t)k->keys + group * d;
}

// cpu_attn_group with vector kernel k: chunks of k->keys keys, heads in blocks of
// CPU_ATTN_VEC_HEADS whose scores and sums the kernel keeps in registers (each key and value row
// loaded once per block).  scratch: [cpu_attn_vec_scratch_floats(k, a)]
static void cpu_attn_group_vec(const CpuAttnKernel *k, const AttentionArgs *a, int t, int s,
                               int kvh, int lo, int hi, float *scratch) {
  const Batch *b = a->batch;
  const KvCache *kv = a->kv;
  const int head_dim = a->head_dim, group = a->num_heads / a->num_kv_heads;
  const int kv_dim = a->num_kv_heads * head_dim, bs = kv->block_size;
  const int32_t *blocks = b->block_tables + (int64_t)s * b->max_blocks_per_seq;  // [max_blocks]
  const float *sinks = a->sinks + kvh * group;                                   // [group]
  float *kt = scratch;                          // [head_dim, keys] the chunk's keys
  float *p = kt + head_dim * k->keys;           // [8, keys] a head block's probabilities
  float *o = p + CPU_ATTN_VEC_HEADS * k->keys;  // [group, head_dim] running sums of p v
  float max[CPU_ATTN_VEC_MAX_GROUP], denom[CPU_ATTN_VEC_MAX_GROUP];  // [group]
  for (int g = 0; g < group; g++) max[g] = sinks[g], denom[g] = 0.0f;
  for (int i = 0; i < group * head_dim; i++) o[i] = 0.0f;
  int64_t slot[CPU_ATTN_CHUNK];  // cache slot of key j0 + i
  CHECK(k->keys <= CPU_ATTN_CHUNK);
  CpuAttnChunk c = {.kt = kt,
                    .p = p,
                    .slot = slot,
                    .head_dim = head_dim,
                    .kv_dim = kv_dim,
                    .v_cache = (const float *)kv->v[a->layer] + kvh * head_dim,  // this head's
                    .scale = a->scale};
  for (int j0 = lo; j0 <= hi; j0 += k->keys) {
    c.n = hi - j0 + 1 < k->keys ? hi - j0 + 1 : k->keys;
    for (int i = 0; i < c.n; i++) {
      const int j = j0 + i;
      CHECK(j / bs < b->max_blocks_per_seq);
      slot[i] = (int64_t)blocks[j / bs] * bs + j % bs;
    }
    k->transpose((const float *)kv->k[a->layer] + kvh * head_dim, kv_dim, slot, c.n, head_dim, kt);
    for (int g0 = 0; g0 < group; g0 += CPU_ATTN_VEC_HEADS) {
      const int num = group - g0 < CPU_ATTN_VEC_HEADS ? group - g0 : CPU_ATTN_VEC_HEADS;
      const float *q[CPU_ATTN_VEC_HEADS];
      for (int h = 0; h < num; h++)
        q[h] = a->q + (int64_t)t * a->q_stride + (kvh * group + g0 + h) * head_dim;
      k->heads(&c, q, num, max + g0, denom + g0, o + g0 * head_dim);
    }
  }
  for (int g = 0; g < group; g++) {
    const float inv = 1.0f / (denom[g] + expf(sinks[g] - max[g]));
    float *out = a->out + (int64_t)t * a->num_heads * head_dim + (kvh * group + g) * head_dim;
    for (int d = 0; d < head_dim; d++) out[d] = o[g * head_dim + d] * inv;
  }
}

typedef struct {
  const AttentionArgs *a;
  float *bufs;  // [num_threads, per_thread]
  size_t per_thread;
  const CpuAttnKernel *vec;  // NULL: the scalar loop
} CpuAttnCtx;

// Items begin .. end - 1: (token, kv head) pairs.
static void cpu_attn_task(void *ctx, int64_t begin, int64_t end, int tid) {
  const CpuAttnCtx *c = ctx;
  const AttentionArgs *a = c->a;
  const Batch *b = a->batch;
  const int group = a->num_heads / a->num_kv_heads;
  float *scores = c->bufs + (size_t)tid * c->per_thread;  // [group, CHUNK] or the vector's
  float *acc = scores + (size_t)group * CPU_ATTN_CHUNK;   // [group, head_dim]
  for (int64_t item = begin; item < end; item++) {
    const int t = (int)(item / a->num_kv_heads), kvh = (int)(item % a->num_kv_heads);
    const int s = cpu_attn_seq_of(b, t);
    const int pos = b->positions[t];
    CHECK(pos >= 0 && pos < b->seq_lens[s]);
    int lo = 0;
    if (a->sliding_window > 0 && pos - a->sliding_window + 1 > 0) lo = pos - a->sliding_window + 1;
    if (c->vec)
      cpu_attn_group_vec(c->vec, a, t, s, kvh, lo, pos, scores);
    else
      cpu_attn_group(a, t, s, kvh, lo, pos, scores, acc);
  }
}

void cpu_attention(Backend *be, const AttentionArgs *a) {
  const Batch *b = a->batch;
  CHECK(a->num_kv_heads > 0 && a->num_heads % a->num_kv_heads == 0);
  CHECK(a->kv->num_kv_heads == a->num_kv_heads && a->kv->head_dim == a->head_dim);
  CHECK(a->layer >= 0 && a->layer < a->kv->num_layers && a->kv->dtype == KV_F32);
  const int group = a->num_heads / a->num_kv_heads, head_dim = a->head_dim;
  const int num_threads = cpu_state(be)->num_threads;
  const CpuState *st = cpu_state(be);
  CpuAttnCtx c = {.a = a};
  if (st->avx512 && cpu_attn_vec_fits(&cpu_attn512, a))
    c.vec = &cpu_attn512;
  else if (st->avx2 && cpu_attn_vec_fits(&cpu_attn256, a))
    c.vec = &cpu_attn256;
  c.per_thread = c.vec ? cpu_attn_vec_scratch_floats(c.vec, a)
                       : (size_t)group * (CPU_ATTN_CHUNK + (size_t)head_dim);
  c.bufs =
      cpu_scratch(be, CPU_SCRATCH_ATTENTION, (size_t)num_threads * c.per_thread * sizeof(float));
  const int64_t num_items = (int64_t)b->num_tokens * a->num_kv_heads;
  cpu_parallel(be, num_items, 4, cpu_attn_task, &c);
}
