// kv_cache.c: allocation of the paged KV storage (see kv_cache.h) through the backend. Owns the
// per-layer arrays; never decides which block holds which sequence.
#include "model/kv_cache.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

const char *kv_dtype_name(KvDtype d) { return d == KV_BF16 ? "bfloat16" : "float32"; }

bool kv_dtype_from_name(const char *name, KvDtype *out) {
  if (strcmp(name, "float32") == 0)
    *out = KV_F32;
  else if (strcmp(name, "bfloat16") == 0)
    *out = KV_BF16;
  else
    return false;
  return true;
}

size_t kv_dtype_size(KvDtype d) { return d == KV_BF16 ? 2 : sizeof(float); }

size_t kv_cache_bytes_per_token(const GptOssConfig *c, const Shard *shard, KvDtype dtype) {
  const Shard whole = shard_whole(c);
  if (!shard) shard = &whole;
  return 2 * (size_t)shard_num_layers(shard) * (size_t)shard->num_kv_heads * (size_t)c->head_dim *
         kv_dtype_size(dtype);
}

bool kv_cache_init(KvCache *kv, Backend *be, const GptOssConfig *c, const Shard *shard,
                   KvDtype dtype, int num_blocks, int block_size, char *err, size_t err_size) {
  *kv = (KvCache){0};
  const Shard whole = shard_whole(c);
  if (!shard) shard = &whole;
  if (num_blocks <= 0 || block_size <= 0) {
    snprintf(err, err_size,
             "KV cache: need at least one block of at least one token (got %d "
             "blocks of %d)",
             num_blocks, block_size);
    return false;
  }
  const int num_layers = shard_num_layers(shard);
  size_t layer_bytes;  // one layer's K (or V): num_blocks * block_size * kv heads * head_dim
  if (__builtin_mul_overflow(
          (size_t)num_blocks * (size_t)block_size,
          (size_t)shard->num_kv_heads * (size_t)c->head_dim * kv_dtype_size(dtype), &layer_bytes) ||
      layer_bytes > SIZE_MAX / 2 / (size_t)num_layers) {
    snprintf(err, err_size, "KV cache: %d blocks of %d tokens overflow the address space",
             num_blocks, block_size);
    return false;
  }
  *kv = (KvCache){.backend = be,
                  .num_layers = num_layers,
                  .num_blocks = num_blocks,
                  .block_size = block_size,
                  .num_kv_heads = shard->num_kv_heads,
                  .head_dim = c->head_dim,
                  .dtype = dtype,
                  .k = calloc((size_t)num_layers, sizeof(void *)),
                  .v = calloc((size_t)num_layers, sizeof(void *))};
  bool ok = kv->k && kv->v;
  for (int l = 0; ok && l < num_layers; l++) {
    kv->k[l] = be->alloc(be, layer_bytes);
    kv->v[l] = be->alloc(be, layer_bytes);
    ok = kv->k[l] && kv->v[l];
  }
  if (!ok) {
    double gib = 2.0 * (double)layer_bytes * num_layers / (1 << 30);
    snprintf(err, err_size,
             "KV cache: out of memory for %d blocks of %d tokens (%.2f GiB, %zu "
             "bytes per token); lower the number of KV blocks",
             num_blocks, block_size, gib, kv_cache_bytes_per_token(c, shard, dtype));
    kv_cache_free(kv);
    return false;
  }
  return true;
}

void kv_cache_free(KvCache *kv) {
  Backend *be = kv->backend;
  for (int l = 0; l < kv->num_layers; l++) {
    if (kv->k && kv->k[l]) be->free(be, kv->k[l]);
    if (kv->v && kv->v[l]) be->free(be, kv->v[l]);
  }
  free(kv->k);
  free(kv->v);
  *kv = (KvCache){0};
}
