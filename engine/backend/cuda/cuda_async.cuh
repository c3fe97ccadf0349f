// cuda_async.cuh: asynchronous global -> shared copies (sm_80+ cp.async) for the kernels that
// keep several tiles in flight: one 16-byte or 8-byte copy (zeros where the source is not valid),
// closing a group of copies, and waiting until at most N groups are still in flight. Each
// thread waits for its own copies only: a __syncthreads() must follow before others read them.
#ifndef GE_BACKEND_CUDA_CUDA_ASYNC_CUH
#define GE_BACKEND_CUDA_CUDA_ASYNC_CUH

// 16 bytes from src to dst (both 16-byte aligned); with valid false, 16 zero bytes (src is not
// read, but must still be a mapped address).
static __device__ __forceinline__ void cuda_copy16_async(void *dst, const void *src, bool valid) {
  const unsigned to = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(src),
               "r"(valid ? 16 : 0));
}

// 8 bytes from src to dst (both 8-byte aligned); with valid false, 8 zero bytes.
static __device__ __forceinline__ void cuda_copy8_async(void *dst, const void *src, bool valid) {
  const unsigned to = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(to), "l"(src),
               "r"(valid ? 8 : 0));
}

// Closes the group of copies this thread issued since the last commit (possibly none).
static __device__ __forceinline__ void cuda_copy_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

// Waits until at most N of this thread's groups are still in flight.
template <int N>
static __device__ __forceinline__ void cuda_copy_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

#endif
