// cuda_moe.cuh: the contract between the MoE op (cuda_moe.cu: routing, grouping by expert,
// the weighted sum) and its grouped expert kernels (cuda_moe_gemm.cu): the work-item layout, the
// tile sizes, which kernel a call takes, and one launch per expert product. Not for use outside
// engine/backend/cuda.
#ifndef GE_BACKEND_CUDA_CUDA_MOE_CUH
#define GE_BACKEND_CUDA_CUDA_MOE_CUH

#include <cuda_bf16.h>

#include "backend/cuda/cuda_internal.cuh"

// Token rows (of one expert) and weight rows per thread block of the expert kernel.
#define CUDA_MOE_BM 32
#define CUDA_MOE_BN 64
// The wide MXFP4 kernels (cuda_moe_wide.cu): token rows per work item of the prefill shape (the
// other takes CUDA_MOE_BM-row items) and columns per shared stage (hidden and intermediate sizes
// must be multiples of it). A call takes the prefill shape when its pairs average at least
// CUDA_MOE_WIDE_MIN_ROWS per expert (GPTOSS_CUDA_MOE_WIDE_ROWS moves it): there a decoded weight
// serves up to 128 token rows, where the tile kernel's serves 32.
#define CUDA_MOE_WIDE_BM 128
#define CUDA_MOE_WIDE_BK 64
#define CUDA_MOE_WIDE_MIN_ROWS 64
// The cuBLAS path (cuda_moe_cublas.cu): a call of MXFP4 experts takes it when its pairs average
// at least CUDA_MOE_CUBLAS_MIN_ROWS an expert (GPTOSS_CUDA_MOE_CUBLAS_ROWS moves it; there
// decoding each weight once per call to bf16 and cuBLAS's products beat decoding it once per 128
// rows); it decodes CUDA_MOE_CUBLAS_CHUNK_MIB of experts' bf16 weights at a time
// (GPTOSS_CUDA_MOE_CUBLAS_CHUNK_MIB), at least one expert and at most CUDA_MOE_CUBLAS_CHUNK: by
// default one expert of gpt-oss's mlp1 (33 MB) or two of its mlp2, which an H100's or H200's 50
// MB of L2 may still hold when cuBLAS reads them back.
#define CUDA_MOE_CUBLAS_MIN_ROWS 256
#define CUDA_MOE_CUBLAS_CHUNK 32
#define CUDA_MOE_CUBLAS_CHUNK_MIB 32
// Experts whose weight pointers one launch carries (kernel parameters, __grid_constant__).
#define CUDA_MOE_MAX_LAUNCH_EXPERTS 128
// Experts the router may score (shared-memory tables of the grouping kernel).
#define CUDA_MOE_MAX_EXPERTS 1024

// One expert product over the tokens grouped by expert. A work item {local expert, first
// position in `sorted`, rows (<= tile_rows), 0} is one tile of one expert's tokens; the kernel
// runs items [0, *num_items) and, of them, experts [first, first + count) of this launch.
struct CudaMoeGemm {
  int format;        // WeightFormat of every expert of the launch (F32, BF16 or MXFP4)
  int tile_rows;     // CUDA_MOE_BM or CUDA_MOE_WIDE_BM
  bool wide;         // MXFP4 on the wide kernel in its tile_rows shape; else the tile kernel
  int stage;         // 1: x -> mlp1 -> SwiGLU -> act; 2: act -> mlp2 -> weighted rows
  int first, count;  // local experts [first, first + count) of this launch
  const void *w[CUDA_MOE_MAX_LAUNCH_EXPERTS];          // expert first + i: [n, k] in format
  const uint8_t *scales[CUDA_MOE_MAX_LAUNCH_EXPERTS];  // MXFP4: [n, k / 32]
  int n, k;               // weight rows (output features) and columns (input features)
  const float *bias;      // [local experts, n] (indexed by local expert)
  const int4 *items;      // [max items]
  const int *num_items;   // [1]
  const int32_t *sorted;  // [pairs] pair ids t * top_k + rank, grouped by expert
  int top_k;
  // stage 1: input rows of x (the pair's token); output act[position], the SwiGLU of the
  // interleaved gate/linear pairs of the n outputs
  const float *x;  // [num_tokens, k]
  float *act;      // [pairs, n / 2]
  float limit;
  // stage 2: input rows act[position]; output y[pair] = routing weight * (row + bias)
  const float *act_in;        // [pairs, k]
  const float *pair_weights;  // [pairs]
  // MXFP4 and BF16 experts (the tensor cores' bf16 inputs) read and write bf16 rows instead of
  // x, act and act_in: x rounded once per call, and act rounded once by stage 1
  const __nv_bfloat16 *x_bf16;  // [num_tokens, k] (stage 1)
  __nv_bfloat16 *act_bf16;      // [pairs, n / 2] (stage 1's output) = [pairs, k] (stage 2's input)
  float *y;                     // [pairs, n]
};

// A call on the cuBLAS path: the layer's experts [begin, begin + num_local) and the routing
// (device), the host's row offsets of each local expert's pairs in the gathered block (row[l] ..
// row[l + 1]; the block is positions first .. of the grouping's sorted order), and the buffers
// (device): the gathered input rows xs, stage 1's products h1 and SwiGLU act, stage 2's rows y
// by position, and position[pair] (for the sum).
struct CudaMoeCublas {
  const GptOssConfig *config;
  const LayerWeights *layer;  // mlp1[0], mlp2[0] and the biases: local expert 0 = begin
  int begin, num_local;
  size_t pairs;
  const int32_t *experts, *sorted;  // [pairs] each pair's expert; pair ids by expert
  const float *pair_weights;        // [pairs]
  const __nv_bfloat16 *x_bf16;      // [tokens, hidden]
  int64_t first;
  int64_t row[CUDA_MOE_MAX_EXPERTS + 1];
  __nv_bfloat16 *xs, *h1, *act;  // [rows, hidden], [rows, 2 inter], [rows, inter]
  float *y;                      // [pairs, hidden]
  int32_t *position;             // [pairs]
};

// Whether a call may take the cuBLAS path now: widths of whole 32-column blocks, and no graph
// being recorded (the path waits for the experts' counts on the host).
bool cuda_moe_cublas_fits(const GptOssConfig *c);
// The MoE scratch the path needs beyond the grouped kernels' (position, xs, h1).
size_t cuda_moe_cublas_scratch(const GptOssConfig *c, size_t pairs);
// After the grouping: the counts to the host (a wait), the row offsets, the buffers carved from
// cursor (cuda_moe_cublas_scratch's bytes), the input rows gathered and the positions written.
// counts: [experts] (device)
void cuda_moe_cublas_gather(CudaState *st, CudaMoeCublas *m, const int *counts, char **cursor);
// Stage 1 (mlp1, bias, SwiGLU into act) or 2 (mlp2, bias, routing weight into y).
void cuda_moe_cublas_products(CudaState *st, const CudaMoeCublas &m, int stage);

// Runs one launch with max_items blocks of items (a bound on *num_items) on the stream.
void cuda_moe_gemm(CudaState *st, const CudaMoeGemm &g, int max_items);
// The MXFP4 experts' kernel (cuda_moe_mxfp4.cu) on grid {max items, weight-row blocks}, for
// cuda_moe_gemm.
void cuda_moe_mxfp4_launch(CudaState *st, const CudaMoeGemm &g, dim3 grid);
// The wide MXFP4 kernel (cuda_moe_wide.cu) over max_items items of up to tile_rows rows.
void cuda_moe_wide_launch(CudaState *st, const CudaMoeGemm &g, int max_items);

#endif
