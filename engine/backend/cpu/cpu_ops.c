// cpu_ops.c: the CPU backend's element-wise and copying ops: embedding look-up, RMSNorm, RoPE
// (YaRN table, half-split pairs), KV-cache writes and row gathers. No matrix products here
// (cpu_linear.c) and no attention or MoE (their own files).
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "common/check.h"

// Below this many floats of work an op runs on the calling thread (fork/join costs more).
#define CPU_OPS_PARALLEL_MIN 16384

void cpu_embed(Backend *be, const WeightMatrix *table, const uint32_t *ids, int num_tokens,
               float *out) {
  const int64_t cols = table->cols;
  const int num_threads = cpu_state(be)->num_threads;
  const bool parallel = (int64_t)num_tokens * cols >= CPU_OPS_PARALLEL_MIN;
#pragma omp parallel for num_threads(num_threads) if (parallel)
  for (int t = 0; t < num_tokens; t++) {
    CHECK(ids[t] < (uint64_t)table->rows);
    cpu_decode_rows(table, ids[t], 1, out + t * cols);
  }
}

void cpu_rmsnorm(Backend *be, const float *x, const float *scale, int num_rows, int dim,
                 float *out) {
  const int num_threads = cpu_state(be)->num_threads;
  const bool parallel = (int64_t)num_rows * dim >= CPU_OPS_PARALLEL_MIN;
#pragma omp parallel for num_threads(num_threads) if (parallel)
  for (int r = 0; r < num_rows; r++) {
    const float *xr = x + (int64_t)r * dim;  // [dim]
    float *yr = out + (int64_t)r * dim;      // [dim]
    float inv = 1.0f / sqrtf(cpu_dot(xr, xr, dim) / (float)dim + GPTOSS_RMS_EPS);
    for (int i = 0; i < dim; i++) yr[i] = xr[i] * inv * scale[i];
  }
}

void cpu_rope(Backend *be, float *x, int num_rows, int row_stride, int num_heads, int head_dim,
              const int32_t *positions, const RopeTable *rope) {
  const int half = rope->half_dim;
  CHECK(head_dim == 2 * half && half <= ROPE_MAX_HALF_DIM);
  CHECK(num_heads * head_dim <= row_stride);
  const int num_threads = cpu_state(be)->num_threads;
  const bool parallel = (int64_t)num_rows * num_heads * head_dim >= CPU_OPS_PARALLEL_MIN;
#pragma omp parallel for num_threads(num_threads) if (parallel)
  for (int r = 0; r < num_rows; r++) {
    float cos_c[ROPE_MAX_HALF_DIM], sin_c[ROPE_MAX_HALF_DIM];  // [half] times concentration
    const float pos = (float)positions[r];
    for (int i = 0; i < half; i++) {
      float angle = pos * rope->inv_freq[i];
      cos_c[i] = cosf(angle) * rope->concentration;
      sin_c[i] = sinf(angle) * rope->concentration;
    }
    for (int h = 0; h < num_heads; h++) {
      float *u = x + (int64_t)r * row_stride + h * head_dim;  // [head_dim]
      for (int i = 0; i < half; i++) {
        float a = u[i], b = u[i + half];
        u[i] = a * cos_c[i] - b * sin_c[i];
        u[i + half] = b * cos_c[i] + a * sin_c[i];
      }
    }
  }
}

void cpu_kv_write(Backend *be, KvCache *kv, int layer, const float *k, const float *v, int stride,
                  const int64_t *slot_mapping, int num_tokens) {
  CHECK(layer >= 0 && layer < kv->num_layers);
  const int kv_dim = kv->num_kv_heads * kv->head_dim;
  CHECK(kv_dim <= stride);
  const int64_t num_slots = (int64_t)kv->num_blocks * kv->block_size;
  float *k_cache = kv->k[layer];  // [num_blocks * block_size, kv_dim]
  float *v_cache = kv->v[layer];  // [num_blocks * block_size, kv_dim]
  const int num_threads = cpu_state(be)->num_threads;
  const bool parallel = (int64_t)num_tokens * kv_dim >= CPU_OPS_PARALLEL_MIN;
#pragma omp parallel for num_threads(num_threads) if (parallel)
  for (int t = 0; t < num_tokens; t++) {
    int64_t slot = slot_mapping[t];
    if (slot < 0) continue;  // padding token: nothing to store
    CHECK(slot < num_slots);
    memcpy(k_cache + slot * kv_dim, k + (int64_t)t * stride, (size_t)kv_dim * sizeof(float));
    memcpy(v_cache + slot * kv_dim, v + (int64_t)t * stride, (size_t)kv_dim * sizeof(float));
  }
}

void cpu_gather_rows(Backend *be, const float *in, const int32_t *rows, int num_rows, int dim,
                     float *out) {
  const int num_threads = cpu_state(be)->num_threads;
  const bool parallel = (int64_t)num_rows * dim >= CPU_OPS_PARALLEL_MIN;
#pragma omp parallel for num_threads(num_threads) if (parallel)
  for (int r = 0; r < num_rows; r++) {
    CHECK(rows[r] >= 0);
    memcpy(out + (int64_t)r * dim, in + (int64_t)rows[r] * dim, (size_t)dim * sizeof(float));
  }
}
