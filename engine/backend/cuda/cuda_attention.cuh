// cuda_attention.cuh: what the attention op's kernels share (cuda_attention.cu: float32 on the
// CUDA cores, any cache and head size; cuda_attention_flash.cu: tensor cores, prefill and
// decode, for a bf16 cache with heads of 64): the kernel parameters, a block's work, and the
// tensor-core kernels' entry points. Not for use outside engine/backend/cuda.
#ifndef GE_BACKEND_CUDA_CUDA_ATTENTION_CUH
#define GE_BACKEND_CUDA_CUDA_ATTENTION_CUH

#include "backend/cuda/cuda_internal.cuh"

struct CudaAttnParams {
  const float *q;  // [num_tokens, q_stride]
  int q_stride;
  const void *k_cache, *v_cache;  // this layer's [num_slots, kv_dim], float or bf16
  const float *sinks;             // [num_heads]
  float *out;                     // [num_tokens, num_heads * head_dim]
  const int32_t *positions;       // [num_tokens]
  const int32_t *block_tables;    // [num_seqs, max_blocks]
  int max_blocks, block_size;
  const int4 *tiles;  // [num_tiles] {seq, first token, end token, 0}
  int num_heads, group, head_dim, kv_dim, window;
  float scale;
};

// Query heads per thread block of either kernel (of one KV head's group).
#define CUDA_ATTN_HEADS_PER_BLOCK 8

// A block's work: tile blockIdx.x's tokens t0 .. t0 + ntok of sequence s, and blockIdx.y's KV
// head and chunk of its query heads; row r is token t0 + r / gh, head kvh * group + h_begin +
// r % gh. The keys any of its rows sees are [kmin, kmax] (causal, and the window).
struct CudaAttnBlock {
  int s, t0, ntok, kvh, h_begin, gh, nrows, kmin, kmax;
};

static __device__ __forceinline__ CudaAttnBlock cuda_attn_block(const CudaAttnParams &p) {
  const int4 tile = p.tiles[blockIdx.x];
  const int head_chunks = (p.group + CUDA_ATTN_HEADS_PER_BLOCK - 1) / CUDA_ATTN_HEADS_PER_BLOCK;
  CudaAttnBlock b;
  b.s = tile.x, b.t0 = tile.y, b.ntok = tile.z - tile.y;
  b.kvh = blockIdx.y / head_chunks;
  b.h_begin = (blockIdx.y % head_chunks) * CUDA_ATTN_HEADS_PER_BLOCK;
  b.gh = min(CUDA_ATTN_HEADS_PER_BLOCK, p.group - b.h_begin);
  b.nrows = b.ntok * b.gh;
  b.kmin = INT32_MAX, b.kmax = -1;
  for (int i = 0; i < b.ntok; i++) {
    const int pos = p.positions[b.t0 + i];
    b.kmin = min(b.kmin, p.window > 0 ? max(0, pos - p.window + 1) : 0);
    b.kmax = max(b.kmax, pos);
  }
  return b;
}

// Where key j of the block's sequence starts in the layer's cache, for the block's KV head (its
// element offset, through the block table); past kmax, the head's first row (a mapped address
// for a copy that fills zeros).
static __device__ __forceinline__ int64_t cuda_attn_key_at(const CudaAttnParams &p,
                                                           const CudaAttnBlock &b, int j) {
  const int64_t head = (int64_t)b.kvh * p.head_dim;
  if (j > b.kmax) return head;
  const int32_t *blocks = p.block_tables + (int64_t)b.s * p.max_blocks;  // [max_blocks]
  return ((int64_t)blocks[j / p.block_size] * p.block_size + j % p.block_size) * p.kv_dim + head;
}

// Whether the tensor-core kernels take this call (a bf16 cache, heads of 64).
bool cuda_attention_flash_fits(const AttentionArgs *a);
// The prefill kernel over num_tiles tiles of up to CUDA_ATTN_FLASH_TOKENS tokens (p.tiles).
void cuda_attention_flash_launch(CudaState *st, const CudaAttnParams &p, int num_tiles,
                                 int num_kv_heads);
// The decode kernel over num_tiles tiles of up to CUDA_ATTN_TILE_TOKENS tokens (p.tiles).
void cuda_attention_flash_decode_launch(CudaState *st, const CudaAttnParams &p, int num_tiles,
                                        int num_kv_heads);

#endif
