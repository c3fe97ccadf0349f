// cuda_async.cuh (tests/simt, in place of engine/backend/cuda's): cp.async by the emulator's
// copies (simt.h), which land only when the thread waits for their group: a kernel that reads a
// stage before its wait reads what was there before.
#ifndef GE_BACKEND_CUDA_CUDA_ASYNC_CUH
#define GE_BACKEND_CUDA_CUDA_ASYNC_CUH
#include "simt.h"
static inline void cuda_copy16_async(void *dst, const void *src, bool valid) {
  emu_copy_async(dst, src, 16, valid);
}
static inline void cuda_copy8_async(void *dst, const void *src, bool valid) {
  emu_copy_async(dst, src, 8, valid);
}
static inline void cuda_copy_commit() { emu_copy_commit(); }
template <int N>
static inline void cuda_copy_wait() {
  emu_copy_wait(N);
}

#endif
