// cpu_moe.c: the MoE block after its RMSNorm (spec gptoss-model.md sections 2.2, 2.3): router
// linear with bias, top-k on the logits (ties to the lower expert index; a MoeProbe reads the
// margins to the (k+1)-th and can flip one token's k-th pick), softmax over the k,
// then expert by expert: gather the tokens that picked it, mlp1 + bias, clamped SwiGLU on the
// interleaved gate/linear pairs, mlp2 + bias, and the routing-weighted rows added to the
// residual; only the experts in [expert_begin, expert_end) run (expert parallelism). Matrix
// products go through cpu_linear; this file owns the routing and the SwiGLU (its AVX-512 twin is
// cpu_moe512.c).
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

typedef struct {
  const float *logits;  // [num_tokens, num_experts]
  int num_experts, k;
  const MoeProbe *probe;  // NULL, or diagnostics
  int32_t *experts;       // [num_tokens, k]
  float *weights;         // [num_tokens, k]
} CpuRouteCtx;

// The index of the largest logit not among taken[0 .. num_taken) (ties: the lower index).
static int cpu_moe_next_best(const float *logits, int num_experts, const int32_t *taken,
                             int num_taken) {
  int best = -1;
  for (int e = 0; e < num_experts; e++) {
    bool is_taken = false;
    for (int q = 0; q < num_taken; q++) is_taken |= taken[q] == e;
    if (!is_taken && (best < 0 || logits[e] > logits[best])) best = e;
  }
  return best;
}

// Per token: the k largest logits in descending order (ties: lower index first) and their
// softmax. A probe also gets each token's margin to the (k+1)-th logit, and its flipped token
// takes the (k+1)-th expert in place of the k-th.
static void cpu_moe_route_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuRouteCtx *c = ctx;
  const int k = c->k, num_experts = c->num_experts;
  const MoeProbe *probe = c->probe;
  for (int64_t t = begin; t < end; t++) {
    const float *l = c->logits + t * num_experts;  // [num_experts]
    int32_t *ex = c->experts + t * k;              // [k]
    float *w = c->weights + t * k;                 // [k]
    for (int r = 0; r < k; r++) ex[r] = cpu_moe_next_best(l, num_experts, ex, r);
    if (probe) {  // with k = num_experts there is no (k+1)-th: an infinite margin
      const int next = k < num_experts ? cpu_moe_next_best(l, num_experts, ex, k) : -1;
      if (probe->margins) probe->margins[t] = next < 0 ? INFINITY : l[ex[k - 1]] - l[next];
      if (probe->flip_token == t && next >= 0) ex[k - 1] = next;
    }
    float sum = 0.0f;
    for (int r = 0; r < k; r++) {
      w[r] = expf(l[ex[r]] - l[ex[0]]);
      sum += w[r];
    }
    for (int r = 0; r < k; r++) w[r] /= sum;
  }
}

typedef struct {
  const float *h;  // [num_rows, 2 * inter]
  int inter;
  float limit;
  bool avx512;
  float *act;  // [num_rows, inter]
} CpuSwigluCtx;

// act = g * sigmoid(alpha g) * (lin + 1) with g = min(h[2i], limit), lin = clip(h[2i+1], +-limit).
static void cpu_moe_swiglu_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuSwigluCtx *c = ctx;
  const int inter = c->inter;
  const float limit = c->limit;
  for (int64_t r = begin; r < end; r++) {
    const float *hr = c->h + r * 2 * inter;  // [2 * inter]
    float *ar = c->act + r * inter;          // [inter]
    if (c->avx512) {
      cpu_swiglu512_row(hr, inter, limit, ar);
      continue;
    }
    for (int i = 0; i < inter; i++) {
      float g = fminf(hr[2 * i], limit);
      float lin = fminf(fmaxf(hr[2 * i + 1], -limit), limit);
      float glu = g / (1.0f + expf(-GPTOSS_SWIGLU_ALPHA * g));
      ar[i] = glu * (lin + 1.0f);
    }
  }
}

// One expert's tokens: gathered into xg before mlp1, their rows of y added to the residual after
// mlp2, weighted.
typedef struct {
  const MoeArgs *a;
  const int32_t *pairs;  // [n] t * k + rank of the tokens that picked the expert
  const float *weights;  // [num_tokens * k]
  float *xg;             // [n, hidden]
  const float *y;        // [n, hidden]
} CpuExpertCtx;

static void cpu_moe_gather_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuExpertCtx *c = ctx;
  const int hidden = c->a->config->hidden_size, k = c->a->config->experts_per_token;
  for (int64_t i = begin; i < end; i++)
    memcpy(c->xg + i * hidden, c->a->x + (int64_t)(c->pairs[i] / k) * hidden,
           (size_t)hidden * sizeof(float));
}

// A token picks an expert at most once, so the rows written here are distinct.
static void cpu_moe_add_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuExpertCtx *c = ctx;
  const int hidden = c->a->config->hidden_size, k = c->a->config->experts_per_token;
  for (int64_t i = begin; i < end; i++) {
    float *res = c->a->residual + (int64_t)(c->pairs[i] / k) * hidden;  // [hidden]
    const float *yr = c->y + i * hidden;                                // [hidden]
    const float wt = c->weights[c->pairs[i]];
    for (int d = 0; d < hidden; d++) res[d] += wt * yr[d];
  }
}

// Whether every expert in [begin, end) with tokens has at most CPU_MX8ROW_MAX_ROWS of them
// and both its products go through cpu_mx8row.c (decode), so cpu_moe_few_tokens can run them.
static bool cpu_moe_all_few(Backend *be, const LayerWeights *L, const int32_t *offsets, int begin,
                            int end) {
  for (int e = begin; e < end; e++) {
    const int n = offsets[e + 1] - offsets[e];
    if (n > CPU_MX8ROW_MAX_ROWS || (n > 0 && (!cpu_linear_uses_mx8(be, &L->mlp1[e - begin], n) ||
                                              !cpu_linear_uses_mx8(be, &L->mlp2[e - begin], n))))
      return false;
  }
  return true;
}

// The products of the experts in [begin, end) with tokens: each expert's mlp (w[e - begin]) on
// its rows of x (the experts' rows one after another, as offsets from offsets[begin] say) into
// its rows of y, which start as its bias rows; all in one parallel loop.
// x: [pairs, w->cols], y: [pairs, w->rows], bias: [end - begin, w->rows]
static void cpu_moe_few_products(Backend *be, const WeightMatrix *w, const float *bias,
                                 const int32_t *offsets, int begin, int end, const float *x,
                                 float *y, CpuMx8RowProduct *products) {
  int count = 0;
  for (int e = begin; e < end; e++) {
    const int n = offsets[e + 1] - offsets[e];
    if (n == 0) continue;
    const WeightMatrix *we = &w[e - begin];
    const int64_t row = offsets[e] - offsets[begin];
    float *ye = y + row * we->rows;
    cpu_linear_prepare(ye, bias + (int64_t)(e - begin) * we->rows, n, we->rows, false);
    products[count++] = (CpuMx8RowProduct){we, x + row * we->cols, n, ye};
  }
  cpu_mx8row_linear(be, products, count, false);
}

// The experts of a decode step, each with a few tokens: phase by phase for all of them (gather,
// mlp1, SwiGLU, mlp2, the weighted sum), each expert product of a phase in one parallel loop
// instead of a hand-off to the threads per expert and product. The residual rows are added on
// one thread: a token's k experts add to the same row.
static void cpu_moe_few_tokens(Backend *be, const MoeArgs *a, const int32_t *offsets,
                               const int32_t *order, const float *weights, float *xg, float *h,
                               float *act, float *y, CpuMx8RowProduct *products) {
  const GptOssConfig *c = a->config;
  const LayerWeights *L = a->layer;
  const int begin = a->expert_begin, end = a->expert_end, inter = c->intermediate_size;
  const int pairs = offsets[end] - offsets[begin];
  if (pairs == 0) return;  // expert parallelism: none of this rank's experts was picked
  CpuExpertCtx ex = {a, order + offsets[begin], weights, xg, y};
  cpu_moe_gather_task(&ex, 0, pairs, 0);
  cpu_moe_few_products(be, L->mlp1, L->mlp1_bias, offsets, begin, end, xg, h, products);
  CpuSwigluCtx sw = {h, inter, c->swiglu_limit, cpu_state(be)->avx512, act};
  cpu_moe_swiglu_task(&sw, 0, pairs, 0);
  cpu_moe_few_products(be, L->mlp2, L->mlp2_bias, offsets, begin, end, act, y, products);
  cpu_moe_add_task(&ex, 0, pairs, 0);
}

void cpu_moe(Backend *be, const MoeArgs *a) {
  const GptOssConfig *c = a->config;
  const LayerWeights *L = a->layer;
  const int num_tokens = a->num_tokens, hidden = c->hidden_size, num_experts = c->num_experts;
  const int k = c->experts_per_token, inter = c->intermediate_size;
  CHECK(k > 0 && k <= num_experts && L->mlp1_bias && L->mlp2_bias);
  if (num_tokens == 0) return;

  CHECK(0 <= a->expert_begin && a->expert_begin < a->expert_end && a->expert_end <= num_experts);
  // Rows of xg, h, act and y: one expert's tokens at a time, or with a few tokens an expert
  // (at most CPU_MX8ROW_MAX_ROWS each, so at most that many per expert) all the experts' at once.
  const int local_experts = a->expert_end - a->expert_begin;
  const size_t T = (size_t)num_tokens, pad = 64 * 11;
  const bool few_fit = T * k <= (size_t)CPU_MX8ROW_MAX_ROWS * (size_t)local_experts;
  const size_t R = few_fit ? T * k : T;
  size_t bytes = pad + T * (size_t)num_experts * sizeof(float)                    // logits
                 + 2 * T * (size_t)k * sizeof(int32_t)                            // experts, order
                 + T * (size_t)k * sizeof(float)                                  // weights
                 + ((size_t)num_experts + 1) * sizeof(int32_t)                    // offsets
                 + (size_t)local_experts * sizeof(CpuMx8RowProduct)               // products
                 + R * (2 * (size_t)hidden + 3 * (size_t)inter) * sizeof(float);  // xg, y, h, act
  char *cursor = cpu_scratch(be, CPU_SCRATCH_MOE, bytes);
  float *logits = cpu_moe_take(&cursor, T * num_experts * sizeof(float));  // [T, num_experts]
  int32_t *experts = cpu_moe_take(&cursor, T * k * sizeof(int32_t));       // [T, k]
  float *weights = cpu_moe_take(&cursor, T * k * sizeof(float));           // [T, k]
  int32_t *offsets = cpu_moe_take(&cursor, (num_experts + 1) * sizeof(int32_t));  // [E + 1]
  int32_t *order = cpu_moe_take(&cursor, T * k * sizeof(int32_t));  // [T * k] t * k + rank
  CpuMx8RowProduct *products = cpu_moe_take(&cursor, local_experts * sizeof(CpuMx8RowProduct));
  float *xg = cpu_moe_take(&cursor, R * hidden * sizeof(float));    // [<= R, hidden]
  float *h = cpu_moe_take(&cursor, R * 2 * inter * sizeof(float));  // [<= R, 2 * inter]
  float *act = cpu_moe_take(&cursor, R * inter * sizeof(float));    // [<= R, inter]
  float *y = cpu_moe_take(&cursor, R * hidden * sizeof(float));     // [<= R, hidden]

  cpu_linear(be, &L->gate, L->gate_bias, a->x, num_tokens, logits, false);
  CpuRouteCtx route = {logits, num_experts, k, a->probe, experts, weights};
  cpu_parallel(be, num_tokens,
               cpu_grain(be, num_tokens, (int64_t)num_experts * k, CPU_MOE_PARALLEL_MIN),
               cpu_moe_route_task, &route);

  // Group (token, rank) pairs by expert, in token order within each expert.
  memset(offsets, 0, (num_experts + 1) * sizeof(int32_t));
  for (size_t i = 0; i < T * k; i++) offsets[experts[i] + 1]++;
  for (int e = 0; e < num_experts; e++) offsets[e + 1] += offsets[e];
  for (size_t i = 0; i < T * k; i++) order[offsets[experts[i]]++] = (int32_t)i;
  for (int e = num_experts; e > 0; e--) offsets[e] = offsets[e - 1];
  offsets[0] = 0;

  const bool avx512 = cpu_state(be)->avx512;
  for (int e = a->expert_begin; e < a->expert_end; e++) {
    const WeightMatrix *w1 = &L->mlp1[e - a->expert_begin], *w2 = &L->mlp2[e - a->expert_begin];
    CHECK(w1->rows == 2 * (int64_t)inter && w1->cols == hidden);
    CHECK(w2->rows == hidden && w2->cols == inter);
  }
  if (few_fit && cpu_moe_all_few(be, L, offsets, a->expert_begin, a->expert_end)) {
    cpu_moe_few_tokens(be, a, offsets, order, weights, xg, h, act, y, products);
    return;
  }
  for (int e = a->expert_begin; e < a->expert_end; e++) {
    const int n = offsets[e + 1] - offsets[e];
    if (n == 0) continue;
    const int local = e - a->expert_begin;  // index into this rank's experts
    const WeightMatrix *w1 = &L->mlp1[local], *w2 = &L->mlp2[local];
    CpuExpertCtx ex = {a, order + offsets[e], weights, xg, y};
    const int64_t grain = cpu_grain(be, n, hidden, CPU_MOE_PARALLEL_MIN);
    cpu_parallel(be, n, grain, cpu_moe_gather_task, &ex);
    cpu_linear(be, w1, L->mlp1_bias + (int64_t)local * 2 * inter, xg, n, h, false);
    CpuSwigluCtx sw = {h, inter, c->swiglu_limit, avx512, act};
    cpu_parallel(be, n, cpu_grain(be, n, inter, CPU_MOE_PARALLEL_MIN), cpu_moe_swiglu_task, &sw);
    cpu_linear(be, w2, L->mlp2_bias + (int64_t)local * hidden, act, n, y, false);
    cpu_parallel(be, n, grain, cpu_moe_add_task, &ex);
  }
}
