// cuda_moe.cu: the MoE op after its RMSNorm (spec gptoss-model.md sections 2.2, 2.3), routed on
// the device: the router product (cuda_linear, with bias), top-k per token (one warp per token,
// ties to the lower expert index) and the softmax over the k; then the (token, rank) pairs are
// grouped by expert (one block: counts, prefix sums, work items of CUDA_MOE_BM rows, or of
// CUDA_MOE_WIDE_BM for the wide kernel, for the experts in [expert_begin, expert_end), a
// scatter), the grouped expert kernels run mlp1 + SwiGLU and mlp2 (cuda_moe_gemm.cu; for
// prefill-sized calls cuBLAS on weights decoded to bf16, cuda_moe_cublas.cu), and each token's
// weighted expert rows are summed in rank order into the residual. The grouping's scatter
// orders an expert's pairs differently from call to call; on the grouped kernels that changes
// no row's result, so the op is deterministic there; on the cuBLAS path a row's bits may depend
// on its place among its expert's rows (cuBLAS's tiling; test_cuda_ops says whether they did).
// Nothing leaves the device; no host synchronisation but the cuBLAS path's one read of the
// experts' counts.
#include <cub/block/block_scan.cuh>

#include "backend/cuda/cuda_moe.cuh"

#define MOE_ROUTE_WARPS 4
#define MOE_GROUP_THREADS CUDA_MOE_MAX_EXPERTS  // the grouping kernel: a thread per expert

// One warp per token: the k largest logits in descending order (ties: lower index), their
// softmax, and each pick counted for its expert.
// logits: [num_tokens, num_experts]; experts, weights: [num_tokens, k]; counts: [num_experts]
__global__ void cuda_moe_route_kernel(const float *logits, int num_tokens, int num_experts, int k,
                                      int32_t *experts, float *weights, int *counts) {
  const int t = blockIdx.x * MOE_ROUTE_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (t >= num_tokens) return;
  const float *l = logits + (int64_t)t * num_experts;  // [num_experts]
  uint32_t taken = 0;                                  // bit i: expert lane + 32 i is picked
  for (int r = 0; r < k; r++) {
    float best = 0.0f;
    int best_e = -1;
    for (int i = 0, e = lane; e < num_experts; i++, e += 32) {
      if (taken >> i & 1u) continue;
      const float v = l[e];
      if (best_e < 0 || v > best || (v == best && e < best_e)) best = v, best_e = e;
    }
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, best, o);
      const int oe = __shfl_xor_sync(0xffffffffu, best_e, o);
      if (oe >= 0 && (best_e < 0 || ov > best || (ov == best && oe < best_e)))
        best = ov, best_e = oe;
    }
    if (best_e % 32 == lane) taken |= 1u << (best_e / 32);
    if (lane == 0) {
      experts[(int64_t)t * k + r] = best_e;
      weights[(int64_t)t * k + r] = best;  // the logit, until the softmax below
      atomicAdd(&counts[best_e], 1);
    }
  }
  if (lane == 0) {
    float *w = weights + (int64_t)t * k;  // [k]
    const float top = w[0];
    float sum = 0.0f;
    for (int r = 0; r < k; r++) {
      w[r] = expf(w[r] - top);
      sum += w[r];
    }
    for (int r = 0; r < k; r++) w[r] /= sum;
  }
}

// One block, a thread per expert: pair offsets by expert and the work items of the experts in
// [begin, end) (tiles of tile_rows positions), both exclusive prefix sums (CUB's block scan),
// then every pair id scattered to its expert's run of `sorted`.
// experts: [num_pairs]; counts: [num_experts]; sorted: [num_pairs]; items: [bound]
__global__ void __launch_bounds__(MOE_GROUP_THREADS)
    cuda_moe_group_kernel(const int32_t *experts, const int *counts, int num_pairs, int num_experts,
                          int begin, int end, int tile_rows, int32_t *sorted, int4 *items,
                          int *num_items) {
  using Scan = cub::BlockScan<int, MOE_GROUP_THREADS>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ int cursor[MOE_GROUP_THREADS];
  const int e = threadIdx.x;
  const int n = e < num_experts ? counts[e] : 0;
  const int tiles = e >= begin && e < end ? (n + tile_rows - 1) / tile_rows : 0;
  int offset, item_offset, total_items;
  Scan(scan).ExclusiveSum(n, offset);
  __syncthreads();  // the scan's storage is used again
  Scan(scan).ExclusiveSum(tiles, item_offset, total_items);
  if (e == 0) *num_items = total_items;
  cursor[e] = offset;
  for (int i = 0; i < tiles; i++) {
    const int rows = n - i * tile_rows < tile_rows ? n - i * tile_rows : tile_rows;
    items[item_offset + i] = make_int4(e - begin, offset + i * tile_rows, rows, 0);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < num_pairs; i += blockDim.x)
    sorted[atomicAdd(&cursor[experts[i]], 1)] = i;
}

// out[i] = x[i] rounded to bf16 (to nearest even), two at a time.   x, out: [n], n even
__global__ void cuda_moe_to_bf16_kernel(const float2 *x, int64_t n2, __nv_bfloat162 *out) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n2;
       i += (int64_t)gridDim.x * blockDim.x)
    out[i] = __floats2bfloat162_rn(x[i].x, x[i].y);
}

// residual[t] += sum over ranks r (in order) whose expert is in [begin, end) of pair t * k + r's
// row of y: row t * k + r, or with position (the cuBLAS path's rows by position) row
// position[t * k + r].
// y: [num_tokens * k, hidden]; experts, position: [num_tokens * k]; residual: [num_tokens, hidden]
__global__ void cuda_moe_combine_kernel(const float *y, const int32_t *experts,
                                        const int32_t *position, int k, int hidden, int begin,
                                        int end, int64_t total, float *residual) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t t = i / hidden, d = i % hidden;
    float sum = 0.0f;
    for (int r = 0; r < k; r++) {
      const int64_t pair = t * k + r;
      const int e = experts[pair];
      if (e >= begin && e < end) sum += y[(position ? position[pair] : pair) * hidden + d];
    }
    residual[i] += sum;
  }
}

// Checks that every expert of the range has one format and the config's shapes.
static WeightFormat cuda_moe_format(const MoeArgs *a) {
  const LayerWeights *L = a->layer;
  const int64_t hidden = a->config->hidden_size, inter = a->config->intermediate_size;
  const WeightFormat f = L->mlp1[0].format;
  CHECK(f == WEIGHT_MXFP4 || f == WEIGHT_BF16 || f == WEIGHT_F32);
  for (int i = 0; i < a->expert_end - a->expert_begin; i++) {
    const WeightMatrix *w1 = &L->mlp1[i], *w2 = &L->mlp2[i];
    CHECK(w1->format == f && w2->format == f && w1->data && w2->data);
    CHECK(w1->rows == 2 * inter && w1->cols == hidden && w2->rows == hidden && w2->cols == inter);
  }
  return f;
}

// The expert kernel of a call of P pairs: for MXFP4 experts whose pairs average
// st->moe_cublas_rows an expert, the cuBLAS path; from st->moe_wide_rows, the wide kernel's
// 128-row shape (both products' columns whole stages of it); else the tile kernel's 32 rows
// (every BF16 and F32 call: the grouped kernels of their format), unless
// GPTOSS_CUDA_MOE_KERNEL chose one (wide32: the wide kernel's 32-row shape) for every call it
// fits. A call cuBLAS does not fit (a graph being recorded) takes what the rows choose below it.
static CudaMoeKernel cuda_moe_choose(const CudaState *st, WeightFormat fmt, const GptOssConfig *c,
                                     size_t P) {
  if (fmt != WEIGHT_MXFP4) return CUDA_MOE_KERNEL_TILE;
  const size_t E = (size_t)c->num_experts;
  const auto from = [&](int rows) { return rows > 0 && P >= (size_t)rows * E; };
  const CudaMoeKernel by_rows =
      from(st->moe_wide_rows) ? CUDA_MOE_KERNEL_WIDE : CUDA_MOE_KERNEL_TILE;
  CudaMoeKernel k = st->moe_kernel;
  if (k == CUDA_MOE_KERNEL_AUTO) k = from(st->moe_cublas_rows) ? CUDA_MOE_KERNEL_CUBLAS : by_rows;
  if (k == CUDA_MOE_KERNEL_CUBLAS && !cuda_moe_cublas_fits(c)) k = by_rows;
  const bool wide_fits =
      c->hidden_size % CUDA_MOE_WIDE_BK == 0 && c->intermediate_size % CUDA_MOE_WIDE_BK == 0;
  if ((k == CUDA_MOE_KERNEL_WIDE || k == CUDA_MOE_KERNEL_WIDE32) && !wide_fits)
    k = CUDA_MOE_KERNEL_TILE;
  return k;
}

// One expert product (stage 1 or 2) in launches of at most CUDA_MOE_MAX_LAUNCH_EXPERTS experts.
static void cuda_moe_stage(CudaState *st, CudaMoeGemm *g, const WeightMatrix *w, int num_local,
                           int max_items) {
  for (int first = 0; first < num_local; first += CUDA_MOE_MAX_LAUNCH_EXPERTS) {
    g->first = first;
    g->count = num_local - first < CUDA_MOE_MAX_LAUNCH_EXPERTS ? num_local - first
                                                               : CUDA_MOE_MAX_LAUNCH_EXPERTS;
    for (int i = 0; i < g->count; i++) {
      g->w[i] = w[first + i].data;
      g->scales[i] = (const uint8_t *)w[first + i].scales;
    }
    cuda_moe_gemm(st, *g, max_items);
  }
}

void cuda_moe(Backend *be, const MoeArgs *a) {
  CudaState *st = cuda_enter(be);
  const GptOssConfig *c = a->config;
  const LayerWeights *L = a->layer;
  const int T = a->num_tokens, hidden = c->hidden_size, E = c->num_experts;
  const int k = c->experts_per_token, inter = c->intermediate_size;
  CHECK(k > 0 && k <= E && E <= CUDA_MOE_MAX_EXPERTS && L->mlp1_bias && L->mlp2_bias);
  CHECK(0 <= a->expert_begin && a->expert_begin < a->expert_end && a->expert_end <= E);
  CHECK(a->probe == NULL);  // router diagnostics are the CPU's (generate refuses them here)
  if (T == 0) return;
  const int num_local = a->expert_end - a->expert_begin;
  const WeightFormat fmt = cuda_moe_format(a);

  const size_t P = (size_t)T * k;  // (token, rank) pairs
  CudaMoeGemm g = {};
  const CudaMoeKernel kernel = cuda_moe_choose(st, fmt, c, P);
  const bool cublas = kernel == CUDA_MOE_KERNEL_CUBLAS;
  g.wide = kernel == CUDA_MOE_KERNEL_WIDE || kernel == CUDA_MOE_KERNEL_WIDE32;
  g.tile_rows = kernel == CUDA_MOE_KERNEL_WIDE ? CUDA_MOE_WIDE_BM : CUDA_MOE_BM;
  const int tile_rows = g.tile_rows;
  const int max_items = (int)(P / tile_rows) + (num_local < (int)P ? num_local : (int)P);
  const size_t bytes = 10 * 256 + (size_t)T * E * sizeof(float)      // logits
                       + (size_t)T * hidden * sizeof(__nv_bfloat16)  // x_bf16
                       + P * (2 * sizeof(int32_t) + sizeof(float))   // experts, sorted, weights
                       + (size_t)E * sizeof(int) + (size_t)max_items * sizeof(int4) + sizeof(int) +
                       P * ((size_t)inter + hidden) * sizeof(float) +  // act, y
                       (cublas ? cuda_moe_cublas_scratch(c, P) : 0);
  char *cursor = (char *)cuda_scratch(st, CUDA_SCRATCH_MOE, bytes);
  float *logits = (float *)cuda_take(&cursor, (size_t)T * E * sizeof(float));  // [T, E]
  int32_t *experts = (int32_t *)cuda_take(&cursor, P * sizeof(int32_t));       // [P]
  float *weights = (float *)cuda_take(&cursor, P * sizeof(float));             // [P]
  int32_t *sorted = (int32_t *)cuda_take(&cursor, P * sizeof(int32_t));        // [P]
  int *counts = (int *)cuda_take(&cursor, (size_t)E * sizeof(int));            // [E]
  int4 *items = (int4 *)cuda_take(&cursor, (size_t)max_items * sizeof(int4));  // [max_items]
  int *num_items = (int *)cuda_take(&cursor, sizeof(int));                     // [1]
  float *act = (float *)cuda_take(&cursor, P * inter * sizeof(float));         // [P, inter]
  float *y = (float *)cuda_take(&cursor, P * hidden * sizeof(float));          // [P, hidden]
  __nv_bfloat16 *x_bf16 =
      (__nv_bfloat16 *)cuda_take(&cursor, (size_t)T * hidden * sizeof(__nv_bfloat16));

  CudaProfileScope phase(st, CUDA_PROF_MOE_ROUTE);
  cuda_linear(be, &L->gate, L->gate_bias, a->x, T, logits, false);
  CUDA_CHECK(cudaMemsetAsync(counts, 0, (size_t)E * sizeof(int), st->stream));
  cuda_moe_route_kernel<<<cuda_blocks(T, MOE_ROUTE_WARPS), 32 * MOE_ROUTE_WARPS, 0, st->stream>>>(
      logits, T, E, k, experts, weights, counts);
  CUDA_CHECK_LAUNCH();
  cuda_moe_group_kernel<<<1, MOE_GROUP_THREADS, 0, st->stream>>>(
      experts, counts, (int)P, E, a->expert_begin, a->expert_end, tile_rows, sorted, items,
      num_items);
  CUDA_CHECK_LAUNCH();

  const int64_t total = (int64_t)T * hidden;
  const unsigned blocks = cuda_stride_blocks((size_t)total, 256);
  if (fmt != WEIGHT_F32) {  // the tensor cores' input, rounded once
    cuda_moe_to_bf16_kernel<<<blocks, 256, 0, st->stream>>>((const float2 *)a->x, total / 2,
                                                            (__nv_bfloat162 *)x_bf16);
    CUDA_CHECK_LAUNCH();
  }

  g.format = fmt;
  g.items = items;
  g.num_items = num_items;
  g.sorted = sorted;
  g.top_k = k;
  g.limit = c->swiglu_limit;
  g.x = a->x;
  g.act = act;
  g.act_in = act;
  g.pair_weights = weights;
  g.y = y;
  g.x_bf16 = x_bf16;
  g.act_bf16 = (__nv_bfloat16 *)act;  // act's buffer, in bf16 (half of it)
  phase.next(CUDA_PROF_MOE_MLP1);     // on the cuBLAS path with its wait for the counts
  CudaMoeCublas m;  // filled on the cuBLAS path only (8 KB: not zeroed on every call)
  if (cublas) {
    m.config = c, m.layer = L, m.begin = a->expert_begin, m.num_local = num_local, m.pairs = P;
    m.experts = experts, m.sorted = sorted, m.pair_weights = weights, m.x_bf16 = x_bf16;
    m.act = (__nv_bfloat16 *)act, m.y = y;
    cuda_moe_cublas_gather(st, &m, counts, &cursor);
  }

  g.stage = 1, g.n = 2 * inter, g.k = hidden, g.bias = L->mlp1_bias;
  if (cublas)
    cuda_moe_cublas_products(st, m, 1);
  else
    cuda_moe_stage(st, &g, L->mlp1, num_local, max_items);
  phase.next(CUDA_PROF_MOE_MLP2);
  g.stage = 2, g.n = hidden, g.k = inter, g.bias = L->mlp2_bias;
  if (cublas)
    cuda_moe_cublas_products(st, m, 2);
  else
    cuda_moe_stage(st, &g, L->mlp2, num_local, max_items);
  phase.next(CUDA_PROF_MOE_SUM);

  cuda_moe_combine_kernel<<<blocks, 256, 0, st->stream>>>(y, experts, cublas ? m.position : NULL, k,
                                                          hidden, a->expert_begin, a->expert_end,
                                                          total, a->residual);
  CUDA_CHECK_LAUNCH();
}
