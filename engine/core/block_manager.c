// block_manager.c: reference counts, the free queue (a doubly linked list over block ids: O(1)
// pop from the head, push at the tail, removal from the middle) and the prefix cache (chained
// buckets keyed by a block's hash). Every operation is O(blocks touched); a bucket walk is
// O(1) expected (at least as many buckets as blocks). Nothing allocates after init: hashes use
// OpenSSL's low-level SHA-256 with its context on the stack, because OpenSSL 3.0's EVP digests
// allocate a provider context on every init (one allocation per block hashed).
#define OPENSSL_SUPPRESS_DEPRECATED  // SHA256_Init and co. are deprecated, not removed, in 3.x
#include "core/block_manager.h"

#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

void blocks_init(BlockManager *bm, int num_blocks, int block_size, bool enable_caching) {
  blocks_init_hybrid(bm, num_blocks, block_size, enable_caching, 0, 0);
}

void blocks_init_hybrid(BlockManager *bm, int num_blocks, int block_size, bool enable_caching,
                        int window, int max_chunk_tokens) {
  CHECK(num_blocks > 0 && block_size > 0 && window >= 0);
  CHECK(window == 0 || (num_blocks > 1 && max_chunk_tokens > 0));
  *bm = (BlockManager){.num_blocks = num_blocks,
                       .block_size = block_size,
                       .enable_caching = enable_caching,
                       .window = window,
                       .max_chunk_tokens = max_chunk_tokens};
  size_t n = (size_t)num_blocks;
  bm->ref_count = xcalloc(n, sizeof *bm->ref_count);
  bm->free_prev = xmalloc(n * sizeof *bm->free_prev);
  bm->free_next = xmalloc(n * sizeof *bm->free_next);
  const int first = window > 0 ? BLOCK_NULL + 1 : 0;  // BLOCK_NULL never joins the queue
  for (int b = first; b < num_blocks; b++) {
    bm->free_prev[b] = b > first ? b - 1 : -1;
    bm->free_next[b] = b + 1 < num_blocks ? b + 1 : -1;
  }
  bm->free_head = first;
  bm->free_tail = num_blocks - 1;
  bm->num_free = num_blocks - first;
  if (!enable_caching) return;
  uint32_t num_buckets = 1;
  while (num_buckets < (uint32_t)num_blocks) num_buckets *= 2;
  bm->bucket_mask = num_buckets - 1;
  bm->buckets = xmalloc(num_buckets * sizeof *bm->buckets);
  for (uint32_t i = 0; i < num_buckets; i++) bm->buckets[i] = -1;
  bm->bucket_next = xmalloc(n * sizeof *bm->bucket_next);
  bm->hash = xmalloc(n * sizeof *bm->hash);
  bm->is_cached = xcalloc(n, sizeof *bm->is_cached);
  bm->is_window = xcalloc(n, sizeof *bm->is_window);
}

void blocks_free(BlockManager *bm) {
  free(bm->ref_count);
  free(bm->free_prev);
  free(bm->free_next);
  free(bm->buckets);
  free(bm->bucket_next);
  free(bm->hash);
  free(bm->is_cached);
  free(bm->is_window);
  *bm = (BlockManager){0};
}

// The first block of t's window group that the query at position pos sees.
static int window_first_block(const BlockManager *bm, int pos) {
  int first_key = pos - bm->window + 1;
  return (first_key > 0 ? first_key : 0) / bm->block_size;
}

int blocks_most_needed(const BlockManager *bm, int num_tokens) {
  int n = blocks_for_tokens(num_tokens, bm->block_size);
  if (bm->window <= 0) return n;
  // A step's window blocks: its first token's window (window - 1 keys before it) and its own
  // tokens, over one more block where they start mid-block.
  int span = blocks_for_tokens(bm->window - 1 + bm->max_chunk_tokens, bm->block_size) + 1;
  return n + (n < span ? n : span);
}

// ---------------------------------------------------------------------------------------------
// The free queue

static void queue_remove(BlockManager *bm, int32_t b) {
  int32_t prev = bm->free_prev[b], next = bm->free_next[b];
  if (prev >= 0)
    bm->free_next[prev] = next;
  else
    bm->free_head = next;
  if (next >= 0)
    bm->free_prev[next] = prev;
  else
    bm->free_tail = prev;
  bm->num_free--;
}

static void queue_push_back(BlockManager *bm, int32_t b) {
  bm->free_prev[b] = bm->free_tail;
  bm->free_next[b] = -1;
  if (bm->free_tail >= 0)
    bm->free_next[bm->free_tail] = b;
  else
    bm->free_head = b;
  bm->free_tail = b;
  bm->num_free++;
}

// ---------------------------------------------------------------------------------------------
// The prefix cache

// A hash's bucket in a group (the window group's blocks of a prefix sit in another bucket
// than the full group's).
static uint32_t bucket_of(const BlockManager *bm, const BlockHash *h, bool window) {
  uint32_t v;
  memcpy(&v, h->bytes, sizeof v);
  return (v + window) & bm->bucket_mask;
}

static int32_t cache_get(const BlockManager *bm, const BlockHash *h, bool window) {
  for (int32_t b = bm->buckets[bucket_of(bm, h, window)]; b >= 0; b = bm->bucket_next[b])
    if (bm->is_window[b] == window && memcmp(bm->hash[b].bytes, h->bytes, sizeof h->bytes) == 0)
      return b;
  return -1;
}

// Duplicates (the same prefix computed by two requests at once) are kept, as vLLM keeps them:
// a table's ids never change once taken.
static void cache_put(BlockManager *bm, int32_t b, const BlockHash *h, bool window) {
  CHECK(!bm->is_cached[b] && !(window && b == BLOCK_NULL));
  uint32_t k = bucket_of(bm, h, window);
  bm->hash[b] = *h;
  bm->is_cached[b] = true;
  bm->is_window[b] = window;
  bm->bucket_next[b] = bm->buckets[k];
  bm->buckets[k] = b;
  bm->num_cached++;
}

static void cache_evict(BlockManager *bm, int32_t b) {
  int32_t *link = &bm->buckets[bucket_of(bm, &bm->hash[b], bm->is_window[b])];
  while (*link != b) link = &bm->bucket_next[*link];
  *link = bm->bucket_next[b];
  bm->is_cached[b] = false;
  bm->num_cached--;
}

// Extends t->hashes over the first num_full_blocks full blocks of token_ids.
static void hash_blocks(const BlockManager *bm, BlockTable *t, const uint32_t *token_ids,
                        int num_full_blocks) {
  static const BlockHash NO_PARENT;
  _Static_assert(sizeof NO_PARENT.bytes == SHA256_DIGEST_LENGTH, "a block hash is a SHA-256");
  size_t block_bytes = (size_t)bm->block_size * sizeof *token_ids;
  for (int i = t->num_hashes; i < num_full_blocks; i++) {
    const BlockHash *parent = i > 0 ? &t->hashes[i - 1] : &NO_PARENT;
    SHA256_CTX c;
    CHECK(SHA256_Init(&c) == 1 && SHA256_Update(&c, parent->bytes, sizeof parent->bytes) == 1 &&
          SHA256_Update(&c, token_ids + (size_t)i * (size_t)bm->block_size, block_bytes) == 1 &&
          SHA256_Final(t->hashes[i].bytes, &c) == 1);
  }
  if (num_full_blocks > t->num_hashes) t->num_hashes = num_full_blocks;
}

// ---------------------------------------------------------------------------------------------
// Tables

// Groups in the pool: blocks a table takes per block of tokens.
static int num_groups(const BlockManager *bm) { return bm->window > 0 ? 2 : 1; }

// One fresh block from the head of the queue (evicted if cached), referenced once.
static int32_t take_block(BlockManager *bm) {
  int32_t b = bm->free_head;
  CHECK(b >= 0);
  queue_remove(bm, b);
  if (bm->enable_caching && bm->is_cached[b]) cache_evict(bm, b);
  bm->ref_count[b] = 1;
  return b;
}

// Drops one reference to b; a block no table holds joins the tail of the free queue.
static void unref_block(BlockManager *bm, int32_t b) {
  CHECK(bm->ref_count[b] > 0);
  if (--bm->ref_count[b] == 0) queue_push_back(bm, b);
}

// One more reference to cached block b (a hit); a free one leaves the queue.
static void ref_hit(BlockManager *bm, int32_t b) {
  CHECK(bm->is_cached[b]);
  if (bm->ref_count[b]++ == 0) queue_remove(bm, b);
}

// Appends n blocks of tokens (one fresh block per group each) to t (n * groups <= num_free).
static void take_fresh(BlockManager *bm, BlockTable *t, int n) {
  CHECK(n * num_groups(bm) <= bm->num_free && t->num_blocks + n <= t->capacity);
  CHECK((bm->window > 0) == (t->window_ids != NULL));
  for (int i = 0; i < n; i++) {
    t->ids[t->num_blocks] = take_block(bm);
    if (t->window_ids) t->window_ids[t->num_blocks] = take_block(bm);
    t->num_blocks++;
  }
}

bool blocks_grow(BlockManager *bm, BlockTable *t, int num_tokens) {
  int need = blocks_for_tokens(num_tokens, bm->block_size) - t->num_blocks;
  if (need <= 0) return true;
  if (need * num_groups(bm) > bm->num_free) return false;
  take_fresh(bm, t, need);
  return true;
}

void blocks_slide(BlockManager *bm, BlockTable *t, const uint32_t *token_ids, int num_known_tokens,
                  int pos) {
  if (bm->window <= 0) return;
  int first = window_first_block(bm, pos);
  if (first > t->num_blocks) first = t->num_blocks;
  int num_hashable = num_known_tokens / bm->block_size;  // full blocks of known tokens
  if (num_hashable > first) num_hashable = first;
  if (bm->enable_caching && num_hashable > t->num_cached)
    hash_blocks(bm, t, token_ids, num_hashable);
  for (; t->num_skipped < first; t->num_skipped++) {
    int32_t b = t->window_ids[t->num_skipped];
    if (bm->enable_caching && t->num_skipped >= t->num_cached && t->num_skipped < num_hashable)
      cache_put(bm, b, &t->hashes[t->num_skipped], true);
    unref_block(bm, b);
    t->window_ids[t->num_skipped] = BLOCK_NULL;
  }
}

int blocks_find_cached(BlockManager *bm, BlockTable *t, const uint32_t *token_ids, int num_tokens) {
  CHECK(t->num_blocks == 0);
  if (!bm->enable_caching) return 0;
  int max_blocks = (num_tokens - 1) / bm->block_size;
  hash_blocks(bm, t, token_ids, max_blocks);
  int n = 0;
  while (n < max_blocks && (t->ids[n] = cache_get(bm, &t->hashes[n], false)) >= 0) n++;
  if (bm->window <= 0) return n;
  // The window blocks before the hit's end must be cached too: where one is not, the hit ends
  // at it, and the blocks before that end are looked at again.
  while (n > 0) {
    int first = window_first_block(bm, n * bm->block_size), i = n - 1;
    while (i >= first && (t->window_ids[i] = cache_get(bm, &t->hashes[i], true)) >= 0) i--;
    if (i < first) break;
    n = i;
  }
  return n;
}

bool blocks_admit(BlockManager *bm, BlockTable *t, int num_hit_blocks, int num_tokens) {
  CHECK(t->num_blocks == 0);
  int num_fresh = blocks_for_tokens(num_tokens, bm->block_size) - num_hit_blocks;
  CHECK(num_fresh >= 0);
  const bool hybrid = bm->window > 0;
  // hybrid: the window hits are the blocks the first computed token sees
  const int skipped = hybrid ? window_first_block(bm, num_hit_blocks * bm->block_size) : 0;
  int num_free_hits = 0;
  for (int i = 0; i < num_hit_blocks; i++) {
    num_free_hits += bm->ref_count[t->ids[i]] == 0;
    if (hybrid && i >= skipped) num_free_hits += bm->ref_count[t->window_ids[i]] == 0;
  }
  if (num_fresh * num_groups(bm) + num_free_hits > bm->num_free) return false;
  for (int i = 0; i < num_hit_blocks; i++) {
    ref_hit(bm, t->ids[i]);
    if (hybrid && i >= skipped)
      ref_hit(bm, t->window_ids[i]);
    else if (hybrid)
      t->window_ids[i] = BLOCK_NULL;
  }
  t->num_blocks = t->num_cached = num_hit_blocks;
  t->num_skipped = skipped;
  take_fresh(bm, t, num_fresh);
  return true;
}

void blocks_cache(BlockManager *bm, BlockTable *t, const uint32_t *token_ids,
                  int num_written_tokens) {
  if (!bm->enable_caching) return;
  int num_full = num_written_tokens / bm->block_size;
  if (num_full > t->num_blocks) num_full = t->num_blocks;
  if (num_full <= t->num_cached) return;
  hash_blocks(bm, t, token_ids, num_full);
  for (int i = t->num_cached; i < num_full; i++) {
    cache_put(bm, t->ids[i], &t->hashes[i], false);
    if (t->window_ids && i >= t->num_skipped) cache_put(bm, t->window_ids[i], &t->hashes[i], true);
  }
  t->num_cached = num_full;
}

void blocks_release(BlockManager *bm, BlockTable *t) {
  for (int i = t->num_blocks - 1; i >= 0; i--) {
    if (t->window_ids && i >= t->num_skipped) unref_block(bm, t->window_ids[i]);
    unref_block(bm, t->ids[i]);
  }
  CHECK(bm->num_free <= blocks_num_usable(bm));
  t->num_blocks = t->num_cached = t->num_skipped = 0;
}
