// cuda_batch.cu: upload_batch: the Batch's index arrays packed into one pinned staging buffer
// and copied to the device in one transfer, with the attention work tiles (runs of up to
// CUDA_ATTN_TILE_TOKENS tokens of one sequence) cut on the host alongside. The returned Batch
// lives in the backend state and points into device memory until the next call. Computes no op.
#include <string.h>

#include "backend/cuda/cuda_internal.cuh"

// Bytes of one array in the packed buffer (16-byte aligned pieces).
static size_t cuda_batch_piece(size_t bytes) { return (bytes + 15) & ~(size_t)15; }

void cuda_batch_free(CudaState *st) {
  if (st->batch_host.ptr) CUDA_CHECK(cudaFreeHost(st->batch_host.ptr));
  CUDA_CHECK(cudaFree(st->batch_dev.ptr));
  CUDA_CHECK(cudaEventDestroy(st->batch_copied));
  st->batch_host = st->batch_dev = CudaBuffer{};
}

// Number of attention tiles of a batch: each sequence's tokens in runs of CUDA_ATTN_TILE_TOKENS.
static int cuda_batch_num_tiles(const Batch *b) {
  int n = 0;
  for (int s = 0; s < b->num_seqs; s++) {
    const int len = b->query_start[s + 1] - b->query_start[s];
    n += (len + CUDA_ATTN_TILE_TOKENS - 1) / CUDA_ATTN_TILE_TOKENS;
  }
  return n;
}

// Writes the tiles {seq, first token, end token, 0}.   tiles: [cuda_batch_num_tiles(b)]
static void cuda_batch_tiles(const Batch *b, int4 *tiles) {
  int n = 0;
  for (int s = 0; s < b->num_seqs; s++)
    for (int t = b->query_start[s]; t < b->query_start[s + 1]; t += CUDA_ATTN_TILE_TOKENS) {
      const int end = t + CUDA_ATTN_TILE_TOKENS < b->query_start[s + 1] ? t + CUDA_ATTN_TILE_TOKENS
                                                                        : b->query_start[s + 1];
      tiles[n++] = make_int4(s, t, end, 0);
    }
}

// One array of the batch: its host source, its bytes, and where its device copy's pointer goes.
typedef struct {
  const void *src;
  size_t bytes;
  const void **dst;
} CudaBatchArray;

const Batch *cuda_upload_batch(Backend *be, const Batch *host) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, CUDA_PROF_UPLOAD);
  CHECK(host->num_seqs >= 0 && host->num_tokens >= 0 && host->num_logits >= 0);
  const size_t T = (size_t)host->num_tokens, S = (size_t)host->num_seqs;
  const int num_tiles = host->query_start ? cuda_batch_num_tiles(host) : 0;  // none without it
  Batch *d = &st->batch;
  *d = *host;
  const void *tiles_ptr = NULL;
  CudaBatchArray arrays[] = {
      {host->token_ids, T * sizeof(uint32_t), (const void **)&d->token_ids},
      {host->positions, T * sizeof(int32_t), (const void **)&d->positions},
      {host->slot_mapping, T * sizeof(int64_t), (const void **)&d->slot_mapping},
      {host->query_start, (S + 1) * sizeof(int32_t), (const void **)&d->query_start},
      {host->seq_lens, S * sizeof(int32_t), (const void **)&d->seq_lens},
      {host->block_tables, S * (size_t)host->max_blocks_per_seq * sizeof(int32_t),
       (const void **)&d->block_tables},
      {host->logits_indices, (size_t)host->num_logits * sizeof(int32_t),
       (const void **)&d->logits_indices},
      {NULL, (size_t)num_tiles * sizeof(int4), &tiles_ptr},  // filled in place below
  };
  const int num_arrays = (int)(sizeof arrays / sizeof arrays[0]);
  size_t total = 0;
  for (int i = 0; i < num_arrays; i++) total += cuda_batch_piece(arrays[i].bytes);
  // The staging buffer may still be the source of the previous call's copy.
  CUDA_CHECK(cudaEventSynchronize(st->batch_copied));
  cuda_buffer_reserve(&st->batch_host, total + 16, true);
  cuda_buffer_reserve(&st->batch_dev, total + 16, false);
  char *h = (char *)st->batch_host.ptr, *dev = (char *)st->batch_dev.ptr;
  size_t off = 0;
  for (int i = 0; i < num_arrays; i++) {
    CudaBatchArray *a = &arrays[i];
    const bool is_tiles = i == num_arrays - 1;
    if (!is_tiles && !a->src) {
      *a->dst = NULL;
      continue;
    }
    if (is_tiles && num_tiles > 0)
      cuda_batch_tiles(host, (int4 *)(h + off));
    else if (a->bytes)
      memcpy(h + off, a->src, a->bytes);
    *a->dst = dev + off;
    off += cuda_batch_piece(a->bytes);
  }
  if (off) CUDA_CHECK(cudaMemcpyAsync(dev, h, off, cudaMemcpyHostToDevice, st->stream));
  CUDA_CHECK(cudaEventRecord(st->batch_copied, st->stream));
  st->attn_tiles = (const int4 *)tiles_ptr;
  st->num_attn_tiles = num_tiles;
  return d;
}
