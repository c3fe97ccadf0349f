// runtime.cc (tests/simt): the CUDA runtime calls of include/cuda_runtime_api.h: host memory,
// SIMT_DEVICES devices (1 by default; each host thread has its current one, as with CUDA), one
// in-order queue per host thread whose work runs at once (so the threads of -tp ranks each run
// their own, and their kernels take turns: simt.cc), captures that record it, graphs that run
// it again.
#include <malloc.h>

#include <map>
#include <mutex>
#include <vector>
#include <functional>
#include "cuda_runtime.h"
#include "cublas_v2.h"
struct EmuGraph {
  std::vector<std::function<void()>> work;
};
// what a host thread is doing: its capture, its last error, its device
static thread_local bool capturing;
static thread_local EmuGraph *captured;
static thread_local cudaError_t last;
static thread_local int current_device;
static int bad(cudaError_t e) {
  last = e;
  return e;
}
void emu_work(std::function<void()> f) {
  if (capturing)
    captured->work.push_back(f);
  else
    f();
}
const char *cudaGetErrorString(cudaError_t e) {
  return e == cudaErrorStreamCaptureUnsupported ? "operation not permitted when stream is capturing"
         : e == cudaErrorInvalidDevice          ? "invalid device ordinal"
         : e                                    ? "emulated error"
                                                : "no error";
}
cudaError_t cudaGetLastError(void) {
  cudaError_t e = last;
  last = 0;
  return e;
}
// SIMT_DEVICES: how many devices the emulator has (1 to 8; 1 unset).
static int device_count() {
  static const int count = [] {
    const char *v = getenv("SIMT_DEVICES");
    if (!v) return 1;
    char *end;
    const long n = strtol(v, &end, 10);
    if (end == v || *end || n < 1 || n > 8) {
      fprintf(stderr, "simt: SIMT_DEVICES='%s' must be a device count from 1 to 8\n", v);
      exit(2);
    }
    return (int)n;
  }();
  return count;
}
cudaError_t cudaGetDeviceCount(int *n) {
  *n = device_count();
  return 0;
}
cudaError_t cudaSetDevice(int d) {
  if (d < 0 || d >= device_count()) return bad(cudaErrorInvalidDevice);
  current_device = d;
  return 0;
}
cudaError_t cudaGetDevice(int *d) {
  *d = current_device;
  return 0;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int) {
  memset(p, 0, sizeof *p);
  strcpy(p->name, "SIMT emulator");
  p->major = 9, p->minor = 0;
  p->multiProcessorCount = 132;
  p->totalGlobalMem = (size_t)80 << 30;
  p->sharedMemPerBlockOptin = 227 << 10;
  p->sharedMemPerMultiprocessor = 228 << 10;
  p->l2CacheSize = 50 << 20;
  return 0;
}
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, const void *) {
  memset(a, 0, sizeof *a);
  a->maxThreadsPerBlock = 1024;
  return 0;
}
cudaError_t cudaFuncSetAttribute(const void *, cudaFuncAttribute, int) { return 0; }
// Each device has 2 GiB (serve sizes its KV cache from what is free: host memory backs it).
static const size_t kDeviceBytes = (size_t)2 << 30;
static std::mutex memory_lock;  // the ranks' threads allocate at once
static size_t in_use[8];        // by device
static std::map<void *, int> device_of;
// An allocation on the current device holds exactly n bytes (256-byte aligned, as cudaMalloc's:
// the memory-checking build's AddressSanitizer sees an access past them) and is not zeroed: up to
// 64 MiB is filled with a pattern (a kernel that reads what it never wrote sees garbage, as on a
// GPU); larger buffers stay untouched until used.
cudaError_t cudaMalloc(void **p, size_t n) {
  std::lock_guard<std::mutex> hold(memory_lock);
  if (in_use[current_device] + n > kDeviceBytes) return bad(cudaErrorMemoryAllocation);
  if (posix_memalign(p, 256, n ? n : 1)) return bad(cudaErrorMemoryAllocation);
  if (n <= ((size_t)64 << 20)) memset(*p, 0xA7, n);
  in_use[current_device] += malloc_usable_size(*p);
  device_of[*p] = current_device;
  return 0;
}
cudaError_t cudaMallocHost(void **p, size_t n) {
  if (capturing) return bad(cudaErrorStreamCaptureUnsupported);
  *p = aligned_alloc(256, (n + 255) & ~(size_t)255);
  return 0;
}
cudaError_t cudaFree(void *p) {
  if (capturing) return bad(cudaErrorStreamCaptureUnsupported);
  std::lock_guard<std::mutex> hold(memory_lock);
  if (p) {
    auto at = device_of.find(p);
    if (at == device_of.end()) return bad(cudaErrorInvalidValue);
    in_use[at->second] -= malloc_usable_size(p);
    device_of.erase(at);
  }
  free(p);
  return 0;
}
cudaError_t cudaFreeHost(void *p) {
  if (capturing) return bad(cudaErrorStreamCaptureUnsupported);
  free(p);
  return 0;
}
cudaError_t cudaMemGetInfo(size_t *f, size_t *t) {
  std::lock_guard<std::mutex> hold(memory_lock);
  *t = kDeviceBytes, *f = kDeviceBytes - in_use[current_device];
  return 0;
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t) {
  emu_work([=] { memmove(d, s, n); });
  return 0;
}
cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h,
                              cudaMemcpyKind, cudaStream_t) {
  emu_work([=] {
    for (size_t r = 0; r < h; r++) memmove((char *)d + r * dp, (const char *)s + r * sp, w);
  });
  return 0;
}
cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t) {
  emu_work([=] { memset(d, v, n); });
  return 0;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) {
  *s = (cudaStream_t)malloc(1);
  return 0;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  free(s);
  return 0;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return capturing ? bad(cudaErrorStreamCaptureUnsupported) : 0;
}
cudaError_t cudaDeviceSynchronize(void) {
  return capturing ? bad(cudaErrorStreamCaptureUnsupported) : 0;
}
static EmuEvent ev;
cudaError_t cudaEventCreate(cudaEvent_t *e) {
  *e = &ev;
  return 0;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) {
  *e = &ev;
  return 0;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return 0; }
cudaError_t cudaEventSynchronize(cudaEvent_t) {
  return capturing ? bad(cudaErrorStreamCaptureUnsupported) : 0;
}
cudaError_t cudaEventDestroy(cudaEvent_t) { return 0; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.001f;
  return 0;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  if (capturing) return bad(1);
  capturing = true;
  captured = new EmuGraph;
  return 0;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *g) {
  capturing = false;
  *g = captured;
  captured = nullptr;
  return 0;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long) {
  *e = new EmuGraph(*g);
  return 0;
}
cudaError_t cudaGraphUpload(cudaGraphExec_t, cudaStream_t) { return 0; }
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t) {
  for (auto &f : e->work) f();
  return 0;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete g;
  return 0;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  delete e;
  return 0;
}
