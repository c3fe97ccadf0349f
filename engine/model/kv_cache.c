// kv_cache.c: allocation of the paged KV storage (see kv_cache.h) through the backend. Owns the
// per-layer arrays; never decides which block holds which sequence.
#include "model/kv_cache.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "common/check.h"

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

// Stage layer i's array: its own, or (hybrid) the k-th of its kind in the stage shares the k-th
// array. Returns the number of arrays.
static int kv_cache_arrays(const GptOssConfig *c, const Shard *shard, bool hybrid,
                           int *array_of_layer) {
  int num_of_kind[2] = {0, 0}, num_arrays = 0;
  for (int i = 0; i < shard_num_layers(shard); i++) {
    int kind = config_layer_is_sliding(c, shard->layer_begin + i);
    int a = hybrid ? num_of_kind[kind]++ : i;
    if (array_of_layer) array_of_layer[i] = a;
    if (a + 1 > num_arrays) num_arrays = a + 1;
  }
  return num_arrays;
}

size_t kv_cache_bytes_per_token(const GptOssConfig *c, const Shard *shard, KvDtype dtype,
                                bool hybrid) {
  const Shard whole = shard_whole(c);
  if (!shard) shard = &whole;
  return 2 * (size_t)kv_cache_arrays(c, shard, hybrid, NULL) * (size_t)shard->num_kv_heads *
         (size_t)c->head_dim * kv_dtype_size(dtype);
}

bool kv_cache_init(KvCache *kv, Backend *be, const GptOssConfig *c, const Shard *shard,
                   KvDtype dtype, int num_blocks, int block_size, bool hybrid, char *err,
                   size_t err_size) {
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
  CHECK(!hybrid || config_has_both_layer_kinds(c));
  const int num_layers = shard_num_layers(shard);
  size_t array_bytes;  // one array of K (or V): num_blocks * block_size * kv heads * head_dim
  if (__builtin_mul_overflow(
          (size_t)num_blocks * (size_t)block_size,
          (size_t)shard->num_kv_heads * (size_t)c->head_dim * kv_dtype_size(dtype), &array_bytes) ||
      array_bytes > SIZE_MAX / 2 / (size_t)num_layers) {
    snprintf(err, err_size, "KV cache: %d blocks of %d tokens overflow the address space",
             num_blocks, block_size);
    return false;
  }
  int *array_of_layer = xmalloc((size_t)num_layers * sizeof *array_of_layer);
  const int num_arrays = kv_cache_arrays(c, shard, hybrid, array_of_layer);
  *kv = (KvCache){.backend = be,
                  .num_layers = num_layers,
                  .num_blocks = num_blocks,
                  .block_size = block_size,
                  .num_kv_heads = shard->num_kv_heads,
                  .head_dim = c->head_dim,
                  .dtype = dtype,
                  .hybrid = hybrid,
                  .k = xcalloc((size_t)num_layers, sizeof(void *)),
                  .v = xcalloc((size_t)num_layers, sizeof(void *)),
                  .num_arrays = num_arrays,
                  .k_arrays = xcalloc((size_t)num_arrays, sizeof(void *)),
                  .v_arrays = xcalloc((size_t)num_arrays, sizeof(void *))};
  bool ok = true;
  for (int a = 0; ok && a < num_arrays; a++) {
    kv->k_arrays[a] = be->alloc(be, array_bytes);
    kv->v_arrays[a] = be->alloc(be, array_bytes);
    ok = kv->k_arrays[a] && kv->v_arrays[a];
  }
  for (int i = 0; ok && i < num_layers; i++) {
    kv->k[i] = kv->k_arrays[array_of_layer[i]];
    kv->v[i] = kv->v_arrays[array_of_layer[i]];
  }
  free(array_of_layer);
  if (!ok) {
    double gib = 2.0 * (double)array_bytes * num_arrays / (1 << 30);
    snprintf(err, err_size,
             "KV cache: out of memory for %d blocks of %d tokens (%.2f GiB, %zu "
             "bytes per token); lower the number of KV blocks",
             num_blocks, block_size, gib, kv_cache_bytes_per_token(c, shard, dtype, hybrid));
    kv_cache_free(kv);
    return false;
  }
  return true;
}

void kv_cache_free(KvCache *kv) {
  Backend *be = kv->backend;
  for (int a = 0; a < kv->num_arrays; a++) {
    if (kv->k_arrays[a]) be->free(be, kv->k_arrays[a]);
    if (kv->v_arrays[a]) be->free(be, kv->v_arrays[a]);
  }
  free(kv->k);
  free(kv->v);
  free(kv->k_arrays);
  free(kv->v_arrays);
  *kv = (KvCache){0};
}
