// kv_cache.h: the paged KV storage of one rank: per layer of its stage, key and value arrays of
// num_blocks blocks of block_size token slots for its KV heads (shard.h), in its backend's
// memory, as float32 or bf16. Only storage: which block belongs to which sequence is the
// caller's (engine/core's block manager, or a test's own bookkeeping).
//
// A hybrid cache (vLLM's hybrid KV cache layout) lets the k-th sliding-window layer of the stage
// and its k-th full-attention layer share one array: a block id then holds one of the two
// layers' KV, never both (the block manager's hybrid pool hands each block to one group), so a
// block costs the bytes of max(sliding, full) layers instead of all of them. The forward pass
// then reads and writes the sliding layers through the Batch's window_ arrays.
#ifndef GE_MODEL_KV_CACHE_H
#define GE_MODEL_KV_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "model/config.h"
#include "model/shard.h"

typedef struct Backend Backend;

// The cache's element type: float32 (every backend), or bf16 (the CUDA backend: half the bytes
// to hold and to read; each key and value rounded to nearest even once, when it is written, as
// vLLM's bf16 cache does).
typedef enum { KV_F32, KV_BF16 } KvDtype;

// "float32" | "bfloat16" <-> KvDtype, and the bytes of one element.
const char *kv_dtype_name(KvDtype d);
bool kv_dtype_from_name(const char *name, KvDtype *out);
size_t kv_dtype_size(KvDtype d);

typedef struct {
  Backend *backend;  // whose memory k and v are in
  int num_layers;    // the stage's layers; index i is layer shard.layer_begin + i
  int num_blocks;
  int block_size;    // tokens per block (16)
  int num_kv_heads;  // the rank's KV heads
  int head_dim;
  KvDtype dtype;
  bool hybrid;      // a sliding and a full layer share each array (above)
  void **k;         // [num_layers] each [num_blocks, block_size, num_kv_heads, head_dim] of dtype
  void **v;         // [num_layers] same
  int num_arrays;   // the distinct arrays of k (and of v): num_layers, or fewer when hybrid
  void **k_arrays;  // [num_arrays] what k points into, and frees
  void **v_arrays;  // [num_arrays]
} KvCache;

// Bytes one token's K and V take over the shard's layers and KV heads (shard NULL: the whole
// model), in a block of a hybrid cache (the larger of the stage's sliding and full layer
// counts) or not.
size_t kv_cache_bytes_per_token(const GptOssConfig *c, const Shard *shard, KvDtype dtype,
                                bool hybrid);

// Allocates num_blocks blocks (zeroed) of dtype in be's memory for shard (NULL: the whole
// model), hybrid or not (hybrid needs a model of both layer kinds). False with a message when
// the memory is not there.
bool kv_cache_init(KvCache *kv, Backend *be, const GptOssConfig *c, const Shard *shard,
                   KvDtype dtype, int num_blocks, int block_size, bool hybrid, char *err,
                   size_t err_size);
void kv_cache_free(KvCache *kv);

#endif
