// kv_cache.h: the paged KV storage: per layer, key and value arrays of num_blocks blocks of
// block_size token slots. Only storage: which block belongs to which sequence is the caller's
// (engine/core's block manager, or a test's own bookkeeping).
#ifndef GE_MODEL_KV_CACHE_H
#define GE_MODEL_KV_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "model/config.h"

typedef struct {
  int num_layers;
  int num_blocks;
  int block_size;     // tokens per block (16)
  int num_kv_heads;
  int head_dim;
  float **k;          // [num_layers] each [num_blocks, block_size, num_kv_heads, head_dim]
  float **v;          // [num_layers] same
} KvCache;

// Bytes one token's K and V take over all layers.
size_t kv_cache_bytes_per_token(const GptOssConfig *c);

// Allocates num_blocks blocks (zeroed). False with a message when the memory is not there.
bool kv_cache_init(KvCache *kv, const GptOssConfig *c, int num_blocks, int block_size, char *err,
                   size_t err_size);
void kv_cache_free(KvCache *kv);

#endif
