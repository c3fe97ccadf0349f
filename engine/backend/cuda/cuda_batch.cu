// cuda_batch.cu: upload_batch: the Batch's index arrays packed into one pinned staging buffer
// and copied to the device in one transfer, with the attention work tiles cut on the host
// alongside: runs of up to CUDA_ATTN_TILE_TOKENS tokens of one sequence (the sequences with
// fewer than CUDA_ATTN_FLASH_MIN_TOKENS new tokens first), and runs of CUDA_ATTN_FLASH_TOKENS of
// the others for the tensor-core kernel. The buffers are sized for the most tiles the batch's
// token and sequence counts allow, so the warm-up step (dist/warm_up.h) reaches their peak. The
// returned Batch lives in the backend state and points into device memory until the next call.
// upload_graph_batch does the same for a decode batch into a second buffer whose layout is fixed
// by the most sequences and blocks a graph batch can have, so recorded ops (cuda_graph.cu) find
// every later batch where they found the first. Computes no op.
#include <string.h>

#include "backend/cuda/cuda_internal.cuh"

// Bytes of one array in the packed buffer (16-byte aligned pieces).
static size_t cuda_batch_piece(size_t bytes) { return (bytes + 15) & ~(size_t)15; }

void cuda_batch_free(CudaState *st) {
  CudaBuffer *pinned[] = {&st->batch_host, &st->graph_batch_host};
  for (CudaBuffer *b : pinned)
    if (b->ptr) CUDA_CHECK(cudaFreeHost(b->ptr));
  CUDA_CHECK(cudaFree(st->batch_dev.ptr));
  CUDA_CHECK(cudaFree(st->graph_batch_dev.ptr));
  CUDA_CHECK(cudaEventDestroy(st->batch_copied));
  st->batch_host = st->batch_dev = st->graph_batch_host = st->graph_batch_dev = CudaBuffer{};
}

// Whether sequence s's tokens are also cut into flash tiles.
static bool cuda_batch_long(const Batch *b, int s) {
  return b->query_start[s + 1] - b->query_start[s] >= CUDA_ATTN_FLASH_MIN_TOKENS;
}

// Appends sequence s's tiles of up to `tokens` tokens at tiles[*n] (tiles NULL: counts them).
static void cuda_batch_cut(const Batch *b, int s, int tokens, int4 *tiles, int *n) {
  for (int t = b->query_start[s]; t < b->query_start[s + 1]; t += tokens, (*n)++)
    if (tiles) tiles[*n] = make_int4(s, t, min(t + tokens, b->query_start[s + 1]), 0);
}

// The batch's tiles: tiles4 [*n4] {seq, first token, end token, 0} of up to
// CUDA_ATTN_TILE_TOKENS, the short sequences' (*n_short of them) before the long ones'; flash
// [*n_flash] the long sequences' of up to CUDA_ATTN_FLASH_TOKENS. NULL arrays: counts only.
static void cuda_batch_tiles(const Batch *b, int4 *tiles4, int4 *flash, int *n4, int *n_short,
                             int *n_flash) {
  *n4 = *n_flash = 0;
  for (int pass = 0; pass < 2; pass++) {  // short sequences, then long ones
    if (pass == 1) *n_short = *n4;
    for (int s = 0; s < b->num_seqs; s++)
      if (cuda_batch_long(b, s) == (pass == 1))
        cuda_batch_cut(b, s, CUDA_ATTN_TILE_TOKENS, tiles4, n4);
  }
  for (int s = 0; s < b->num_seqs; s++)
    if (cuda_batch_long(b, s)) cuda_batch_cut(b, s, CUDA_ATTN_FLASH_TOKENS, flash, n_flash);
}

// The most tiles of both kinds T tokens of S sequences can make, the buffers' size: a sequence
// of n tokens makes ceil(n / 4) <= (n + 3) / 4 short tiles, and, with n >= 16, ceil(n / 16) <=
// 2 n / 16 flash tiles.
static_assert(CUDA_ATTN_FLASH_MIN_TOKENS >= CUDA_ATTN_FLASH_TOKENS, "ceil(n / F) <= 2 n / F");
static size_t cuda_batch_max_tiles(size_t T, size_t S) {
  return (T + (CUDA_ATTN_TILE_TOKENS - 1) * S) / CUDA_ATTN_TILE_TOKENS +
         2 * T / CUDA_ATTN_FLASH_TOKENS;
}

// The device tiles of the last upload, for the attention op.
static void cuda_batch_set_tiles(CudaState *st, const int4 *tiles, int n4, int n_short,
                                 int n_flash) {
  st->attn_tiles = tiles;
  st->num_attn_tiles = n4;
  st->num_attn_short_tiles = n_short;
  st->attn_flash_tiles = tiles ? tiles + n4 : NULL;
  st->num_attn_flash_tiles = n_flash;
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
  int n4 = 0, n_short = 0, n_flash = 0;  // none without query starts
  if (host->query_start) cuda_batch_tiles(host, NULL, NULL, &n4, &n_short, &n_flash);
  const size_t max_tiles = host->query_start ? cuda_batch_max_tiles(T, S) : 0;
  CHECK((size_t)(n4 + n_flash) <= max_tiles);
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
      {host->window_slot_mapping, host->window_slot_mapping ? T * sizeof(int64_t) : 0,
       (const void **)&d->window_slot_mapping},
      {host->window_block_tables,
       host->window_block_tables ? S * (size_t)host->max_blocks_per_seq * sizeof(int32_t) : 0,
       (const void **)&d->window_block_tables},
      {NULL, max_tiles * sizeof(int4), &tiles_ptr},  // cut in place below
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
    if (is_tiles && max_tiles > 0)
      cuda_batch_tiles(host, (int4 *)(h + off), (int4 *)(h + off) + n4, &n4, &n_short, &n_flash);
    else if (a->bytes)
      memcpy(h + off, a->src, a->bytes);
    *a->dst = dev + off;
    off += cuda_batch_piece(a->bytes);
  }
  if (off) CUDA_CHECK(cudaMemcpyAsync(dev, h, off, cudaMemcpyHostToDevice, st->stream));
  CUDA_CHECK(cudaEventRecord(st->batch_copied, st->stream));
  cuda_batch_set_tiles(st, (const int4 *)tiles_ptr, n4, n_short, n_flash);
  return d;
}

// A graph batch's device layout: its arrays at offsets that depend on max_seqs (S) and max_blocks
// (W) only, the one-dimensional ones and the tiles first (copied as one span), then the two
// tables [S, W]. The offsets of the pieces, in order; returns the span's and the whole's bytes.
enum {
  GRAPH_TOKEN_IDS,
  GRAPH_POSITIONS,
  GRAPH_SLOTS,
  GRAPH_WINDOW_SLOTS,
  GRAPH_QUERY_START,
  GRAPH_SEQ_LENS,
  GRAPH_LOGITS_INDICES,
  GRAPH_TILES,
  GRAPH_TABLES,
  GRAPH_WINDOW_TABLES,
  GRAPH_PIECES
};
static void cuda_graph_layout(size_t S, size_t W, size_t offsets[GRAPH_PIECES], size_t *span,
                              size_t *total) {
  const size_t bytes[GRAPH_PIECES] = {
      S * sizeof(uint32_t),      S * sizeof(int32_t),
      S * sizeof(int64_t),       S * sizeof(int64_t),
      (S + 1) * sizeof(int32_t), S * sizeof(int32_t),
      S * sizeof(int32_t),       cuda_batch_max_tiles(S, S) * sizeof(int4),
      S * W * sizeof(int32_t),   S * W * sizeof(int32_t)};
  size_t off = 0;
  for (int i = 0; i < GRAPH_PIECES; i++) {
    if (i == GRAPH_TABLES) *span = off;
    offsets[i] = off;
    off += cuda_batch_piece(bytes[i]);
  }
  *total = off;
}

const Batch *cuda_upload_graph_batch(Backend *be, const Batch *host, int max_seqs, int max_blocks) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, CUDA_PROF_UPLOAD);
  const int n = host->num_seqs;
  const size_t w = (size_t)host->max_blocks_per_seq, W = (size_t)max_blocks;
  CHECK(n > 0 && n <= max_seqs && host->num_tokens == n && host->num_logits == n);
  CHECK(w >= 1 && w <= W && host->query_start && host->block_tables);
  const bool window = host->window_block_tables != NULL;
  CHECK((host->window_slot_mapping != NULL) == window);
  // One layout for the backend's life: a recorded op keeps the addresses it was given.
  CHECK(st->graph_max_seqs == 0 ||
        (st->graph_max_seqs == max_seqs && st->graph_max_blocks == max_blocks));
  size_t at[GRAPH_PIECES], span = 0, total = 0;
  cuda_graph_layout((size_t)max_seqs, W, at, &span, &total);
  if (st->graph_max_seqs == 0) {
    // The host side stages the span, then each table's rows packed ([n, w]).
    cuda_buffer_reserve(&st->graph_batch_host, span + 2 * (size_t)max_seqs * W * sizeof(int32_t),
                        true);
    cuda_buffer_reserve(&st->graph_batch_dev, total, false);
    st->graph_max_seqs = max_seqs, st->graph_max_blocks = max_blocks;
  }
  // The staging buffer may still be the source of the previous call's copy.
  CUDA_CHECK(cudaEventSynchronize(st->batch_copied));
  char *h = (char *)st->graph_batch_host.ptr, *dev = (char *)st->graph_batch_dev.ptr;
  const size_t N = (size_t)n;
  const struct {
    const void *src;
    size_t bytes;
    int piece;
  } arrays[] = {
      {host->token_ids, N * sizeof(uint32_t), GRAPH_TOKEN_IDS},
      {host->positions, N * sizeof(int32_t), GRAPH_POSITIONS},
      {host->slot_mapping, N * sizeof(int64_t), GRAPH_SLOTS},
      {host->window_slot_mapping, N * sizeof(int64_t), GRAPH_WINDOW_SLOTS},
      {host->query_start, (N + 1) * sizeof(int32_t), GRAPH_QUERY_START},
      {host->seq_lens, N * sizeof(int32_t), GRAPH_SEQ_LENS},
      {host->logits_indices, N * sizeof(int32_t), GRAPH_LOGITS_INDICES},
  };
  for (const auto &a : arrays)
    if (a.src) memcpy(h + at[a.piece], a.src, a.bytes);
  int n4 = 0, n_short = 0, n_flash = 0;
  cuda_batch_tiles(host, NULL, NULL, &n4, &n_short, &n_flash);
  CHECK((size_t)(n4 + n_flash) <= cuda_batch_max_tiles((size_t)max_seqs, (size_t)max_seqs));
  int4 *tiles = (int4 *)(h + at[GRAPH_TILES]);
  cuda_batch_tiles(host, tiles, tiles + n4, &n4, &n_short, &n_flash);
  CUDA_CHECK(cudaMemcpyAsync(dev, h, span, cudaMemcpyHostToDevice, st->stream));
  // Each table's n rows of w entries, packed on the host, into rows W apart on the device.
  const int32_t *tables[2] = {host->block_tables, host->window_block_tables};
  for (int i = 0; i < 1 + window; i++) {
    int32_t *packed = (int32_t *)(h + span) + (size_t)i * (size_t)max_seqs * W;
    memcpy(packed, tables[i], N * w * sizeof(int32_t));
    CUDA_CHECK(cudaMemcpy2DAsync(dev + at[GRAPH_TABLES + i], W * sizeof(int32_t), packed,
                                 w * sizeof(int32_t), w * sizeof(int32_t), N,
                                 cudaMemcpyHostToDevice, st->stream));
  }
  CUDA_CHECK(cudaEventRecord(st->batch_copied, st->stream));
  Batch *d = &st->batch;
  *d = *host;
  d->token_ids = (const uint32_t *)(dev + at[GRAPH_TOKEN_IDS]);
  d->positions = (const int32_t *)(dev + at[GRAPH_POSITIONS]);
  d->slot_mapping = (const int64_t *)(dev + at[GRAPH_SLOTS]);
  d->query_start = (const int32_t *)(dev + at[GRAPH_QUERY_START]);
  d->seq_lens = (const int32_t *)(dev + at[GRAPH_SEQ_LENS]);
  d->logits_indices = (const int32_t *)(dev + at[GRAPH_LOGITS_INDICES]);
  d->block_tables = (const int32_t *)(dev + at[GRAPH_TABLES]);
  d->max_blocks_per_seq = max_blocks;
  d->window_slot_mapping = window ? (const int64_t *)(dev + at[GRAPH_WINDOW_SLOTS]) : NULL;
  d->window_block_tables = window ? (const int32_t *)(dev + at[GRAPH_WINDOW_TABLES]) : NULL;
  cuda_batch_set_tiles(st, (const int4 *)(dev + at[GRAPH_TILES]), n4, n_short, n_flash);
  return d;
}
