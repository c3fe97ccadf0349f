// cuda_backend.cu: the CUDA backend's table, its state (device, stream, cuBLAS handle, scratch)
// and its memory (zeroed device allocations, copies to and from the host). Computes nothing:
// each op lives in its own file (cuda_ops.cu, cuda_linear.cu, cuda_attention.cu, cuda_moe.cu,
// cuda_batch.cu, cuda_sample.cu; cuda_profile.cu times them, cuda_graph.cu records them). Owns the
// one place CUDA failures are reported (cuda_fail).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.cuh"
#include "backend/cuda/cuda_moe.cuh"

void cuda_fail(const char *file, int line, const char *call, const char *what) {
  fprintf(stderr, "gptoss-engine: CUDA error at %s:%d: %s: %s\n", file, line, call, what);
  if (cuda_graph_recording())
    fprintf(stderr,
            "gptoss-engine: (while recording a CUDA graph of a decode step; serve "
            "--enforce-eager runs without graphs)\n");
  fflush(stderr);
  abort();
}

CudaState *cuda_enter(Backend *be) {
  CudaState *st = cuda_state(be);
  CUDA_CHECK(cudaSetDevice(st->device));
  return st;
}

void *cuda_scratch(CudaState *st, CudaScratchSlot slot, size_t bytes) {
  CHECK(slot >= 0 && slot < CUDA_SCRATCH_COUNT);
  CudaBuffer *b = &st->scratch[slot];
  if (bytes > b->bytes) {
    size_t grown = b->bytes * 2 > bytes ? b->bytes * 2 : bytes;
    grown = (grown + 255) & ~(size_t)255;
    CUDA_CHECK(cudaFree(b->ptr));  // waits for the work that may still read it
    b->ptr = NULL;
    b->bytes = 0;
    CUDA_CHECK(cudaMalloc(&b->ptr, grown));
    b->bytes = grown;
    st->scratch_generation++;
  }
  return b->ptr;
}

void cuda_allow_smem(CudaState *st, const void *kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return;
  int i = 0;
  while (i < st->num_smem_allowed && st->smem_allowed[i].kernel != kernel) i++;
  if (i < st->num_smem_allowed && st->smem_allowed[i].bytes >= bytes) return;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
  if (i == st->num_smem_allowed) {
    CHECK(i < CUDA_SMEM_KERNELS);
    st->num_smem_allowed++;
  }
  st->smem_allowed[i].kernel = kernel, st->smem_allowed[i].bytes = bytes;
}

void cuda_buffer_reserve(CudaBuffer *b, size_t bytes, bool pinned) {
  if (bytes <= b->bytes) return;
  size_t grown = b->bytes * 2 > bytes ? b->bytes * 2 : bytes;
  if (pinned) {
    if (b->ptr) CUDA_CHECK(cudaFreeHost(b->ptr));
    b->ptr = NULL;
    CUDA_CHECK(cudaMallocHost(&b->ptr, grown));
  } else {
    CUDA_CHECK(cudaFree(b->ptr));  // waits for kernels that may still read the old contents
    b->ptr = NULL;
    CUDA_CHECK(cudaMalloc(&b->ptr, grown));
  }
  b->bytes = grown;
}

int cuda_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: not an error for the caller
    return 0;
  }
  return n;
}

// Zeroed device memory; NULL when the device is out of memory.
static void *cuda_alloc(Backend *be, size_t bytes) {
  CudaState *st = cuda_enter(be);
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return NULL;
  }
  CUDA_CHECK(e);
  CUDA_CHECK(cudaMemsetAsync(p, 0, bytes ? bytes : 1, st->stream));
  CUDA_CHECK(cudaStreamSynchronize(st->stream));
  return p;
}

// After the stream's work (which may still read ptr: a rank's last collectives are not waited
// for by anyone else) is done.
static void cuda_free_mem(Backend *be, void *ptr) {
  CudaState *st = cuda_enter(be);
  CUDA_CHECK(cudaStreamSynchronize(st->stream));
  CUDA_CHECK(cudaFree(ptr));
}

static void cuda_zero(Backend *be, void *ptr, size_t bytes) {
  CudaState *st = cuda_enter(be);
  if (bytes) CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, st->stream));
}

static void cuda_copy_rows(Backend *be, void *dst, size_t dst_stride, const void *src,
                           size_t src_stride, size_t row_bytes, int num_rows) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, CUDA_PROF_COPY_ROWS);
  if (num_rows > 0 && row_bytes > 0)
    CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_stride, src, src_stride, row_bytes, (size_t)num_rows,
                                 cudaMemcpyDeviceToDevice, st->stream));
}

static void cuda_to_host(Backend *be, void *dst, const void *src, size_t bytes) {
  CudaState *st = cuda_enter(be);
  {
    CudaProfileScope profile(st, CUDA_PROF_TO_HOST);
    if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, st->stream));
  }
  CUDA_CHECK(cudaStreamSynchronize(st->stream));
  cuda_profile_collect(st->profile);  // cheap now: the stream is idle
}

void cuda_to_device(Backend *be, void *dst_device, const void *src_host, size_t bytes) {
  CudaState *st = cuda_enter(be);
  if (bytes)
    CUDA_CHECK(cudaMemcpyAsync(dst_device, src_host, bytes, cudaMemcpyHostToDevice, st->stream));
  CUDA_CHECK(cudaStreamSynchronize(st->stream));
}

void cuda_copy_device(Backend *be, void *dst_device, const void *src_device, size_t bytes) {
  CudaState *st = cuda_enter(be);
  if (bytes)
    CUDA_CHECK(
        cudaMemcpyAsync(dst_device, src_device, bytes, cudaMemcpyDeviceToDevice, st->stream));
  CUDA_CHECK(cudaStreamSynchronize(st->stream));
}

void cuda_synchronize(Backend *be) {
  CudaState *st = cuda_enter(be);
  CUDA_CHECK(cudaStreamSynchronize(st->stream));
}

const char *cuda_device_name(Backend *be) { return cuda_state(be)->name; }

static void *cuda_device_queue(Backend *be) { return cuda_state(be)->stream; }

bool cuda_memory_info(Backend *be, size_t *free_bytes, size_t *total_bytes) {
  cuda_enter(be);
  *free_bytes = *total_bytes = 0;
  if (cudaMemGetInfo(free_bytes, total_bytes) == cudaSuccess) return true;
  (void)cudaGetLastError();
  *free_bytes = *total_bytes = 0;
  return false;
}

static void cuda_destroy(Backend *be) {
  if (!be) return;
  CudaState *st = cuda_enter(be);
  CUDA_CHECK(cudaStreamSynchronize(st->stream));
  cuda_profile_report(st->profile, st->device);
  for (int i = 0; i < CUDA_SCRATCH_COUNT; i++) CUDA_CHECK(cudaFree(st->scratch[i].ptr));
  cuda_batch_free(st);
  if (st->sample_host.ptr) CUDA_CHECK(cudaFreeHost(st->sample_host.ptr));
  if (st->moe_counts_host.ptr) CUDA_CHECK(cudaFreeHost(st->moe_counts_host.ptr));
  CUDA_CHECK(cudaFree(st->sample_dev.ptr));
  CUBLAS_CHECK(cublasDestroy(st->cublas));
  CUDA_CHECK(cudaFree(st->cublas_workspace.ptr));
  CUDA_CHECK(cudaStreamDestroy(st->stream));
  free(st);
  free(be);
}

static Backend *cuda_table(CudaState *st) {
  Backend *be = (Backend *)xcalloc(1, sizeof(*be));
  be->name = "cuda";
  be->state = st;
  be->embed = cuda_embed;
  be->rmsnorm = cuda_rmsnorm;
  be->linear = cuda_linear;
  be->rope = cuda_rope;
  be->kv_write = cuda_kv_write;
  be->attention = cuda_attention;
  be->moe = cuda_moe;
  be->gather_rows = cuda_gather_rows;
  be->copy_rows = cuda_copy_rows;
  be->add = cuda_add;
  be->zero = cuda_zero;
  be->upload_batch = cuda_upload_batch;
  be->upload_graph_batch = cuda_upload_graph_batch;
  be->graph_begin = cuda_graph_begin;
  be->graph_end = cuda_graph_end;
  be->graph_current = cuda_graph_current;
  be->graph_launch = cuda_graph_launch;
  be->graph_free = cuda_graph_free;
  be->sample = cuda_sample;
  be->to_host = cuda_to_host;
  be->device_queue = cuda_device_queue;
  be->upload_weights = cuda_weights_upload;
  be->load_dummy_weights = cuda_weights_dummy;
  be->free_weights = cuda_weights_free;
  be->alloc = cuda_alloc;
  be->free = cuda_free_mem;
  be->destroy = cuda_destroy;
  return be;
}

// GPTOSS_CUDA_MOE_KERNEL (unset: auto) into *kernel; false with the reason for another value.
static bool cuda_moe_kernel_from_env(CudaMoeKernel *kernel, char *err, size_t err_size) {
  const char *v = getenv("GPTOSS_CUDA_MOE_KERNEL");
  if (!v || !*v || !strcmp(v, "auto"))
    *kernel = CUDA_MOE_KERNEL_AUTO;
  else if (!strcmp(v, "tile"))
    *kernel = CUDA_MOE_KERNEL_TILE;
  else if (!strcmp(v, "wide"))
    *kernel = CUDA_MOE_KERNEL_WIDE;
  else if (!strcmp(v, "wide32"))
    *kernel = CUDA_MOE_KERNEL_WIDE32;
  else if (!strcmp(v, "cublas"))
    *kernel = CUDA_MOE_KERNEL_CUBLAS;
  else {
    snprintf(err, err_size,
             "GPTOSS_CUDA_MOE_KERNEL=%s: expected auto, tile, wide, wide32 or cublas", v);
    return false;
  }
  return true;
}

// Environment variable name (unset: fallback) as an integer from least to 1 << 20 into *value;
// false with the reason (what the number is) for another value.
static bool cuda_int_from_env(const char *name, int fallback, int least, const char *what,
                              int *value, char *err, size_t err_size) {
  const char *v = getenv(name);
  *value = fallback;
  if (!v || !*v) return true;
  char *end;
  const long n = strtol(v, &end, 10);
  if (*end || n < least || n > 1 << 20) {
    snprintf(err, err_size, "%s=%s: expected %s (default %d)", name, v, what, fallback);
    return false;
  }
  *value = (int)n;
  return true;
}

// GPTOSS_CUDA_ATTN_KERNEL (unset: auto) into *kernel; false with the reason for another value.
static bool cuda_attn_kernel_from_env(CudaAttnKernel *kernel, char *err, size_t err_size) {
  const char *v = getenv("GPTOSS_CUDA_ATTN_KERNEL");
  if (!v || !*v || !strcmp(v, "auto"))
    *kernel = CUDA_ATTN_KERNEL_AUTO;
  else if (!strcmp(v, "cuda-cores"))
    *kernel = CUDA_ATTN_KERNEL_CUDA_CORES;
  else {
    snprintf(err, err_size, "GPTOSS_CUDA_ATTN_KERNEL=%s: expected auto or cuda-cores", v);
    return false;
  }
  return true;
}

Backend *cuda_backend_create(int device, char *err, size_t err_size) {
  CudaMoeKernel moe_kernel;
  CudaAttnKernel attn_kernel;
  int wide_rows, cublas_rows, chunk_mib;
  const char *rows =
      "the pairs an expert, on average, from which a MoE call takes that path (0: never)";
  if (!cuda_moe_kernel_from_env(&moe_kernel, err, err_size) ||
      !cuda_int_from_env("GPTOSS_CUDA_MOE_WIDE_ROWS", CUDA_MOE_WIDE_MIN_ROWS, 0, rows, &wide_rows,
                         err, err_size) ||
      !cuda_int_from_env("GPTOSS_CUDA_MOE_CUBLAS_ROWS", CUDA_MOE_CUBLAS_MIN_ROWS, 0, rows,
                         &cublas_rows, err, err_size) ||
      !cuda_int_from_env("GPTOSS_CUDA_MOE_CUBLAS_CHUNK_MIB", CUDA_MOE_CUBLAS_CHUNK_MIB, 1,
                         "the MiB of experts' weights the cuBLAS path decodes at a time",
                         &chunk_mib, err, err_size) ||
      !cuda_attn_kernel_from_env(&attn_kernel, err, err_size))
    return NULL;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    snprintf(err, err_size, "CUDA device %d: no CUDA device (%s)", device,
             e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports none");
    (void)cudaGetLastError();
    return NULL;
  }
  if (device < 0 || device >= count) {
    snprintf(err, err_size, "CUDA device %d: no such device (this machine has %d: 0 .. %d)", device,
             count, count - 1);
    return NULL;
  }
  CudaState *st = (CudaState *)xcalloc(1, sizeof(*st));
  st->device = device;
  st->moe_kernel = moe_kernel;
  st->moe_wide_rows = wide_rows, st->moe_cublas_rows = cublas_rows;
  st->moe_cublas_chunk_bytes = (size_t)chunk_mib << 20;
  st->attn_kernel = attn_kernel;
  cudaDeviceProp prop;
  cublasStatus_t cs;
  CUDA_TRY(cudaSetDevice(device), err, err_size);
  CUDA_TRY(cudaGetDeviceProperties(&prop, device), err, err_size);
  e = cuda_kernels_probe();
  if (e != cudaSuccess) {
    snprintf(err, err_size,
             "CUDA device %d (%s, compute capability %d.%d) cannot run this build's kernels "
             "(%s): they are built for sm_90a (H100/H200); add the device's -gencode to "
             "NVCC_FLAGS in the Makefile",
             device, prop.name, prop.major, prop.minor, cudaGetErrorString(e));
    (void)cudaGetLastError();
    goto fail;
  }
  snprintf(st->name, sizeof st->name, "%s", prop.name);
  // Non-blocking: no implicit order with the legacy default stream, whose use by another thread
  // would otherwise spoil a graph being recorded on this one.
  CUDA_TRY(cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking), err, err_size);
  CUDA_TRY(cudaEventCreateWithFlags(&st->batch_copied, cudaEventDisableTiming), err, err_size);
  CUDA_TRY(cudaEventRecord(st->batch_copied, st->stream), err, err_size);
  cs = cublasCreate(&st->cublas);
  if (cs != CUBLAS_STATUS_SUCCESS) {
    snprintf(err, err_size, "CUDA device %d: cublasCreate: %s", device, cublasGetStatusString(cs));
    st->cublas = NULL;
    goto fail;
  }
  CUBLAS_CHECK(cublasSetStream(st->cublas, st->stream));
  // No TF32: F32 weights are the float32 reference path (SGEMM as written).
  CUBLAS_CHECK(cublasSetMathMode(st->cublas, CUBLAS_DEFAULT_MATH));
  // A workspace of our own (cuBLAS's advice: 32 MiB from Hopper on, 4 MiB before): without it
  // cuBLAS allocates one for every graph that records a product.
  st->cublas_workspace.bytes = (prop.major >= 9 ? 32u : 4u) << 20;
  CUDA_TRY(cudaMalloc(&st->cublas_workspace.ptr, st->cublas_workspace.bytes), err, err_size);
  CUBLAS_CHECK(
      cublasSetWorkspace(st->cublas, st->cublas_workspace.ptr, st->cublas_workspace.bytes));
  st->profile = cuda_profile_create();
  return cuda_table(st);

fail:
  if (st->cublas) (void)cublasDestroy(st->cublas);  // best effort: already failing
  if (st->cublas_workspace.ptr) (void)cudaFree(st->cublas_workspace.ptr);
  if (st->batch_copied) (void)cudaEventDestroy(st->batch_copied);
  if (st->stream) (void)cudaStreamDestroy(st->stream);
  free(st);
  return NULL;
}
