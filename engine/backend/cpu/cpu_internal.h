// cpu_internal.h: what the CPU backend's files share: the backend state (thread count, growing
// scratch buffers), the op entry points the table in cpu_backend.c points at, and a small
// deterministic dot product. Not for use outside engine/backend/cpu.
#ifndef GE_BACKEND_CPU_CPU_INTERNAL_H
#define GE_BACKEND_CPU_CPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

// Independent scratch buffers: an op may hold several at once (each grows on its own, so a
// pointer from one slot stays valid while another grows). An op must not call another op that
// uses a slot it holds.
typedef enum {
  CPU_SCRATCH_DECODE,     // linear: decoded weight tiles or per-thread decoded rows
  CPU_SCRATCH_ATTENTION,  // attention: per-thread running sums and scores
  CPU_SCRATCH_MOE,        // moe: router logits, top-k, expert grouping, per-expert activations
  CPU_SCRATCH_COUNT,
} CpuScratchSlot;

typedef struct {
  void *ptr;
  size_t bytes;
} CpuScratch;

typedef struct {
  int num_threads;
  CpuScratch scratch[CPU_SCRATCH_COUNT];
} CpuState;

static inline CpuState *cpu_state(Backend *be) { return (CpuState *)be->state; }

// At least bytes of scratch in slot (contents undefined), 64-byte aligned; grows, never shrinks.
void *cpu_scratch(Backend *be, CpuScratchSlot slot, size_t bytes);

// Decodes weight rows row0 .. row0 + num_rows - 1 of w to float.   out: [num_rows, w->cols]
void cpu_decode_rows(const WeightMatrix *w, int64_t row0, int64_t num_rows, float *out);

// The ops (backend.h documents each).
void cpu_embed(Backend *be, const WeightMatrix *table, const uint32_t *ids, int num_tokens,
               float *out);
void cpu_rmsnorm(Backend *be, const float *x, const float *scale, int num_rows, int dim,
                 float *out);
void cpu_linear(Backend *be, const WeightMatrix *w, const float *bias, const float *x, int num_rows,
                float *y, bool accumulate);
void cpu_rope(Backend *be, float *x, int num_rows, int row_stride, int num_heads, int head_dim,
              const int32_t *positions, const RopeTable *rope);
void cpu_kv_write(Backend *be, KvCache *kv, int layer, const float *k, const float *v, int stride,
                  const int64_t *slot_mapping, int num_tokens);
void cpu_attention(Backend *be, const AttentionArgs *a);
void cpu_moe(Backend *be, const MoeArgs *a);
void cpu_gather_rows(Backend *be, const float *in, const int32_t *rows, int num_rows, int dim,
                     float *out);

// sum a[i] * b[i] with eight partial sums (the same order at any thread count).
// a, b: [n]
static inline float cpu_dot(const float *a, const float *b, int64_t n) {
  float acc[8] = {0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) acc[k] += a[i + k] * b[i + k];
  for (; i < n; i++) acc[0] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

#endif
