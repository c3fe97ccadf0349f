// cuda_ops.cu: the CUDA backend's element-wise and copying ops: embedding look-up, RMSNorm
// (float32 statistics), RoPE (YaRN table, half-split pairs; a pair's cos/sin computed once per
// row, for every head of it, from the same float angle as the CPU twin), KV-cache writes (float32, or rounded to bf16 for a bf16 cache), row gathers
// and adds. One thread block per row or token. No matrix products here (cuda_linear.cu), no
// attention or MoE (their own files). A bad index (token id, slot, row) traps the kernel: it is a
// caller's bug, as the CPU twin's CHECK says.
#include "backend/cuda/cuda_decode.cuh"
#include "backend/cuda/cuda_internal.cuh"

#define CUDA_OPS_THREADS 256

// out[t] = decoded table row ids[t].   out: [num_tokens, cols]
__global__ void cuda_embed_kernel(int fmt, const void *data, const uint8_t *scales, int64_t rows,
                                  int64_t cols, const uint32_t *ids, float *out) {
  const int64_t t = blockIdx.x;
  const uint32_t id = ids[t];
  if (id >= rows) __trap();
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    out[t * cols + c] = cuda_weight_at(fmt, data, scales, cols, id, c);
}

void cuda_embed(Backend *be, const WeightMatrix *table, const uint32_t *ids, int num_tokens,
                float *out) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, CUDA_PROF_EMBED);
  CHECK(table->format != WEIGHT_Q8 && table->data);
  if (num_tokens <= 0) return;
  cuda_embed_kernel<<<num_tokens, CUDA_OPS_THREADS, 0, st->stream>>>(
      table->format, table->data, (const uint8_t *)table->scales, table->rows, table->cols, ids,
      out);
  CUDA_CHECK_LAUNCH();
}

// Sum of v over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
static __device__ float cuda_block_sum(float v) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, num_warps = blockDim.x / 32;
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < num_warps ? partial[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One block per row: out = x / sqrt(mean(x^2) + eps) * scale (out may be x).
__global__ void cuda_rmsnorm_kernel(const float *x, const float *scale, int dim, float *out) {
  const float *xr = x + (int64_t)blockIdx.x * dim;  // [dim]
  float *yr = out + (int64_t)blockIdx.x * dim;      // [dim]
  float ss = 0.0f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) ss += xr[i] * xr[i];
  ss = cuda_block_sum(ss);
  const float inv = 1.0f / sqrtf(ss / (float)dim + GPTOSS_RMS_EPS);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) yr[i] = xr[i] * inv * scale[i];
}

void cuda_rmsnorm(Backend *be, const float *x, const float *scale, int num_rows, int dim,
                  float *out) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, CUDA_PROF_RMSNORM);
  if (num_rows <= 0) return;
  cuda_rmsnorm_kernel<<<num_rows, CUDA_OPS_THREADS, 0, st->stream>>>(x, scale, dim, out);
  CUDA_CHECK_LAUNCH();
}

// One block per row: every (head, pair i) rotated by pos * inv_freq[i], cos and sin times the
// concentration.   x: [num_rows, row_stride]
__global__ void cuda_rope_kernel(float *x, int row_stride, int num_heads, int head_dim,
                                 const int32_t *positions, const __grid_constant__ RopeTable rope) {
  const int half = rope.half_dim;
  const float pos = (float)positions[blockIdx.x];
  float *row = x + (int64_t)blockIdx.x * row_stride;
  // cos and sin of pair `at`, computed again only when the thread's pair changes: never while
  // half divides the block's threads (GPT-OSS: 32 of 128), so once per row, not once per head
  int at = -1;
  float c = 0, s = 0;
  for (int idx = threadIdx.x; idx < num_heads * half; idx += blockDim.x) {
    const int h = idx / half, i = idx % half;
    if (i != at) {
      const float angle = pos * rope.inv_freq[i];
      c = cosf(angle) * rope.concentration, s = sinf(angle) * rope.concentration, at = i;
    }
    float *u = row + h * head_dim;  // [head_dim]
    const float a = u[i], b = u[i + half];
    u[i] = a * c - b * s;
    u[i + half] = b * c + a * s;
  }
}

void cuda_rope(Backend *be, float *x, int num_rows, int row_stride, int num_heads, int head_dim,
               const int32_t *positions, const RopeTable *rope) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, CUDA_PROF_ROPE);
  CHECK(head_dim == 2 * rope->half_dim && rope->half_dim <= ROPE_MAX_HALF_DIM);
  CHECK(num_heads * head_dim <= row_stride);
  if (num_rows <= 0) return;
  cuda_rope_kernel<<<num_rows, 128, 0, st->stream>>>(x, row_stride, num_heads, head_dim, positions,
                                                     *rope);
  CUDA_CHECK_LAUNCH();
}

// A key or value element as the cache holds it: float32, or bf16 rounded to nearest even.
static __device__ __forceinline__ void cuda_kv_store(float *dst, float x) { *dst = x; }
static __device__ __forceinline__ void cuda_kv_store(__nv_bfloat16 *dst, float x) {
  *dst = __float2bfloat16_rn(x);
}

// One block per token: its k and v rows into its slot (negative: padding, skipped).
template <typename KV>
__global__ void cuda_kv_write_kernel(KV *k_cache, KV *v_cache, int64_t num_slots, int kv_dim,
                                     const float *k, const float *v, int stride,
                                     const int64_t *slot_mapping) {
  const int64_t t = blockIdx.x, slot = slot_mapping[t];
  if (slot < 0) return;
  if (slot >= num_slots) __trap();
  for (int i = threadIdx.x; i < kv_dim; i += blockDim.x) {
    cuda_kv_store(&k_cache[slot * kv_dim + i], k[t * stride + i]);
    cuda_kv_store(&v_cache[slot * kv_dim + i], v[t * stride + i]);
  }
}

void cuda_kv_write(Backend *be, KvCache *kv, int layer, const float *k, const float *v, int stride,
                   const int64_t *slot_mapping, int num_tokens) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, CUDA_PROF_KV_WRITE);
  CHECK(layer >= 0 && layer < kv->num_layers);
  const int kv_dim = kv->num_kv_heads * kv->head_dim;
  CHECK(kv_dim <= stride);
  if (num_tokens <= 0) return;
  const int64_t num_slots = (int64_t)kv->num_blocks * kv->block_size;
  if (kv->dtype == KV_BF16)
    cuda_kv_write_kernel<<<num_tokens, 128, 0, st->stream>>>(
        (__nv_bfloat16 *)kv->k[layer], (__nv_bfloat16 *)kv->v[layer], num_slots, kv_dim, k, v,
        stride, slot_mapping);
  else
    cuda_kv_write_kernel<<<num_tokens, 128, 0, st->stream>>>((float *)kv->k[layer],
                                                             (float *)kv->v[layer], num_slots,
                                                             kv_dim, k, v, stride, slot_mapping);
  CUDA_CHECK_LAUNCH();
}

// One block per output row: out[r] = in[rows[r]].
__global__ void cuda_gather_kernel(const float *in, const int32_t *rows, int dim, float *out) {
  const int64_t r = blockIdx.x, src = rows[r];
  if (src < 0) __trap();
  for (int i = threadIdx.x; i < dim; i += blockDim.x) out[r * dim + i] = in[src * dim + i];
}

void cuda_gather_rows(Backend *be, const float *in, const int32_t *rows, int num_rows, int dim,
                      float *out) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, CUDA_PROF_GATHER);
  if (num_rows <= 0) return;
  cuda_gather_kernel<<<num_rows, CUDA_OPS_THREADS, 0, st->stream>>>(in, rows, dim, out);
  CUDA_CHECK_LAUNCH();
}

__global__ void cuda_add_kernel(float *dst, const float *src, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    dst[i] += src[i];
}

void cuda_add(Backend *be, float *dst, const float *src, size_t n) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, CUDA_PROF_ADD);
  if (n == 0) return;
  const unsigned blocks = cuda_stride_blocks(n, CUDA_OPS_THREADS);
  cuda_add_kernel<<<blocks, CUDA_OPS_THREADS, 0, st->stream>>>(dst, src, n);
  CUDA_CHECK_LAUNCH();
}

cudaError_t cuda_kernels_probe(void) {
  cudaFuncAttributes attr;
  return cudaFuncGetAttributes(&attr, (const void *)cuda_add_kernel);
}
