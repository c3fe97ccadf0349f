// cpu_moe.c: the MoE block after its RMSNorm (spec gptoss-model.md sections 2.2, 2.3): router
// linear with bias, top-k on the logits (ties to the lower expert index), softmax over the k,
// then expert by expert: gather the tokens that picked it, mlp1 + bias, clamped SwiGLU on the
// interleaved gate/linear pairs, mlp2 + bias, and the routing-weighted rows added to the
// residual. Matrix products go through cpu_linear; this file owns the routing and the SwiGLU.
#include <math.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "common/check.h"

#define CPU_MOE_PARALLEL_MIN 16384

// Carves n bytes (64-aligned) from a scratch cursor.
static void *cpu_moe_take(char **cursor, size_t n) {
  void *p = *cursor;
  *cursor += (n + 63) & ~(size_t)63;
  return p;
}

// Per token: the k largest logits in descending order (ties: lower index first) and their
// softmax. logits: [num_tokens, num_experts], experts, weights: [num_tokens, k]
static void cpu_moe_route(Backend *be, const float *logits, int num_tokens, int num_experts, int k,
                          int32_t *experts, float *weights) {
  const int num_threads = cpu_state(be)->num_threads;
  const bool parallel = (int64_t)num_tokens * num_experts * k >= CPU_MOE_PARALLEL_MIN;
#pragma omp parallel for num_threads(num_threads) if (parallel)
  for (int t = 0; t < num_tokens; t++) {
    const float *l = logits + (int64_t)t * num_experts;  // [num_experts]
    int32_t *ex = experts + (int64_t)t * k;              // [k]
    float *w = weights + (int64_t)t * k;                 // [k]
    for (int r = 0; r < k; r++) {
      int best = -1;
      for (int e = 0; e < num_experts; e++) {
        bool taken = false;
        for (int q = 0; q < r; q++) taken |= ex[q] == e;
        if (!taken && (best < 0 || l[e] > l[best])) best = e;
      }
      ex[r] = best;
    }
    float sum = 0.0f;
    for (int r = 0; r < k; r++) {
      w[r] = expf(l[ex[r]] - l[ex[0]]);
      sum += w[r];
    }
    for (int r = 0; r < k; r++) w[r] /= sum;
  }
}

// act = g * sigmoid(alpha g) * (lin + 1) with g = min(h[2i], limit), lin = clip(h[2i+1], +-limit).
// h: [num_rows, 2 * inter], act: [num_rows, inter]
static void cpu_moe_swiglu(Backend *be, const float *h, int num_rows, int inter, float limit,
                           float *act) {
  const int num_threads = cpu_state(be)->num_threads;
  const bool parallel = (int64_t)num_rows * inter >= CPU_MOE_PARALLEL_MIN;
#pragma omp parallel for num_threads(num_threads) if (parallel)
  for (int r = 0; r < num_rows; r++) {
    const float *hr = h + (int64_t)r * 2 * inter;  // [2 * inter]
    float *ar = act + (int64_t)r * inter;          // [inter]
    for (int i = 0; i < inter; i++) {
      float g = fminf(hr[2 * i], limit);
      float lin = fminf(fmaxf(hr[2 * i + 1], -limit), limit);
      float glu = g / (1.0f + expf(-GPTOSS_SWIGLU_ALPHA * g));
      ar[i] = glu * (lin + 1.0f);
    }
  }
}

void cpu_moe(Backend *be, const MoeArgs *a) {
  const GptOssConfig *c = a->config;
  const LayerWeights *L = a->layer;
  const int num_tokens = a->num_tokens, hidden = c->hidden_size, num_experts = c->num_experts;
  const int k = c->experts_per_token, inter = c->intermediate_size;
  CHECK(k > 0 && k <= num_experts && L->mlp1_bias && L->mlp2_bias);
  if (num_tokens == 0) return;
  const int num_threads = cpu_state(be)->num_threads;

  const size_t T = (size_t)num_tokens, pad = 64 * 10;
  size_t bytes = pad + T * (size_t)num_experts * sizeof(float)                    // logits
                 + 2 * T * (size_t)k * sizeof(int32_t)                            // experts, order
                 + T * (size_t)k * sizeof(float)                                  // weights
                 + ((size_t)num_experts + 1) * sizeof(int32_t)                    // offsets
                 + T * (2 * (size_t)hidden + 3 * (size_t)inter) * sizeof(float);  // xg, y, h, act
  char *cursor = cpu_scratch(be, CPU_SCRATCH_MOE, bytes);
  float *logits = cpu_moe_take(&cursor, T * num_experts * sizeof(float));  // [T, num_experts]
  int32_t *experts = cpu_moe_take(&cursor, T * k * sizeof(int32_t));       // [T, k]
  float *weights = cpu_moe_take(&cursor, T * k * sizeof(float));           // [T, k]
  int32_t *offsets = cpu_moe_take(&cursor, (num_experts + 1) * sizeof(int32_t));  // [E + 1]
  int32_t *order = cpu_moe_take(&cursor, T * k * sizeof(int32_t));  // [T * k] t * k + rank
  float *xg = cpu_moe_take(&cursor, T * hidden * sizeof(float));    // [<= T, hidden]
  float *h = cpu_moe_take(&cursor, T * 2 * inter * sizeof(float));  // [<= T, 2 * inter]
  float *act = cpu_moe_take(&cursor, T * inter * sizeof(float));    // [<= T, inter]
  float *y = cpu_moe_take(&cursor, T * hidden * sizeof(float));     // [<= T, hidden]

  cpu_linear(be, &L->gate, L->gate_bias, a->x, num_tokens, logits, false);
  cpu_moe_route(be, logits, num_tokens, num_experts, k, experts, weights);

  // Group (token, rank) pairs by expert, in token order within each expert.
  memset(offsets, 0, (num_experts + 1) * sizeof(int32_t));
  for (size_t i = 0; i < T * k; i++) offsets[experts[i] + 1]++;
  for (int e = 0; e < num_experts; e++) offsets[e + 1] += offsets[e];
  for (size_t i = 0; i < T * k; i++) order[offsets[experts[i]]++] = (int32_t)i;
  for (int e = num_experts; e > 0; e--) offsets[e] = offsets[e - 1];
  offsets[0] = 0;

  for (int e = 0; e < num_experts; e++) {
    const int32_t *pairs = order + offsets[e];  // [n] t * k + rank
    const int n = offsets[e + 1] - offsets[e];
    if (n == 0) continue;
    const WeightMatrix *w1 = &L->mlp1[e], *w2 = &L->mlp2[e];
    CHECK(w1->rows == 2 * (int64_t)inter && w1->cols == hidden);
    CHECK(w2->rows == hidden && w2->cols == inter);
    const bool parallel = (int64_t)n * hidden >= CPU_MOE_PARALLEL_MIN;
#pragma omp parallel for num_threads(num_threads) if (parallel)
    for (int i = 0; i < n; i++)
      memcpy(xg + (int64_t)i * hidden, a->x + (int64_t)(pairs[i] / k) * hidden,
             (size_t)hidden * sizeof(float));
    cpu_linear(be, w1, L->mlp1_bias + (int64_t)e * 2 * inter, xg, n, h, false);
    cpu_moe_swiglu(be, h, n, inter, c->swiglu_limit, act);
    cpu_linear(be, w2, L->mlp2_bias + (int64_t)e * hidden, act, n, y, false);
    // A token picks an expert at most once, so the rows written here are distinct.
#pragma omp parallel for num_threads(num_threads) if (parallel)
    for (int i = 0; i < n; i++) {
      float *res = a->residual + (int64_t)(pairs[i] / k) * hidden;  // [hidden]
      const float *yr = y + (int64_t)i * hidden;                    // [hidden]
      const float wt = weights[pairs[i]];
      for (int d = 0; d < hidden; d++) res[d] += wt * yr[d];
    }
  }
}
