// cuda_batch.cu: upload_batch: the Batch's index arrays packed into one pinned staging buffer
// and copied to the device in one transfer, with the attention work tiles cut on the host
// alongside: runs of up to CUDA_ATTN_TILE_TOKENS tokens of one sequence (the sequences with
// fewer than CUDA_ATTN_FLASH_MIN_TOKENS new tokens first), and runs of CUDA_ATTN_FLASH_TOKENS of
// the others for the tensor-core kernel. The buffers are sized for the most tiles the batch's
// token and sequence counts allow, so the warm-up step (dist/warm_up.h) reaches their peak. The
// returned Batch lives in the backend state and points into device memory until the next call.
// upload_graph_batch does the same for a decode batch into a second buffer whose layout (the
// same pieces, cuda_batch_put) is fixed by the most sequences and blocks a graph batch can have,
// so recorded ops (cuda_graph.cu) find every later batch where they found the first. Computes no
// op.
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

// The pieces of a batch in the staging and device buffers, in order: the one-dimensional arrays,
// the attention tiles, then the two block tables.
enum {
  PIECE_TOKEN_IDS,
  PIECE_POSITIONS,
  PIECE_SLOTS,
  PIECE_WINDOW_SLOTS,
  PIECE_QUERY_START,
  PIECE_SEQ_LENS,
  PIECE_LOGITS_INDICES,
  PIECE_TILES,
  PIECE_TABLES,
  PIECE_WINDOW_TABLES,
  PIECES
};

// What a layout has room for: tokens, sequences, logits rows and tiles, the tables' row stride
// (blocks), and whether the window arrays have a place.
typedef struct {
  size_t tokens, seqs, logits, tiles, stride;
  bool window;
} CudaBatchRoom;

// The pieces' offsets for room, 16-byte aligned; at[PIECES] is the end.
static void cuda_batch_layout(const CudaBatchRoom *r, size_t at[PIECES + 1]) {
  const size_t T = r->tokens, S = r->seqs, win = r->window;
  const size_t bytes[PIECES] = {T * sizeof(uint32_t),
                                T * sizeof(int32_t),
                                T * sizeof(int64_t),
                                win * T * sizeof(int64_t),
                                (S + 1) * sizeof(int32_t),
                                S * sizeof(int32_t),
                                r->logits * sizeof(int32_t),
                                r->tiles * sizeof(int4),
                                S * r->stride * sizeof(int32_t),
                                win * S * r->stride * sizeof(int32_t)};
  at[0] = 0;
  for (int i = 0; i < PIECES; i++) at[i + 1] = at[i] + cuda_batch_piece(bytes[i]);
}

// Stages host's arrays in h at their pieces of room's layout `at` (the tables' rows packed,
// max_blocks_per_seq apart), cuts the attention tiles there, and copies them to dev: all of it in
// one copy when the layout is the batch's own (own_layout: its sizes, its stride), else the
// arrays and tiles in one and each table by a copy that spaces its rows room->stride apart.
// Returns the device view (st->batch, its tables' stride room->stride) and hands the tiles to
// the attention op.
static const Batch *cuda_batch_put(CudaState *st, const Batch *host, const CudaBatchRoom *room,
                                   const size_t at[PIECES + 1], bool own_layout, char *h,
                                   char *dev) {
  const size_t T = (size_t)host->num_tokens, S = (size_t)host->num_seqs;
  const size_t w = (size_t)host->max_blocks_per_seq, stride = room->stride;
  CHECK(T <= room->tokens && S <= room->seqs && (size_t)host->num_logits <= room->logits);
  CHECK(w <= stride &&
        (room->window || (!host->window_slot_mapping && !host->window_block_tables)));
  Batch *d = &st->batch;
  *d = *host;
  const struct {
    const void *src;
    size_t bytes;
    const void **dst;
  } arrays[PIECES] = {
      {host->token_ids, T * sizeof(uint32_t), (const void **)&d->token_ids},
      {host->positions, T * sizeof(int32_t), (const void **)&d->positions},
      {host->slot_mapping, T * sizeof(int64_t), (const void **)&d->slot_mapping},
      {host->window_slot_mapping, T * sizeof(int64_t), (const void **)&d->window_slot_mapping},
      {host->query_start, (S + 1) * sizeof(int32_t), (const void **)&d->query_start},
      {host->seq_lens, S * sizeof(int32_t), (const void **)&d->seq_lens},
      {host->logits_indices, (size_t)host->num_logits * sizeof(int32_t),
       (const void **)&d->logits_indices},
      {NULL, 0, NULL},  // the tiles, cut below
      {host->block_tables, S * w * sizeof(int32_t), (const void **)&d->block_tables},
      {host->window_block_tables, S * w * sizeof(int32_t), (const void **)&d->window_block_tables},
  };
  for (int i = 0; i < PIECES; i++) {
    if (!arrays[i].dst) continue;
    if (arrays[i].src && arrays[i].bytes) memcpy(h + at[i], arrays[i].src, arrays[i].bytes);
    *arrays[i].dst = arrays[i].src ? dev + at[i] : NULL;
  }
  d->max_blocks_per_seq = (int)stride;
  int n4 = 0, n_short = 0, n_flash = 0;  // none without query starts
  const int4 *tiles = NULL;
  if (host->query_start) {
    cuda_batch_tiles(host, NULL, NULL, &n4, &n_short, &n_flash);
    CHECK((size_t)(n4 + n_flash) * sizeof(int4) <= at[PIECE_TILES + 1] - at[PIECE_TILES]);
    int4 *staged = (int4 *)(h + at[PIECE_TILES]);
    cuda_batch_tiles(host, staged, staged + n4, &n4, &n_short, &n_flash);
    tiles = (const int4 *)(dev + at[PIECE_TILES]);
  }
  if (own_layout) {
    if (at[PIECES])
      CUDA_CHECK(cudaMemcpyAsync(dev, h, at[PIECES], cudaMemcpyHostToDevice, st->stream));
  } else {
    CUDA_CHECK(cudaMemcpyAsync(dev, h, at[PIECE_TABLES], cudaMemcpyHostToDevice, st->stream));
    for (int i = PIECE_TABLES; i < PIECES; i++)
      if (arrays[i].src && S > 0 && w > 0)
        CUDA_CHECK(cudaMemcpy2DAsync(dev + at[i], stride * sizeof(int32_t), h + at[i],
                                     w * sizeof(int32_t), w * sizeof(int32_t), S,
                                     cudaMemcpyHostToDevice, st->stream));
  }
  CUDA_CHECK(cudaEventRecord(st->batch_copied, st->stream));
  st->attn_tiles = tiles;
  st->num_attn_tiles = n4;
  st->num_attn_short_tiles = n_short;
  st->attn_flash_tiles = tiles ? tiles + n4 : NULL;
  st->num_attn_flash_tiles = n_flash;
  return d;
}

const Batch *cuda_upload_batch(Backend *be, const Batch *host) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, CUDA_PROF_UPLOAD);
  CHECK(host->num_seqs >= 0 && host->num_tokens >= 0 && host->num_logits >= 0);
  const size_t T = (size_t)host->num_tokens, S = (size_t)host->num_seqs;
  const CudaBatchRoom room = {T,
                              S,
                              (size_t)host->num_logits,
                              host->query_start ? cuda_batch_max_tiles(T, S) : 0,
                              (size_t)host->max_blocks_per_seq,
                              host->window_slot_mapping || host->window_block_tables};
  size_t at[PIECES + 1];
  cuda_batch_layout(&room, at);
  // The staging buffer may still be the source of the previous call's copy.
  CUDA_CHECK(cudaEventSynchronize(st->batch_copied));
  cuda_buffer_reserve(&st->batch_host, at[PIECES] + 16, true);
  cuda_buffer_reserve(&st->batch_dev, at[PIECES] + 16, false);
  return cuda_batch_put(st, host, &room, at, true, (char *)st->batch_host.ptr,
                        (char *)st->batch_dev.ptr);
}

const Batch *cuda_upload_graph_batch(Backend *be, const Batch *host, int max_seqs, int max_blocks) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, CUDA_PROF_UPLOAD);
  const int n = host->num_seqs;
  CHECK(n > 0 && n <= max_seqs && host->num_tokens == n && host->num_logits == n);
  CHECK(host->max_blocks_per_seq >= 1 && host->query_start && host->block_tables);
  CHECK((host->window_slot_mapping != NULL) == (host->window_block_tables != NULL));
  // One layout for the backend's life, with room for the window arrays whether this batch has
  // them or not: a recorded op keeps the addresses it was given.
  CHECK(st->graph_max_seqs == 0 ||
        (st->graph_max_seqs == max_seqs && st->graph_max_blocks == max_blocks));
  const size_t S = (size_t)max_seqs;
  const CudaBatchRoom room = {S, S, S, cuda_batch_max_tiles(S, S), (size_t)max_blocks, true};
  size_t at[PIECES + 1];
  cuda_batch_layout(&room, at);
  if (st->graph_max_seqs == 0) {
    cuda_buffer_reserve(&st->graph_batch_host, at[PIECES], true);
    cuda_buffer_reserve(&st->graph_batch_dev, at[PIECES], false);
    st->graph_max_seqs = max_seqs, st->graph_max_blocks = max_blocks;
  }
  // The staging buffer may still be the source of the previous call's copy.
  CUDA_CHECK(cudaEventSynchronize(st->batch_copied));
  return cuda_batch_put(st, host, &room, at, false, (char *)st->graph_batch_host.ptr,
                        (char *)st->graph_batch_dev.ptr);
}
