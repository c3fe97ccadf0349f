// cpu_ops.c: the CPU backend's element-wise and copying ops: embedding look-up, RMSNorm, RoPE
// (YaRN table, half-split pairs), KV-cache writes and row gathers. No matrix products here
// (cpu_linear.c) and no attention or MoE (their own files).
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "common/check.h"

// Below this many floats of work an op runs on the calling thread (handing out pieces costs more).
#define CPU_OPS_PARALLEL_MIN 16384

typedef struct {
  const WeightMatrix *table;
  const uint32_t *ids;  // [num_tokens]
  float *out;           // [num_tokens, cols]
} CpuEmbedCtx;

static void cpu_embed_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuEmbedCtx *c = ctx;
  for (int64_t t = begin; t < end; t++) {
    CHECK(c->ids[t] < (uint64_t)c->table->rows);
    cpu_decode_rows(c->table, c->ids[t], 1, c->out + t * c->table->cols);
  }
}

void cpu_embed(Backend *be, const WeightMatrix *table, const uint32_t *ids, int num_tokens,
               float *out) {
  CpuEmbedCtx c = {table, ids, out};
  cpu_parallel(be, num_tokens, cpu_grain(be, num_tokens, table->cols, CPU_OPS_PARALLEL_MIN),
               cpu_embed_task, &c);
}

typedef struct {
  const float *x;      // [num_rows, dim]
  const float *scale;  // [dim]
  int dim;
  float *out;  // [num_rows, dim]
} CpuRmsnormCtx;

static void cpu_rmsnorm_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuRmsnormCtx *c = ctx;
  const int dim = c->dim;
  for (int64_t r = begin; r < end; r++) {
    const float *xr = c->x + r * dim;  // [dim]
    float *yr = c->out + r * dim;      // [dim]
    float inv = 1.0f / sqrtf(cpu_dot(xr, xr, dim) / (float)dim + GPTOSS_RMS_EPS);
    for (int i = 0; i < dim; i++) yr[i] = xr[i] * inv * c->scale[i];
  }
}

void cpu_rmsnorm(Backend *be, const float *x, const float *scale, int num_rows, int dim,
                 float *out) {
  CpuRmsnormCtx c = {x, scale, dim, out};
  cpu_parallel(be, num_rows, cpu_grain(be, num_rows, dim, CPU_OPS_PARALLEL_MIN), cpu_rmsnorm_task,
               &c);
}

typedef struct {
  float *x;  // [num_rows, row_stride]
  int row_stride, num_heads, head_dim;
  const int32_t *positions;  // [num_rows]
  const RopeTable *rope;
} CpuRopeCtx;

static void cpu_rope_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuRopeCtx *c = ctx;
  const int half = c->rope->half_dim;
  for (int64_t r = begin; r < end; r++) {
    float cos_c[ROPE_MAX_HALF_DIM], sin_c[ROPE_MAX_HALF_DIM];  // [half] times concentration
    const float pos = (float)c->positions[r];
    for (int i = 0; i < half; i++) {
      float angle = pos * c->rope->inv_freq[i];
      cos_c[i] = cosf(angle) * c->rope->concentration;
      sin_c[i] = sinf(angle) * c->rope->concentration;
    }
    for (int h = 0; h < c->num_heads; h++) {
      float *u = c->x + r * c->row_stride + h * c->head_dim;  // [head_dim]
      for (int i = 0; i < half; i++) {
        float a = u[i], b = u[i + half];
        u[i] = a * cos_c[i] - b * sin_c[i];
        u[i + half] = b * cos_c[i] + a * sin_c[i];
      }
    }
  }
}

void cpu_rope(Backend *be, float *x, int num_rows, int row_stride, int num_heads, int head_dim,
              const int32_t *positions, const RopeTable *rope) {
  CHECK(head_dim == 2 * rope->half_dim && rope->half_dim <= ROPE_MAX_HALF_DIM);
  CHECK(num_heads * head_dim <= row_stride);
  CpuRopeCtx c = {x, row_stride, num_heads, head_dim, positions, rope};
  cpu_parallel(be, num_rows,
               cpu_grain(be, num_rows, (int64_t)num_heads * head_dim, CPU_OPS_PARALLEL_MIN),
               cpu_rope_task, &c);
}

typedef struct {
  KvCache *kv;
  int layer;
  const float *k, *v;  // [num_tokens, stride]
  int stride;
  const int64_t *slot_mapping;  // [num_tokens]
} CpuKvWriteCtx;

static void cpu_kv_write_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuKvWriteCtx *c = ctx;
  const int kv_dim = c->kv->num_kv_heads * c->kv->head_dim;
  const int64_t num_slots = (int64_t)c->kv->num_blocks * c->kv->block_size;
  float *k_cache = c->kv->k[c->layer];  // [num_blocks * block_size, kv_dim] (float32: checked)
  float *v_cache = c->kv->v[c->layer];  // [num_blocks * block_size, kv_dim]
  for (int64_t t = begin; t < end; t++) {
    int64_t slot = c->slot_mapping[t];
    if (slot < 0) continue;  // padding token: nothing to store
    CHECK(slot < num_slots);
    memcpy(k_cache + slot * kv_dim, c->k + t * c->stride, (size_t)kv_dim * sizeof(float));
    memcpy(v_cache + slot * kv_dim, c->v + t * c->stride, (size_t)kv_dim * sizeof(float));
  }
}

void cpu_kv_write(Backend *be, KvCache *kv, int layer, const float *k, const float *v, int stride,
                  const int64_t *slot_mapping, int num_tokens) {
  CHECK(layer >= 0 && layer < kv->num_layers);
  CHECK(kv->dtype == KV_F32);  // the CPU's cache is float32 (runner_create refuses bf16 here)
  const int kv_dim = kv->num_kv_heads * kv->head_dim;
  CHECK(kv_dim <= stride);
  CpuKvWriteCtx c = {kv, layer, k, v, stride, slot_mapping};
  cpu_parallel(be, num_tokens, cpu_grain(be, num_tokens, kv_dim, CPU_OPS_PARALLEL_MIN),
               cpu_kv_write_task, &c);
}

typedef struct {
  const float *in;      // [*, dim]
  const int32_t *rows;  // [num_rows]
  int dim;
  float *out;  // [num_rows, dim]
} CpuGatherCtx;

static void cpu_gather_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuGatherCtx *c = ctx;
  for (int64_t r = begin; r < end; r++) {
    CHECK(c->rows[r] >= 0);
    memcpy(c->out + r * c->dim, c->in + (int64_t)c->rows[r] * c->dim,
           (size_t)c->dim * sizeof(float));
  }
}

void cpu_gather_rows(Backend *be, const float *in, const int32_t *rows, int num_rows, int dim,
                     float *out) {
  CpuGatherCtx c = {in, rows, dim, out};
  cpu_parallel(be, num_rows, cpu_grain(be, num_rows, dim, CPU_OPS_PARALLEL_MIN), cpu_gather_task,
               &c);
}

typedef struct {
  float *dst;
  const float *src;
} CpuAddCtx;

static void cpu_add_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuAddCtx *c = ctx;
  for (int64_t i = begin; i < end; i++) c->dst[i] += c->src[i];
}

void cpu_copy_rows(Backend *be, void *dst, size_t dst_stride, const void *src, size_t src_stride,
                   size_t row_bytes, int num_rows) {
  (void)be;
  for (int r = 0; r < num_rows; r++)
    memcpy((char *)dst + (size_t)r * dst_stride, (const char *)src + (size_t)r * src_stride,
           row_bytes);
}

void cpu_add(Backend *be, float *dst, const float *src, size_t n) {
  CpuAddCtx c = {dst, src};
  cpu_parallel(be, (int64_t)n, cpu_grain(be, (int64_t)n, 1, CPU_OPS_PARALLEL_MIN), cpu_add_task,
               &c);
}

void cpu_zero(Backend *be, void *ptr, size_t bytes) {
  (void)be;
  memset(ptr, 0, bytes);
}
