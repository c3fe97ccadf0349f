// cuda_async.cuh (tests/simt, in place of engine/backend/cuda's): cp.async done at once, a valid
// execution of the asynchronous copy (the kernels wait and sync before they read).
#ifndef GE_BACKEND_CUDA_CUDA_ASYNC_CUH
#define GE_BACKEND_CUDA_CUDA_ASYNC_CUH
#include <string.h>
static inline void cuda_copy16_async(void *dst, const void *src, bool valid) {
  if (valid)
    memcpy(dst, src, 16);
  else
    memset(dst, 0, 16);
}
static inline void cuda_copy8_async(void *dst, const void *src, bool valid) {
  if (valid)
    memcpy(dst, src, 8);
  else
    memset(dst, 0, 8);
}
static inline void cuda_copy_commit() {}
template <int N>
static inline void cuda_copy_wait() {}

#endif
