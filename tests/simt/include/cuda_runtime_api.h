// cuda_runtime_api.h (tests/simt): the emulated CUDA runtime's host API (runtime.cc), in C as the
// real one is, so that C sources (engine/dist/comm_nccl.c) call it too: errors, devices (as many
// as SIMT_DEVICES says, 1 by default, each a current device per host thread), memory, the one
// in-order queue per host thread, events, captures and graphs. cuda_runtime.h adds the device
// side for the kernels.
#ifndef GE_TESTS_SIMT_CUDA_RUNTIME_API_H
#define GE_TESTS_SIMT_CUDA_RUNTIME_API_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int cudaError_t;
enum {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidDevice = 101,
  cudaErrorStreamCaptureUnsupported = 900
};
typedef struct EmuStream *cudaStream_t;
typedef struct EmuEvent {
  int dummy;
} * cudaEvent_t;
typedef struct EmuGraph *cudaGraph_t;
typedef struct EmuGraph *cudaGraphExec_t;
typedef enum cudaMemcpyKind {
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice
} cudaMemcpyKind;
enum { cudaStreamNonBlocking = 1, cudaEventDisableTiming = 2 };
typedef enum cudaStreamCaptureMode { cudaStreamCaptureModeThreadLocal } cudaStreamCaptureMode;
typedef enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize } cudaFuncAttribute;
typedef struct cudaDeviceProp {
  char name[256];
  int major, minor, multiProcessorCount;
  size_t totalGlobalMem, sharedMemPerBlockOptin, sharedMemPerMultiprocessor;
  int l2CacheSize;
} cudaDeviceProp;
typedef struct cudaFuncAttributes {
  int numRegs, maxThreadsPerBlock;
  size_t sharedSizeBytes, localSizeBytes;
} cudaFuncAttributes;

const char *cudaGetErrorString(cudaError_t);
cudaError_t cudaGetLastError(void);
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetDevice(int *);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *, int);
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *, const void *);
cudaError_t cudaFuncSetAttribute(const void *, cudaFuncAttribute, int);
cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaMallocHost(void **p, size_t n);
cudaError_t cudaFree(void *);
cudaError_t cudaFreeHost(void *);
cudaError_t cudaMemGetInfo(size_t *, size_t *);
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t);
cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h,
                              cudaMemcpyKind, cudaStream_t);
cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *, unsigned);
cudaError_t cudaStreamDestroy(cudaStream_t);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaEventCreate(cudaEvent_t *);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *, unsigned);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaEventDestroy(cudaEvent_t);
cudaError_t cudaEventElapsedTime(float *, cudaEvent_t, cudaEvent_t);
cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode);
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *, cudaGraph_t, unsigned long long);
cudaError_t cudaGraphUpload(cudaGraphExec_t, cudaStream_t);
cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t);
cudaError_t cudaGraphDestroy(cudaGraph_t);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t);

#ifdef __cplusplus
}
#endif

#endif
