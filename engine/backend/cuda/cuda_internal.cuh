// cuda_internal.cuh: what the CUDA backend's files share: the backend state (device, stream,
// cuBLAS handle, growing device scratch, the uploaded batch), the checking macros every CUDA
// and cuBLAS call goes through, launch helpers and the op entry points the table in
// cuda_backend.cu points at. Not for use outside engine/backend/cuda.
#ifndef GE_BACKEND_CUDA_CUDA_INTERNAL_CUH
#define GE_BACKEND_CUDA_CUDA_INTERNAL_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cuda/cuda_backend.h"

extern "C" {
#include "common/check.h"
}

// Aborts with file:line, the failed call and CUDA's (or cuBLAS's) error string.
[[noreturn]] void cuda_fail(const char *file, int line, const char *call, const char *what);

#define CUDA_CHECK(call)                                                         \
  do {                                                                           \
    cudaError_t cuda_check_err_ = (call);                                        \
    if (cuda_check_err_ != cudaSuccess)                                          \
      cuda_fail(__FILE__, __LINE__, #call, cudaGetErrorString(cuda_check_err_)); \
  } while (0)

#define CUBLAS_CHECK(call)                                                           \
  do {                                                                               \
    cublasStatus_t cublas_check_st_ = (call);                                        \
    if (cublas_check_st_ != CUBLAS_STATUS_SUCCESS)                                   \
      cuda_fail(__FILE__, __LINE__, #call, cublasGetStatusString(cublas_check_st_)); \
  } while (0)

// After a kernel launch: a bad configuration shows up here, with the launch's file:line.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// For functions that return an error instead of aborting (create, weights upload): on failure
// writes "file:line: call: error" into err and jumps to `fail`.
#define CUDA_TRY(call, err, err_size)                                     \
  do {                                                                    \
    cudaError_t cuda_try_err_ = (call);                                   \
    if (cuda_try_err_ != cudaSuccess) {                                   \
      snprintf(err, err_size, "%s:%d: %s: %s", __FILE__, __LINE__, #call, \
               cudaGetErrorString(cuda_try_err_));                        \
      (void)cudaGetLastError();                                           \
      goto fail;                                                          \
    }                                                                     \
  } while (0)

// Independent device scratch buffers: an op may hold several at once; an op must not call
// another op that uses a slot it holds (moe calls linear, so they use different slots).
enum CudaScratchSlot {
  CUDA_SCRATCH_LINEAR_INPUT,    // linear: the input rows as bf16
  CUDA_SCRATCH_LINEAR_DEQUANT,  // linear: MXFP4 weights decoded to bf16
  CUDA_SCRATCH_MOE,             // moe: router logits, routing, grouping, activations, expert rows
  CUDA_SCRATCH_MOE_WEIGHTS,     // moe on cuBLAS: a chunk of experts' weights decoded to bf16
  CUDA_SCRATCH_COUNT,
};

struct CudaBuffer {
  void *ptr;
  size_t bytes;
};

// Profiling (cuda_profile.cu, GPTOSS_CUDA_PROFILE=1): what each op's device time is counted as.
enum CudaProfileOp {
  CUDA_PROF_EMBED,
  CUDA_PROF_RMSNORM,
  CUDA_PROF_LINEAR,
  CUDA_PROF_LINEAR_WIDE,  // >= 32768 output rows: the unembedding
  CUDA_PROF_ROPE,
  CUDA_PROF_KV_WRITE,
  CUDA_PROF_ATTENTION,
  CUDA_PROF_MOE_ROUTE,  // the MoE's phases: router product, top-k, grouping, bf16 rows
  CUDA_PROF_MOE_MLP1,   // expert mlp1 and SwiGLU
  CUDA_PROF_MOE_MLP2,   // expert mlp2
  CUDA_PROF_MOE_SUM,    // the routing-weighted sum into the residual
  CUDA_PROF_GATHER,
  CUDA_PROF_COPY_ROWS,
  CUDA_PROF_ADD,
  CUDA_PROF_UPLOAD,
  CUDA_PROF_SAMPLE,
  CUDA_PROF_TO_HOST,
  CUDA_PROF_COUNT,
};
struct CudaProfile;

// Query tokens per attention work tile: a tile is up to this many consecutive tokens of one
// sequence (upload_batch cuts them, cuda_attention.cu reads them). A sequence with at least
// CUDA_ATTN_FLASH_MIN_TOKENS new tokens is also cut into tiles of CUDA_ATTN_FLASH_TOKENS for the
// tensor-core prefill kernel (cuda_attention_flash.cu), where the call fits it.
#define CUDA_ATTN_TILE_TOKENS 4
#define CUDA_ATTN_FLASH_TOKENS 16
#define CUDA_ATTN_FLASH_MIN_TOKENS 16

// Which MXFP4 expert kernel the MoE op runs (GPTOSS_CUDA_MOE_KERNEL, read at create: auto by
// the call's pairs per expert, cuda_moe.cu; tile, wide (128-row items), wide32 (the wide kernel
// on 32-row items) or cublas (weights decoded to bf16, cuBLAS's products) for every call that
// fits it, to measure one against another on the same shapes).
enum CudaMoeKernel {
  CUDA_MOE_KERNEL_AUTO,
  CUDA_MOE_KERNEL_TILE,
  CUDA_MOE_KERNEL_WIDE,
  CUDA_MOE_KERNEL_WIDE32,
  CUDA_MOE_KERNEL_CUBLAS
};
// Whether attention may run on the tensor cores (GPTOSS_CUDA_ATTN_KERNEL: auto, where the call
// fits them; cuda-cores: every tile on the float32 kernel).
enum CudaAttnKernel { CUDA_ATTN_KERNEL_AUTO, CUDA_ATTN_KERNEL_CUDA_CORES };

// Kernels a backend may allow more than 48 KiB of dynamic shared memory (cuda_allow_smem).
#define CUDA_SMEM_KERNELS 32

struct CudaState {
  int device;
  CudaMoeKernel moe_kernel;
  // auto's thresholds in pairs an expert (0: never): GPTOSS_CUDA_MOE_WIDE_ROWS and
  // GPTOSS_CUDA_MOE_CUBLAS_ROWS, default CUDA_MOE_WIDE_MIN_ROWS and CUDA_MOE_CUBLAS_MIN_ROWS
  int moe_wide_rows, moe_cublas_rows;
  size_t moe_cublas_chunk_bytes;  // GPTOSS_CUDA_MOE_CUBLAS_CHUNK_MIB (CUDA_MOE_CUBLAS_CHUNK_MIB)
  CudaAttnKernel attn_kernel;
  char name[256];
  cudaStream_t stream;  // every op runs on it, in order
  cublasHandle_t cublas;
  CudaBuffer scratch[CUDA_SCRATCH_COUNT];
  // upload_batch: host staging (pinned) and device copy of the batch's arrays, the event of the
  // last copy out of the staging buffer, and the device view handed to the ops.
  CudaBuffer batch_host, batch_dev;
  cudaEvent_t batch_copied;
  Batch batch;
  // upload_graph_batch: its own staging and device buffers, laid out once for these sizes
  CudaBuffer graph_batch_host, graph_batch_dev;
  int graph_max_seqs, graph_max_blocks;
  unsigned scratch_generation;  // bumped whenever a scratch buffer moves (graph_current checks)
  CudaBuffer cublas_workspace;  // cuBLAS's, set once: a recorded product must not allocate
  // device: [num_attn_tiles] {seq, first token, end token, 0}, the sequences with fewer than
  // CUDA_ATTN_FLASH_MIN_TOKENS new tokens first (num_attn_short_tiles of them)
  const int4 *attn_tiles;
  int num_attn_tiles, num_attn_short_tiles;
  const int4 *attn_flash_tiles;  // device: [num_attn_flash_tiles] the others' flash tiles
  int num_attn_flash_tiles;
  // sample: the rows' parameters and the sampled ids, staged (pinned) and on the device
  CudaBuffer sample_host, sample_dev;
  CudaBuffer moe_counts_host;  // moe on cuBLAS: the experts' pair counts (pinned)
  CudaProfile *profile;        // NULL unless GPTOSS_CUDA_PROFILE=1
  // kernels already allowed more than 48 KiB of dynamic shared memory, and how much
  struct {
    const void *kernel;
    size_t bytes;
  } smem_allowed[CUDA_SMEM_KERNELS];
  int num_smem_allowed;
};

// NULL unless GPTOSS_CUDA_PROFILE=1. report prints the table to stderr and frees the profile.
CudaProfile *cuda_profile_create(void);
void cuda_profile_report(CudaProfile *p, int device);
// Reads back the recorded ops' times (none inside an op); call where the stream has just been
// synchronised, so that nothing waits.
void cuda_profile_collect(CudaProfile *p);
void cuda_profile_begin(CudaState *st, CudaProfileOp op);
void cuda_profile_end(CudaState *st);

// One op's device time while in scope (nothing when not profiling).
struct CudaProfileScope {
  CudaState *st;
  CudaProfileScope(CudaState *s, CudaProfileOp op) : st(s) { cuda_profile_begin(st, op); }
  // Ends this op's time and starts op's (an op counted in phases).
  void next(CudaProfileOp op) {
    cuda_profile_end(st);
    cuda_profile_begin(st, op);
  }
  ~CudaProfileScope() { cuda_profile_end(st); }
};

static inline CudaState *cuda_state(Backend *be) { return (CudaState *)be->state; }

// Makes the backend's device current on the calling thread (the engine calls ops from more than
// one thread) and returns its state.
CudaState *cuda_enter(Backend *be);

// At least bytes of device scratch in slot (contents undefined, 256-byte aligned); grows, never
// shrinks. Growing frees the old buffer, which waits for the work in flight.
void *cuda_scratch(CudaState *st, CudaScratchSlot slot, size_t bytes);

// Lets kernel launch with bytes of dynamic shared memory on the backend's device: past 48 KiB
// that needs cudaFuncSetAttribute, called once per kernel (and size) rather than per launch.
void cuda_allow_smem(CudaState *st, const void *kernel, size_t bytes);

// Grows b to at least bytes (contents lost): pinned host memory, or device memory (freeing the
// old device buffer waits for the work that may still read it).
void cuda_buffer_reserve(CudaBuffer *b, size_t bytes, bool pinned);

// Blocks for n items at threads per block.
static inline unsigned cuda_blocks(size_t n, unsigned threads) {
  return (unsigned)((n + threads - 1) / threads);
}

// Blocks for a grid-stride loop over n items at threads per block: one per threads items, at
// least 1, at most 65,536.
static inline unsigned cuda_stride_blocks(size_t n, unsigned threads) {
  const size_t blocks = cuda_blocks(n, threads);
  return blocks < 1 ? 1 : blocks > 65536 ? 65536 : (unsigned)blocks;
}

// n rounded up to a multiple of 256 (the alignment cudaMalloc gives, kept for every piece).
static inline size_t cuda_round256(size_t n) { return (n + 255) & ~(size_t)255; }

// Carves n bytes (256-aligned) from a scratch cursor.
static inline void *cuda_take(char **cursor, size_t n) {
  void *p = *cursor;
  *cursor += cuda_round256(n);
  return p;
}

// The ops (backend.h documents each); upload_batch lives in cuda_batch.cu.
void cuda_embed(Backend *be, const WeightMatrix *table, const uint32_t *ids, int num_tokens,
                float *out);
void cuda_rmsnorm(Backend *be, const float *x, const float *scale, int num_rows, int dim,
                  float *out);
void cuda_linear(Backend *be, const WeightMatrix *w, const float *bias, const float *x,
                 int num_rows, float *y, bool accumulate);
void cuda_rope(Backend *be, float *x, int num_rows, int row_stride, int num_heads, int head_dim,
               const int32_t *positions, const RopeTable *rope);
void cuda_kv_write(Backend *be, KvCache *kv, int layer, const float *k, const float *v, int stride,
                   const int64_t *slot_mapping, int num_tokens);
void cuda_attention(Backend *be, const AttentionArgs *a);
void cuda_moe(Backend *be, const MoeArgs *a);
void cuda_gather_rows(Backend *be, const float *in, const int32_t *rows, int num_rows, int dim,
                      float *out);
void cuda_add(Backend *be, float *dst, const float *src, size_t n);
const Batch *cuda_upload_batch(Backend *be, const Batch *host);
const Batch *cuda_upload_graph_batch(Backend *be, const Batch *host, int max_seqs, int max_blocks);
// cuda_graph.cu: recording the ops into CUDA graphs and launching them
bool cuda_graph_begin(Backend *be, char *err, size_t err_size);
void *cuda_graph_end(Backend *be, char *err, size_t err_size);
bool cuda_graph_current(const Backend *be, const void *graph);
void cuda_graph_launch(Backend *be, void *graph);
void cuda_graph_free(Backend *be, void *graph);
// Whether this thread is recording a graph now (cuda_fail's message says so: an op that cannot
// be recorded fails there, and --enforce-eager runs without graphs).
bool cuda_graph_recording(void);
void cuda_sample(Backend *be, const float *logits, int num_rows, int vocab, const SampleRow *rows,
                 int32_t *ids, PickLogprobs *logprobs);
// cudaSuccess when this build has a kernel image the current device can run.
cudaError_t cuda_kernels_probe(void);
void cuda_batch_free(CudaState *st);

#endif
