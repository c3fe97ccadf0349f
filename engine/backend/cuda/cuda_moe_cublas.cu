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

// out[blockIdx.y] = chunk expert blockIdx.y's weights in bf16, row-major [n, k]: 8 columns (one
// stored word) per thread, grid-stride over the expert's n * k / 8 words (32-bit: at most 2^31).
// out: [count, n, k]
__global__ void cuda_moe_decode_chunk_kernel(const __grid_constant__ CudaMoeDecodeChunk d,
                                             uint4 *out) {
  const int e = blockIdx.y, words_per_row = d.k / 8, words = d.n * words_per_row;
  const uint32_t *w = d.w[e];
  const uint8_t *scales = d.scales[e];
  uint4 *dst = out + (int64_t)e * words;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x) {
    const int row = i / words_per_row, col = i % words_per_row * 8;
    uint32_t pairs[4];
    cuda_mxfp4_decode_word(__ldg(w + i), __ldg(scales + row * (d.k / 32) + col / 32), pairs);
    dst[i] = make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
  }
}

// Row r of the block (blockIdx.y, grid-stride over rows): xs[r] = the bf16 input row of the pair
// at position first + r, and position[that pair] = first + r. hidden a multiple of 8.
// xs: [rows, hidden]
__global__ void cuda_moe_gather_kernel(const __nv_bfloat16 *x_bf16, const int32_t *sorted,
                                       int top_k, int hidden, int64_t first, int rows,
                                       __nv_bfloat16 *xs, int32_t *position) {
  const int pieces = hidden / 8;
  for (int r = blockIdx.y; r < rows; r += gridDim.y) {
    const int32_t pair = sorted[first + r];
    const uint4 *src = (const uint4 *)(x_bf16 + (int64_t)(pair / top_k) * hidden);
    uint4 *dst = (uint4 *)(xs + (int64_t)r * hidden);
    for (int p = threadIdx.x; p < pieces; p += blockDim.x) dst[p] = src[p];
    if (threadIdx.x == 0) position[pair] = (int32_t)(first + r);
  }
}

// Stage 1's epilogue, a row per block (grid-stride): act[r] = SwiGLU(h1[r] + the row's expert's
// bias). h1: [rows, 2 inter] bf16; act: [rows, inter] bf16; bias: [local experts, 2 inter]
__global__ void cuda_moe_swiglu_rows_kernel(const __nv_bfloat162 *h1, const int32_t *sorted,
                                            const int32_t *experts, int64_t first, int begin,
                                            int inter, int rows, const float *bias, float limit,
                                            __nv_bfloat16 *act) {
  for (int r = blockIdx.y; r < rows; r += gridDim.y) {
    const float *b = bias + (int64_t)(experts[sorted[first + r]] - begin) * 2 * inter;
    const __nv_bfloat162 *in = h1 + (int64_t)r * inter;  // the gate/linear pairs
    __nv_bfloat16 *out = act + (int64_t)r * inter;
    for (int j = threadIdx.x; j < inter; j += blockDim.x) {
      const float2 v = __bfloat1622float2(in[j]);
      out[j] = __float2bfloat16_rn(cuda_moe_swiglu(v.x + b[2 * j], v.y + b[2 * j + 1], limit));
    }
  }
}

// Stage 2's epilogue, a row per block (grid-stride), in place: y[first + r] = routing weight *
// (row + the row's expert's bias).   y: [pairs, hidden] by position; bias: [local experts, hidden]
__global__ void cuda_moe_weigh_rows_kernel(const int32_t *sorted, const int32_t *experts,
                                           const float *pair_weights, int64_t first, int begin,
                                           int hidden, int rows, const float *bias, float *y) {
  for (int r = blockIdx.y; r < rows; r += gridDim.y) {
    const int32_t pair = sorted[first + r];
    const float *b = bias + (int64_t)(experts[pair] - begin) * hidden;
    const float w = pair_weights[pair];
    float *out = y + (first + r) * hidden;
    for (int d = threadIdx.x; d < hidden; d += blockDim.x) out[d] = w * (out[d] + b[d]);
  }
}

// A grid of a block a row (at most 65,535, grid-stride beyond).
static dim3 cuda_moe_rows_grid(int64_t rows) {
  return dim3(1, (unsigned)(rows < 65535 ? rows : 65535));
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

// Experts a chunk decodes for a product of n x k weights: as many as the chunk's bytes hold (at
// least one), at most CUDA_MOE_CUBLAS_CHUNK and the rank's experts (so the scratch depends on the
// call's shapes only, never on its routing).
static int cuda_moe_cublas_per_chunk(const CudaState *st, int num_local, int n, int k) {
  const size_t expert_bytes = (size_t)n * k * sizeof(__nv_bfloat16);
  const size_t fit = st->moe_cublas_chunk_bytes / expert_bytes;
  int per_chunk = fit < 1 ? 1 : fit > CUDA_MOE_CUBLAS_CHUNK ? CUDA_MOE_CUBLAS_CHUNK : (int)fit;
  return per_chunk < num_local ? per_chunk : num_local;
}

// One product (stage 1: mlp1; 2: mlp2) over every local expert with rows, a chunk of experts'
// weights decoded at a time, then the stage's epilogue over all the rows.
static void cuda_moe_cublas_stage(CudaState *st, const CudaMoeCublas &m, int stage) {
  const int hidden = m.config->hidden_size, inter = m.config->intermediate_size;
  const int n = stage == 1 ? 2 * inter : hidden, k = stage == 1 ? hidden : inter;
  const WeightMatrix *w = stage == 1 ? m.layer->mlp1 : m.layer->mlp2;
  const int per_chunk = cuda_moe_cublas_per_chunk(st, m.num_local, n, k);
  __nv_bfloat16 *decoded = (__nv_bfloat16 *)st->scratch[CUDA_SCRATCH_MOE_WEIGHTS].ptr;
  const float alpha = 1.0f, beta = 0.0f;
  const int words = n * (k / 8);
  for (int l = 0; l < m.num_local;) {
    // The next chunk: up to per_chunk experts that have rows, from local expert l on.
    CudaMoeDecodeChunk d = {};
    int experts[CUDA_MOE_CUBLAS_CHUNK];
    for (; l < m.num_local && d.count < per_chunk; l++)
      if (m.row[l + 1] > m.row[l]) {
        d.w[d.count] = (const uint32_t *)w[l].data;
        d.scales[d.count] = (const uint8_t *)w[l].scales;
        experts[d.count++] = l;
      }
    if (d.count == 0) continue;
    d.n = n, d.k = k;
    cuda_moe_decode_chunk_kernel<<<dim3(cuda_stride_blocks((size_t)words, 256), d.count), 256, 0,
                                   st->stream>>>(d, (uint4 *)decoded);
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
  }
  const int rows = (int)m.row[m.num_local];
  if (stage == 1)
    cuda_moe_swiglu_rows_kernel<<<cuda_moe_rows_grid(rows), 256, 0, st->stream>>>(
        (const __nv_bfloat162 *)m.h1, m.sorted, m.experts, m.first, m.begin, inter, rows,
        m.layer->mlp1_bias, m.config->swiglu_limit, m.act);
  else
    cuda_moe_weigh_rows_kernel<<<cuda_moe_rows_grid(rows), 256, 0, st->stream>>>(
        m.sorted, m.experts, m.pair_weights, m.first, m.begin, hidden, rows, m.layer->mlp2_bias,
        m.y);
  CUDA_CHECK_LAUNCH();
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
  CHECK(first + m->row[m->num_local] <= (int64_t)pairs);
  m->position = (int32_t *)cuda_take(cursor, pairs * sizeof(int32_t));
  m->xs = (__nv_bfloat16 *)cuda_take(cursor, pairs * hidden * sizeof(__nv_bfloat16));
  m->h1 = (__nv_bfloat16 *)cuda_take(cursor, pairs * 2 * inter * sizeof(__nv_bfloat16));
  // The decoded weights' scratch at its peak for these shapes, whatever the routing (a rank
  // whose experts got no rows here grows nothing later).
  const int chunk1 = cuda_moe_cublas_per_chunk(st, m->num_local, 2 * inter, hidden);
  const int chunk2 = cuda_moe_cublas_per_chunk(st, m->num_local, hidden, inter);
  const size_t bytes1 = (size_t)chunk1 * 2 * inter * hidden,
               bytes2 = (size_t)chunk2 * hidden * inter;
  cuda_scratch(st, CUDA_SCRATCH_MOE_WEIGHTS,
               (bytes1 > bytes2 ? bytes1 : bytes2) * sizeof(__nv_bfloat16));
  const int64_t rows = m->row[m->num_local];
  if (rows == 0) return;
  cuda_moe_gather_kernel<<<cuda_moe_rows_grid(rows), 64, 0, st->stream>>>(
      m->x_bf16, m->sorted, c->experts_per_token, hidden, first, (int)rows, m->xs, m->position);
  CUDA_CHECK_LAUNCH();
}

void cuda_moe_cublas_products(CudaState *st, const CudaMoeCublas &m, int stage) {
  if (m.row[m.num_local] > 0) cuda_moe_cublas_stage(st, m, stage);
}
