// bpe.c: BPE merge of one piece with a linked list of parts and a lazy min-heap of pair ranks.
// Part i always starts at byte i (a merge absorbs the right part). A heap entry is stale when its
// part's current pair rank differs: a rank names one byte string, so an equal rank at the same
// start is the same pair.
#include "text/bpe.h"

#include <stdlib.h>

#include "common/check.h"

static void scratch_reserve(BpeScratch *s, size_t n) {
  if (n <= s->cap) return;
  bpe_scratch_free(s);
  s->cap = n < 64 ? 64 : n;
  s->next = xmalloc(s->cap * sizeof *s->next);
  s->prev = xmalloc(s->cap * sizeof *s->prev);
  s->rank = xmalloc(s->cap * sizeof *s->rank);
  s->heap = xmalloc(3 * s->cap * sizeof *s->heap);
}

void bpe_scratch_free(BpeScratch *s) {
  free(s->next);
  free(s->prev);
  free(s->rank);
  free(s->heap);
  *s = (BpeScratch){0};
}

// ---------------------------------------------------------------------------------------------
// binary min-heap of uint64 keys (rank in the high half, part index in the low half)

static void heap_push(uint64_t *heap, size_t *size, uint64_t key) {
  size_t i = (*size)++;
  while (i > 0 && heap[(i - 1) / 2] > key) {
    heap[i] = heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  heap[i] = key;
}

static uint64_t heap_pop(uint64_t *heap, size_t *size) {
  uint64_t top = heap[0], last = heap[--*size];
  size_t i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= *size) break;
    if (child + 1 < *size && heap[child + 1] < heap[child]) child++;
    if (heap[child] >= last) break;
    heap[i] = heap[child];
    i = child;
  }
  if (*size) heap[i] = last;
  return top;
}

// ---------------------------------------------------------------------------------------------

// Rank of part i merged with its next part, or UINT32_MAX when there is no next or no such token.
static uint32_t pair_rank(const Vocab *v, const uint8_t *piece, size_t n, const BpeScratch *s,
                          uint32_t i) {
  uint32_t j = s->next[i];
  if (j >= n) return UINT32_MAX;
  uint32_t k = s->next[j];
  int32_t r = vocab_rank(v, piece + i, k - i);
  return r < 0 ? UINT32_MAX : (uint32_t)r;
}

static void set_pair(const Vocab *v, const uint8_t *piece, size_t n, BpeScratch *s, uint32_t i,
                     size_t *heap_size) {
  s->rank[i] = pair_rank(v, piece, n, s, i);
  if (s->rank[i] != UINT32_MAX) heap_push(s->heap, heap_size, (uint64_t)s->rank[i] << 32 | i);
}

void bpe_encode_piece(const Vocab *v, const uint8_t *piece, size_t n, BpeScratch *s, TokenIds *out) {
  int32_t whole = vocab_rank(v, piece, n);
  if (whole >= 0) {
    token_ids_push(out, (uint32_t)whole);
    return;
  }
  scratch_reserve(s, n);
  for (uint32_t i = 0; i < n; i++) {
    s->next[i] = i + 1;
    s->prev[i] = i - 1;  // wraps for part 0, never read there
  }
  size_t heap_size = 0;
  for (uint32_t i = 0; i < n; i++) set_pair(v, piece, n, s, i, &heap_size);

  while (heap_size) {
    uint64_t top = heap_pop(s->heap, &heap_size);
    uint32_t i = (uint32_t)top, r = (uint32_t)(top >> 32);
    if (s->rank[i] != r) continue;  // stale: part i was merged or its pair changed
    uint32_t j = s->next[i];        // part j is absorbed into part i
    s->next[i] = s->next[j];
    if (s->next[j] < n) s->prev[s->next[j]] = i;
    s->rank[j] = UINT32_MAX;
    set_pair(v, piece, n, s, i, &heap_size);
    if (i > 0) set_pair(v, piece, n, s, s->prev[i], &heap_size);
  }

  for (uint32_t i = 0; i < n; i = s->next[i]) {
    int32_t r = vocab_rank(v, piece + i, s->next[i] - i);
    CHECK(r >= 0);  // every part is a single byte or the result of a merge
    token_ids_push(out, (uint32_t)r);
  }
}
