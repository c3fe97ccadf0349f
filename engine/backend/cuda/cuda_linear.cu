// cuda_linear.cu: y = x W^T + b on cuBLAS. BF16 weights: the float32 input rows are rounded to
// bf16 (nearest even) by a small kernel and multiplied bf16 x bf16 with float32 accumulation and
// float32 output (cublasGemmEx). F32 weights: plain SGEMM on the float32 rows. MXFP4 weights
// (not used by the forward pass, whose experts go through cuda_moe.cu) are decoded to bf16
// scratch first. The bias is written (or, with `accumulate`, added) into y before the product,
// which then adds to y (beta 1); with neither, the product overwrites y (beta 0). Row-major
// y = x W^T is column-major y^T = W x^T: W is cuBLAS's transposed A.
#include <cuda_bf16.h>

#include "backend/cuda/cuda_decode.cuh"
#include "backend/cuda/cuda_internal.cuh"

// y = bias or, with accumulate, y += bias.   y: [num_rows, n], bias: [n]
__global__ void cuda_linear_prepare_kernel(float *y, const float *bias, int64_t n, int64_t total,
                                           bool accumulate) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    y[i] = accumulate ? y[i] + bias[i % n] : bias[i % n];
  }
}

// out = x rounded to bf16, four at a time (n a multiple of 4, both 16-byte aligned).
__global__ void cuda_to_bf16_kernel(const float4 *x, __nv_bfloat162 *out, int64_t n4) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
       i += (int64_t)gridDim.x * blockDim.x) {
    const float4 v = x[i];
    out[2 * i] = __floats2bfloat162_rn(v.x, v.y);
    out[2 * i + 1] = __floats2bfloat162_rn(v.z, v.w);
  }
}

// The same for any n and alignment.
__global__ void cuda_to_bf16_scalar_kernel(const float *x, __nv_bfloat16 *out, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    out[i] = __float2bfloat16_rn(x[i]);
}

// MXFP4 weights to bf16, exactly (every e2m1 value times a power of two is a bf16).
__global__ void cuda_mxfp4_to_bf16_kernel(const uint8_t *blocks, const uint8_t *scales,
                                          __nv_bfloat16 *out, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const uint8_t byte = blocks[i / 2];
    out[i] = __float2bfloat16_rn(cuda_mxfp4_value(i & 1 ? byte >> 4 : byte & 15u, scales[i / 32]));
  }
}

// Grid for a grid-stride loop over n items.
static unsigned cuda_linear_grid(int64_t n) { return cuda_stride_blocks((size_t)n, 256); }

// x as bf16 in scratch.   x: [n] float -> [n] bf16
static const __nv_bfloat16 *cuda_linear_input_bf16(CudaState *st, const float *x, int64_t n) {
  __nv_bfloat16 *xb =
      (__nv_bfloat16 *)cuda_scratch(st, CUDA_SCRATCH_LINEAR_INPUT, (size_t)n * sizeof(*xb));
  if (n % 4 == 0 && ((uintptr_t)x & 15) == 0) {
    cuda_to_bf16_kernel<<<cuda_linear_grid(n / 4), 256, 0, st->stream>>>(
        (const float4 *)x, (__nv_bfloat162 *)xb, n / 4);
  } else {
    cuda_to_bf16_scalar_kernel<<<cuda_linear_grid(n), 256, 0, st->stream>>>(x, xb, n);
  }
  CUDA_CHECK_LAUNCH();
  return xb;
}

void cuda_linear(Backend *be, const WeightMatrix *w, const float *bias, const float *x,
                 int num_rows, float *y, bool accumulate) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, w->rows >= 32768 ? CUDA_PROF_LINEAR_WIDE : CUDA_PROF_LINEAR);
  CHECK(num_rows >= 0 && w->rows > 0 && w->cols > 0 && w->data);
  CHECK(w->format != WEIGHT_Q8);  // refused by cuda_weights_upload: Q8 is a CPU format
  CHECK(w->rows <= INT32_MAX && w->cols <= INT32_MAX);
  if (num_rows == 0) return;
  const int m = (int)w->rows, k = (int)w->cols;
  const int64_t total = (int64_t)num_rows * m;
  if (bias) {
    cuda_linear_prepare_kernel<<<cuda_linear_grid(total), 256, 0, st->stream>>>(y, bias, m, total,
                                                                                accumulate);
    CUDA_CHECK_LAUNCH();
  }
  const float beta = bias || accumulate ? 1.0f : 0.0f;  // the product adds to y
  const float alpha = 1.0f;
  if (w->format == WEIGHT_F32) {
    CUBLAS_CHECK(cublasSgemm(st->cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, num_rows, k, &alpha,
                             (const float *)w->data, k, x, k, &beta, y, m));
    return;
  }
  const void *wb = w->data;  // bf16 [m, k]
  if (w->format == WEIGHT_MXFP4) {
    CHECK(k % 32 == 0);
    const int64_t n = (int64_t)m * k;
    __nv_bfloat16 *dq = (__nv_bfloat16 *)cuda_scratch(st, CUDA_SCRATCH_LINEAR_DEQUANT,
                                                      (size_t)n * sizeof(__nv_bfloat16));
    cuda_mxfp4_to_bf16_kernel<<<cuda_linear_grid(n), 256, 0, st->stream>>>(
        (const uint8_t *)w->data, (const uint8_t *)w->scales, dq, n);
    CUDA_CHECK_LAUNCH();
    wb = dq;
  }
  const __nv_bfloat16 *xb = cuda_linear_input_bf16(st, x, (int64_t)num_rows * k);
  CUBLAS_CHECK(cublasGemmEx(st->cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, num_rows, k, &alpha, wb,
                            CUDA_R_16BF, k, xb, CUDA_R_16BF, k, &beta, y, CUDA_R_32F, m,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}
