// cuda_moe_cublas.cu: the MoE op's two expert products on cuBLAS, for prefill-sized calls of
// MXFP4 experts (cuda_moe.cu chooses it). The grouping kernel has sorted the (token, rank) pairs
// by expert; here the host reads the experts' counts (the call's one wait), the pairs' token
// rows are gathered in that order into one bf16 block, and, a chunk of experts at a time, each
// product's MXFP4 weights are decoded to bf16 into scratch (exactly: every e2m1 value times a
// power of two is a bf16) and multiplied by one cublasGemmEx per expert over its rows (bf16 x
// bf16, float32 accumulation). Stage 1's products come out in bf16; its epilogue adds the bias
// and takes the clamped SwiGLU into act (bf16). Stage 2's come out in float32 straight into y,
// row by position (the pairs' sorted order); its epilogue adds the bias and applies the routing
// weight in place, and cuda_moe.cu's sum reads y through the pairs' positions. Where the grouped
// kernels decode every weight once per 32 or 128 token rows on the CUDA cores, this decodes it
// once per call and leaves the products to cuBLAS's tensor-core kernels: worth it from a few
// hundred rows an expert (the decode writes and the products read 4x the MXFP4 bytes).
#include "backend/cuda/cuda_decode.cuh"
#include "backend/cuda/cuda_moe.cuh"
#include "backend/cuda/cuda_moe_tile.cuh"

// One chunk's weights: experts whose rows the chunk multiplies, in one launch.
struct CudaMoeDecodeChunk {
  const uint32_t *w[CUDA_MOE_CUBLAS_CHUNK];      // [n, k / 8] stored words (cuda_mxfp4_layout.h)
  const uint8_t *scales[CUDA_MOE_CUBLAS_CHUNK];  // [n, k / 32]
  int count, n, k;
};

// out[i] = chunk expert i's weights in bf16, row-major [n, k]: 8 columns (one stored word) per
// thread, grid-stride.   out: [count, n, k]
__global__ void cuda_moe_decode_chunk_kernel(const __grid_constant__ CudaMoeDecodeChunk d,
                                             uint4 *out) {
  const int64_t words = (int64_t)d.n * (d.k / 8), total = words * d.count;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int e = (int)(i / words);
    const int64_t word = i % words, row = word / (d.k / 8), col = word % (d.k / 8) * 8;
    uint32_t pairs[4];
    cuda_mxfp4_decode_word(__ldg(d.w[e] + word), __ldg(d.scales[e] + row * (d.k / 32) + col / 32),
                           pairs);
    out[i] = make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
  }
}

// xs[r] = the bf16 input row of the pair at position first + r, and position[that pair] =
// first + r. hidden a multiple of 8.   xs: [rows, hidden]
__global__ void cuda_moe_gather_kernel(const __nv_bfloat16 *x_bf16, const int32_t *sorted,
                                       int top_k, int hidden, int64_t first, int64_t rows,
                                       __nv_bfloat16 *xs, int32_t *position) {
  const int64_t pieces = hidden / 8, total = rows * pieces;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / pieces, p = i % pieces;
    const int32_t pair = sorted[first + r];
    ((uint4 *)xs)[i] = ((const uint4 *)x_bf16)[(int64_t)(pair / top_k) * pieces + p];
    if (p == 0) position[pair] = (int32_t)(first + r);
  }
}

// Stage 1's epilogue over local rows [r0, r1): act[r] = SwiGLU(h1[r] + the row's expert's bias).
// h1: [rows, 2 inter] bf16; act: [rows, inter] bf16; bias: [local experts, 2 inter]
__global__ void cuda_moe_swiglu_rows_kernel(const __nv_bfloat162 *h1, const int32_t *sorted,
                                            const int32_t *experts, int64_t first, int begin,
                                            int inter, int64_t r0, int64_t r1, const float *bias,
                                            float limit, __nv_bfloat16 *act) {
  const int64_t total = (r1 - r0) * inter;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = r0 + i / inter;
    const int j = (int)(i % inter);
    const int e = experts[sorted[first + r]] - begin;
    const float2 v = __bfloat1622float2(h1[r * inter + j]);  // the gate/linear pair j
    const float *b = bias + (int64_t)e * 2 * inter + 2 * j;
    act[r * inter + j] = __float2bfloat16_rn(cuda_moe_swiglu(v.x + b[0], v.y + b[1], limit));
  }
}

// Stage 2's epilogue over local rows [r0, r1), in place: y[first + r] = routing weight * (row +
// the row's expert's bias).   y: [pairs, hidden] by position; bias: [local experts, hidden]
__global__ void cuda_moe_weigh_rows_kernel(const int32_t *sorted, const int32_t *experts,
                                           const float *pair_weights, int64_t first, int begin,
                                           int hidden, int64_t r0, int64_t r1, const float *bias,
                                           float *y) {
  const int64_t total = (r1 - r0) * hidden;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = r0 + i / hidden;
    const int d = (int)(i % hidden);
    const int32_t pair = sorted[first + r];
    const int e = experts[pair] - begin;
    float *out = y + (first + r) * hidden + d;
    *out = pair_weights[pair] * (*out + bias[(int64_t)e * hidden + d]);
  }
}

bool cuda_moe_cublas_fits(const GptOssConfig *c) {
  return c->hidden_size % 32 == 0 && c->intermediate_size % 32 == 0 && !cuda_graph_recording();
}

size_t cuda_moe_cublas_scratch(const GptOssConfig *c, size_t pairs) {
  const size_t hidden = (size_t)c->hidden_size, inter = (size_t)c->intermediate_size;
  return cuda_round256(pairs * sizeof(int32_t))                       // position
         + cuda_round256(pairs * hidden * sizeof(__nv_bfloat16))      // xs
         + cuda_round256(pairs * 2 * inter * sizeof(__nv_bfloat16));  // h1
}

// Local experts [l0, l1)'s rows: [row[l0], row[l1]) of the block (row: the host's prefix sums).
static void cuda_moe_cublas_stage(CudaState *st, const CudaMoeCublas &m, int stage) {
  const int hidden = m.config->hidden_size, inter = m.config->intermediate_size;
  const int n = stage == 1 ? 2 * inter : hidden, k = stage == 1 ? hidden : inter;
  const WeightMatrix *w = stage == 1 ? m.layer->mlp1 : m.layer->mlp2;
  const size_t expert_bytes = (size_t)n * k * sizeof(__nv_bfloat16);
  int per_chunk = (int)(CUDA_MOE_CUBLAS_CHUNK_BYTES / expert_bytes);
  per_chunk = per_chunk < 1                       ? 1
              : per_chunk > CUDA_MOE_CUBLAS_CHUNK ? CUDA_MOE_CUBLAS_CHUNK
                                                  : per_chunk;
  __nv_bfloat16 *decoded =
      (__nv_bfloat16 *)cuda_scratch(st, CUDA_SCRATCH_MOE_WEIGHTS, (size_t)per_chunk * expert_bytes);
  const float alpha = 1.0f, beta = 0.0f;
  int l = 0;
  while (l < m.num_local) {
    // The next chunk: up to per_chunk experts that have rows, from local expert l on.
    CudaMoeDecodeChunk d = {};
    int experts[CUDA_MOE_CUBLAS_CHUNK];
    const int l0 = l;
    for (; l < m.num_local && d.count < per_chunk; l++)
      if (m.row[l + 1] > m.row[l]) {
        d.w[d.count] = (const uint32_t *)w[l].data;
        d.scales[d.count] = (const uint8_t *)w[l].scales;
        experts[d.count++] = l;
      }
    if (d.count == 0) continue;
    d.n = n, d.k = k;
    const size_t words = (size_t)d.count * n * (k / 8);
    cuda_moe_decode_chunk_kernel<<<cuda_stride_blocks(words, 256), 256, 0, st->stream>>>(
        d, (uint4 *)decoded);
    CUDA_CHECK_LAUNCH();
    for (int i = 0; i < d.count; i++) {
      const int64_t r = m.row[experts[i]], rows = m.row[experts[i] + 1] - r;
      const __nv_bfloat16 *we = decoded + (size_t)i * n * k;
      if (stage == 1)
        CUBLAS_CHECK(cublasGemmEx(st->cublas, CUBLAS_OP_T, CUBLAS_OP_N, n, (int)rows, k, &alpha, we,
                                  CUDA_R_16BF, k, m.xs + r * k, CUDA_R_16BF, k, &beta, m.h1 + r * n,
                                  CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      else
        CUBLAS_CHECK(cublasGemmEx(st->cublas, CUBLAS_OP_T, CUBLAS_OP_N, n, (int)rows, k, &alpha, we,
                                  CUDA_R_16BF, k, m.act + r * k, CUDA_R_16BF, k, &beta,
                                  m.y + (m.first + r) * n, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
    }
    const int64_t r0 = m.row[l0], r1 = m.row[l];
    const size_t outputs = (size_t)(r1 - r0) * (stage == 1 ? inter : hidden);
    const unsigned blocks = cuda_stride_blocks(outputs, 256);
    if (stage == 1)
      cuda_moe_swiglu_rows_kernel<<<blocks, 256, 0, st->stream>>>(
          (const __nv_bfloat162 *)m.h1, m.sorted, m.experts, m.first, m.begin, inter, r0, r1,
          m.layer->mlp1_bias, m.config->swiglu_limit, m.act);
    else
      cuda_moe_weigh_rows_kernel<<<blocks, 256, 0, st->stream>>>(
          m.sorted, m.experts, m.pair_weights, m.first, m.begin, hidden, r0, r1, m.layer->mlp2_bias,
          m.y);
    CUDA_CHECK_LAUNCH();
  }
}

void cuda_moe_cublas_gather(CudaState *st, CudaMoeCublas *m, const int *counts, char **cursor) {
  const GptOssConfig *c = m->config;
  const int E = c->num_experts, hidden = c->hidden_size, inter = c->intermediate_size;
  cuda_buffer_reserve(&st->moe_counts_host, (size_t)E * sizeof(int), true);
  int *host = (int *)st->moe_counts_host.ptr;
  CUDA_CHECK(
      cudaMemcpyAsync(host, counts, (size_t)E * sizeof(int), cudaMemcpyDeviceToHost, st->stream));
  CUDA_CHECK(cudaStreamSynchronize(st->stream));
  // Positions as the grouping kernel laid them out: every expert's pairs, in expert order.
  int64_t first = 0;
  for (int e = 0; e < m->begin; e++) first += host[e];
  m->first = first;
  m->row[0] = 0;
  for (int l = 0; l < m->num_local; l++) m->row[l + 1] = m->row[l] + host[m->begin + l];
  const size_t pairs = m->pairs;
  m->position = (int32_t *)cuda_take(cursor, pairs * sizeof(int32_t));
  m->xs = (__nv_bfloat16 *)cuda_take(cursor, pairs * hidden * sizeof(__nv_bfloat16));
  m->h1 = (__nv_bfloat16 *)cuda_take(cursor, pairs * 2 * inter * sizeof(__nv_bfloat16));
  const int64_t rows = m->row[m->num_local];
  if (rows == 0) return;
  cuda_moe_gather_kernel<<<cuda_stride_blocks((size_t)rows * (hidden / 8), 256), 256, 0,
                           st->stream>>>(m->x_bf16, m->sorted, c->experts_per_token, hidden, first,
                                         rows, m->xs, m->position);
  CUDA_CHECK_LAUNCH();
}

void cuda_moe_cublas_products(CudaState *st, const CudaMoeCublas &m, int stage) {
  if (m.row[m.num_local] > 0) cuda_moe_cublas_stage(st, m, stage);
}
