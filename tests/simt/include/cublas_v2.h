// cublas_v2.h (tests/simt): the cuBLAS calls the CUDA backend makes, from cuBLAS's documented
// semantics (column-major C = alpha op(A) op(B) + beta C, leading dimensions checked), run as
// stream work in double sums. Checks the arguments the backend passes, not cuBLAS.
#ifndef GE_TESTS_SIMT_CUBLAS_V2_H
#define GE_TESTS_SIMT_CUBLAS_V2_H
#include "cuda_bf16.h"
#include "cuda_runtime.h"
typedef struct EmuCublas *cublasHandle_t;
typedef int cublasStatus_t;
enum { CUBLAS_STATUS_SUCCESS = 0 };
typedef enum { CUBLAS_OP_N, CUBLAS_OP_T } cublasOperation_t;
typedef enum { CUDA_R_32F, CUDA_R_16BF } cudaDataType;
typedef enum { CUBLAS_COMPUTE_32F } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT } cublasGemmAlgo_t;
typedef enum { CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH } cublasMath_t;
static inline const char *cublasGetStatusString(cublasStatus_t) { return "emulated cublas error"; }
static inline cublasStatus_t cublasCreate(cublasHandle_t *h) {
  *h = (cublasHandle_t)malloc(1);
  return 0;
}
static inline cublasStatus_t cublasDestroy(cublasHandle_t h) {
  free(h);
  return 0;
}
static inline cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return 0; }
static inline cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return 0; }
static inline cublasStatus_t cublasSetWorkspace(cublasHandle_t, void *, size_t) { return 0; }
__attribute__((no_sanitize("thread"))) static inline float emu_load(const void *p, cudaDataType t,
                                                                    size_t i) {
  return t == CUDA_R_32F ? ((const float *)p)[i] : __bfloat162float(((const __nv_bfloat16 *)p)[i]);
}
static inline cublasStatus_t emu_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                      int k, float a, const void *A, cudaDataType at, int lda,
                                      const void *B, cudaDataType bt, int ldb, float b, void *C,
                                      cudaDataType ct, int ldc) {
  if (m < 0 || n < 0 || k < 0) return 1;
  if (lda < (ta == CUBLAS_OP_N ? m : k) || ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m ||
      lda < 1 || ldb < 1 || ldc < 1)
    return 1;
  // (the loop and emu_load are not race-checked: stream order already orders them with the
  // kernels, and their billions of loads under ThreadSanitizer took most of a MoE test's time;
  // AddressSanitizer does check them)
  emu_work([=]() __attribute__((no_sanitize("thread"))) {
    for (int j = 0; j < n; j++)
      for (int i = 0; i < m; i++) {
        double s = 0;
        for (int p = 0; p < k; p++)
          s += (double)emu_load(A, at,
                                ta == CUBLAS_OP_N ? (size_t)p * lda + i : (size_t)i * lda + p) *
               emu_load(B, bt, tb == CUBLAS_OP_N ? (size_t)j * ldb + p : (size_t)p * ldb + j);
        const size_t c = (size_t)j * ldc + i;
        const float v = a * (float)s + (b != 0 ? b * emu_load(C, ct, c) : 0.0f);
        if (ct == CUDA_R_32F)
          ((float *)C)[c] = v;
        else
          ((__nv_bfloat16 *)C)[c] = __float2bfloat16_rn(v);
      }
  });
  return 0;
}
static inline cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType at,
                                          int lda, const void *B, cudaDataType bt, int ldb,
                                          const void *beta, void *C, cudaDataType ct, int ldc,
                                          cublasComputeType_t, cublasGemmAlgo_t) {
  return emu_gemm(ta, tb, m, n, k, *(const float *)alpha, A, at, lda, B, bt, ldb,
                  *(const float *)beta, C, ct, ldc);
}
static inline cublasStatus_t cublasSgemm(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb,
                                         int m, int n, int k, const float *alpha, const float *A,
                                         int lda, const float *B, int ldb, const float *beta,
                                         float *C, int ldc) {
  return emu_gemm(ta, tb, m, n, k, *alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, *beta, C,
                  CUDA_R_32F, ldc);
}

#endif
