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
  CHECK(num_blocks > 0 && block_size > 0);
  *bm = (BlockManager){.num_blocks = num_blocks, .block_size = block_size,
                       .enable_caching = enable_caching};
  size_t n = (size_t)num_blocks;
  bm->ref_count = xcalloc(n, sizeof *bm->ref_count);
  bm->free_prev = xmalloc(n * sizeof *bm->free_prev);
  bm->free_next = xmalloc(n * sizeof *bm->free_next);
  for (int b = 0; b < num_blocks; b++) {
    bm->free_prev[b] = b - 1;
    bm->free_next[b] = b + 1 < num_blocks ? b + 1 : -1;
  }
  bm->free_head = 0;
  bm->free_tail = num_blocks - 1;
  bm->num_free = num_blocks;
  if (!enable_caching) return;
  uint32_t num_buckets = 1;
  while (num_buckets < (uint32_t)num_blocks) num_buckets *= 2;
  bm->bucket_mask = num_buckets - 1;
  bm->buckets = xmalloc(num_buckets * sizeof *bm->buckets);
  for (uint32_t i = 0; i < num_buckets; i++) bm->buckets[i] = -1;
  bm->bucket_next = xmalloc(n * sizeof *bm->bucket_next);
  bm->hash = xmalloc(n * sizeof *bm->hash);
  bm->is_cached = xcalloc(n, sizeof *bm->is_cached);
}

void blocks_free(BlockManager *bm) {
  free(bm->ref_count);
  free(bm->free_prev);
  free(bm->free_next);
  free(bm->buckets);
  free(bm->bucket_next);
  free(bm->hash);
  free(bm->is_cached);
  *bm = (BlockManager){0};
}

bool blocks_can_ever_fit(const BlockManager *bm, int num_tokens) {
  return blocks_for_tokens(num_tokens, bm->block_size) <= bm->num_blocks;
}

// ---------------------------------------------------------------------------------------------
// The free queue

static void queue_remove(BlockManager *bm, int32_t b) {
  int32_t prev = bm->free_prev[b], next = bm->free_next[b];
  if (prev >= 0) bm->free_next[prev] = next;
  else bm->free_head = next;
  if (next >= 0) bm->free_prev[next] = prev;
  else bm->free_tail = prev;
  bm->num_free--;
}

static void queue_push_back(BlockManager *bm, int32_t b) {
  bm->free_prev[b] = bm->free_tail;
  bm->free_next[b] = -1;
  if (bm->free_tail >= 0) bm->free_next[bm->free_tail] = b;
  else bm->free_head = b;
  bm->free_tail = b;
  bm->num_free++;
}

// ---------------------------------------------------------------------------------------------
// The prefix cache

static uint32_t bucket_of(const BlockManager *bm, const BlockHash *h) {
  uint32_t v;
  memcpy(&v, h->bytes, sizeof v);
  return v & bm->bucket_mask;
}

static int32_t cache_get(const BlockManager *bm, const BlockHash *h) {
  for (int32_t b = bm->buckets[bucket_of(bm, h)]; b >= 0; b = bm->bucket_next[b])
    if (memcmp(bm->hash[b].bytes, h->bytes, sizeof h->bytes) == 0) return b;
  return -1;
}

// Duplicates (the same prefix computed by two requests at once) are kept, as vLLM keeps them:
// a table's ids never change once taken.
static void cache_put(BlockManager *bm, int32_t b, const BlockHash *h) {
  CHECK(!bm->is_cached[b]);
  uint32_t k = bucket_of(bm, h);
  bm->hash[b] = *h;
  bm->is_cached[b] = true;
  bm->bucket_next[b] = bm->buckets[k];
  bm->buckets[k] = b;
  bm->num_cached++;
}

static void cache_evict(BlockManager *bm, int32_t b) {
  int32_t *link = &bm->buckets[bucket_of(bm, &bm->hash[b])];
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

// Appends n fresh blocks from the head of the queue (n <= num_free), evicting cached ones.
static void take_fresh(BlockManager *bm, BlockTable *t, int n) {
  CHECK(n <= bm->num_free && t->num_blocks + n <= t->capacity);
  for (int i = 0; i < n; i++) {
    int32_t b = bm->free_head;
    queue_remove(bm, b);
    if (bm->enable_caching && bm->is_cached[b]) cache_evict(bm, b);
    bm->ref_count[b] = 1;
    t->ids[t->num_blocks++] = b;
  }
}

bool blocks_grow(BlockManager *bm, BlockTable *t, int num_tokens) {
  int need = blocks_for_tokens(num_tokens, bm->block_size) - t->num_blocks;
  if (need <= 0) return true;
  if (need > bm->num_free) return false;
  take_fresh(bm, t, need);
  return true;
}

int blocks_find_cached(BlockManager *bm, BlockTable *t, const uint32_t *token_ids,
                       int num_tokens) {
  CHECK(t->num_blocks == 0);
  if (!bm->enable_caching) return 0;
  int max_blocks = (num_tokens - 1) / bm->block_size;
  hash_blocks(bm, t, token_ids, max_blocks);
  int n = 0;
  while (n < max_blocks && (t->ids[n] = cache_get(bm, &t->hashes[n])) >= 0) n++;
  return n;
}

bool blocks_admit(BlockManager *bm, BlockTable *t, int num_hit_blocks, int num_tokens) {
  CHECK(t->num_blocks == 0);
  int num_fresh = blocks_for_tokens(num_tokens, bm->block_size) - num_hit_blocks;
  CHECK(num_fresh >= 0);
  int num_free_hits = 0;
  for (int i = 0; i < num_hit_blocks; i++) num_free_hits += bm->ref_count[t->ids[i]] == 0;
  if (num_fresh + num_free_hits > bm->num_free) return false;
  for (int i = 0; i < num_hit_blocks; i++) {
    int32_t b = t->ids[i];
    CHECK(bm->is_cached[b]);
    if (bm->ref_count[b]++ == 0) queue_remove(bm, b);
  }
  t->num_blocks = t->num_cached = num_hit_blocks;
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
  for (int i = t->num_cached; i < num_full; i++) cache_put(bm, t->ids[i], &t->hashes[i]);
  t->num_cached = num_full;
}

void blocks_release(BlockManager *bm, BlockTable *t) {
  for (int i = t->num_blocks - 1; i >= 0; i--) {
    int32_t b = t->ids[i];
    CHECK(bm->ref_count[b] > 0);
    if (--bm->ref_count[b] == 0) queue_push_back(bm, b);
  }
  CHECK(bm->num_free <= bm->num_blocks);
  t->num_blocks = t->num_cached = 0;
}
