// cuda_runtime.h (tests/simt): the CUDA runtime as the CUDA backend uses it, on the host: device
// memory is host memory, a stream runs its work at once and in order, kernels run on the SIMT
// fibers (simt.h), and a stream capture records the work as closures that a graph launch runs
// again. Calls a capture forbids (synchronisations, cudaFree, cudaMallocHost) fail while one is
// on, as on a GPU. Also the device qualifiers, vector types and warp intrinsics the kernels use.
// The host API is cuda_runtime_api.h's; a C source sees only that.
#ifndef GE_TESTS_SIMT_CUDA_RUNTIME_H
#define GE_TESTS_SIMT_CUDA_RUNTIME_H
#include "cuda_runtime_api.h"
#ifdef __cplusplus
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <stdio.h>
#include "simt.h"
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __grid_constant__
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static
#define __restrict__
struct int4 {
  int x, y, z, w;
};
struct int2 {
  int x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
static inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
static inline int2 make_int2(int x, int y) { return int2{x, y}; }
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return uint4{x, y, z, w};
}
static inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
using std::max;
using std::min;
template <class T>
static inline T __ldg(const T *p) {
  return *p;
}
static inline float __uint_as_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint32_t __float_as_uint(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline uint32_t __funnelshift_l(uint32_t lo, uint32_t hi, int s) {
  s &= 31;
  return s ? (hi << s) | (lo >> (32 - s)) : hi;
}
static inline size_t __cvta_generic_to_shared(const void *p) { return (size_t)p; }
static inline int __popc(unsigned v) { return __builtin_popcount(v); }
static inline int __ffs(unsigned v) { return __builtin_ffs((int)v); }
static inline unsigned long long __double2ull_rn(double d) {
  return (unsigned long long)nearbyint(d);
}
[[noreturn]] static inline void __trap() {
  fprintf(stderr, "emu: __trap\n");
  abort();
}
// Atomics as compare-and-swap loops (any 4- or 8-byte type, floats included): the fibers never
// switch inside one, and ThreadSanitizer (the race-checking build) sees atomic accesses.
template <class T, class Update>
static inline T emu_atomic(T *p, Update update) {
  T old, next;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  do next = update(old);
  while (!__atomic_compare_exchange(p, &old, &next, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}
template <class T>
static inline T atomicAdd(T *p, T v) {
  return emu_atomic(p, [v](T old) { return old + v; });
}
template <class T>
static inline T atomicMax(T *p, T v) {
  return emu_atomic(p, [v](T old) { return v > old ? v : old; });
}
template <class T>
static inline T atomicMin(T *p, T v) {
  return emu_atomic(p, [v](T old) { return v < old ? v : old; });
}
// warp collectives
template <class T>
static inline T emu_shfl(T v, int src_of_lane[32]) {
  T all[32];
  emu_warp_exchange(&v, sizeof v, all);
  return all[src_of_lane[emu_lane()]];
}
template <class T>
static inline T __shfl_xor_sync(unsigned, T v, int m, int w = 32) {
  int src[32];
  for (int l = 0; l < 32; l++) src[l] = (l & ~(w - 1)) | ((l ^ m) & (w - 1));
  return emu_shfl(v, src);
}
template <class T>
static inline T __shfl_sync(unsigned, T v, int s, int w = 32) {
  int src[32];
  for (int l = 0; l < 32; l++) src[l] = (l & ~(w - 1)) | (s & (w - 1));
  return emu_shfl(v, src);
}
template <class T>
static inline T __shfl_up_sync(unsigned, T v, unsigned d, int w = 32) {
  int src[32];
  for (int l = 0; l < 32; l++) src[l] = (l % w) >= (int)d ? l - (int)d : l;
  return emu_shfl(v, src);
}
template <class T>
static inline T __shfl_down_sync(unsigned, T v, unsigned d, int w = 32) {
  int src[32];
  for (int l = 0; l < 32; l++) src[l] = (l % w) + (int)d < w ? l + (int)d : l;
  return emu_shfl(v, src);
}
static inline unsigned __ballot_sync(unsigned, int p) {
  int all[32];
  int mine = p != 0;
  emu_warp_exchange(&mine, sizeof mine, all);
  unsigned r = 0;
  for (int l = 0; l < 32; l++) r |= (unsigned)(all[l] != 0) << l;
  return r;
}
static inline void __syncwarp(unsigned = 0xffffffffu) { emu_syncwarp(); }
// runtime: the typed allocations
template <class T>
static inline cudaError_t cudaMalloc(T **p, size_t n) {
  return cudaMalloc((void **)p, n);
}
template <class T>
static inline cudaError_t cudaMallocHost(T **p, size_t n) {
  return cudaMallocHost((void **)p, n);
}
// Work on a stream: run now, or recorded while the stream is capturing.
void emu_work(std::function<void()> f);

#endif  // __cplusplus
#endif
