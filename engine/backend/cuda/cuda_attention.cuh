// cuda_attention.cuh: what the attention op's two kernels share (cuda_attention.cu: float32 on
// the CUDA cores, any cache and head size; cuda_attention_flash.cu: tensor cores for the prefill
// sequences of a bf16 cache with heads of 64): the kernel parameters and the flash kernel's
// entry points. Not for use outside engine/backend/cuda.
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

// Whether the flash kernel takes this call's prefill sequences (a bf16 cache, heads of 64).
bool cuda_attention_flash_fits(const AttentionArgs *a);
// The flash kernel over num_tiles tiles of up to CUDA_ATTN_FLASH_TOKENS tokens (p.tiles).
void cuda_attention_flash_launch(CudaState *st, const CudaAttnParams &p, int num_tiles,
                                 int num_kv_heads);

#endif
