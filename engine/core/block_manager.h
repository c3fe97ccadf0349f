// block_manager.h: the KV block pool as bookkeeping, with vLLM v1's automatic prefix caching.
// Owns which of num_blocks block ids are free, each block's reference count, and (caching on)
// the prefix cache: a full block whose KV has been written is registered under the hash of its
// token prefix (a chain: SHA-256 of the parent block's hash and this block's token ids; SHA-256
// is vLLM's default too, and hashes are compared whole, so only a SHA-256 collision could give
// a wrong hit), so a later request whose tokens start the same way shares it instead of
// computing it again. Free blocks sit in one queue in eviction order (least recently used
// first); a freed block keeps its hash until a fresh block is needed and it is at the head of
// the queue (lazy LRU eviction); a cached block hit while free is taken back out of the queue.
// A request's BlockTable holds its block ids and the hashes of its full blocks (kept across
// preemption, since its tokens do not change). Block ids only: it never touches KV memory
// (model/kv_cache.h owns that) and knows nothing of requests, steps or scheduling: when a
// block's KV is written is the caller's to say (blocks_cache). Single-threaded: the engine
// thread owns it. Nothing allocates after blocks_init.
//
// A hybrid pool (vLLM's hybrid KV cache manager, for GPT-OSS's sliding-window layers, which
// read only the last `window` keys): each block holds one of two groups of layers' KV, the
// full-attention layers' or the sliding layers' (model/kv_cache.h lets a layer of each group
// share storage, so a block costs half the bytes). A table's ids hold the full layers' KV of
// every position; its window_ids hold the sliding layers' KV only for the blocks some query of
// the next step can still see: blocks_slide releases the ones that left the window, and their
// entries name BLOCK_NULL, block 0, reserved at init and never handed out, whose KV stays zero
// (a kernel that reads a whole chunk around the window's start reads zeros there, then masks
// them). The prefix cache keeps each group's blocks apart (the same hash names one block of
// each); a hit needs every full block of the prefix and the window blocks before its end.
#ifndef GE_CORE_BLOCK_MANAGER_H
#define GE_CORE_BLOCK_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

// The block a hybrid table's skipped window entries name (above).
#define BLOCK_NULL 0

// SHA-256 of (parent block's hash, or 32 zero bytes for the first block; block_size token ids).
typedef struct {
  uint8_t bytes[32];
} BlockHash;

typedef struct {
  int num_blocks;
  int block_size;        // tokens per block
  bool enable_caching;   // false: no hashes, no hits; blocks are plainly allocated and freed
  int window;            // > 0: a hybrid pool (above) for layers that see this many keys; 0: not
  int max_chunk_tokens;  // hybrid: the most tokens one step adds to a table (blocks_can_ever_fit)
  int32_t *ref_count;    // [num_blocks] tables holding the block; 0: in the free queue
  // the free queue, a doubly linked list through free_prev/free_next (-1 ends it): the head is
  // handed out (and evicted, if cached) first, freed blocks join at the tail
  int32_t *free_prev;  // [num_blocks]
  int32_t *free_next;  // [num_blocks]
  int32_t free_head, free_tail;
  int num_free;  // blocks in the queue, cached ones included (they count as free)
  // the prefix cache: a hash table of chained buckets over the blocks that hold a hash
  BlockHash *hash;       // [num_blocks] valid where is_cached
  bool *is_cached;       // [num_blocks]
  bool *is_window;       // [num_blocks] valid where is_cached: holds the sliding layers' KV
  int32_t *bucket_next;  // [num_blocks] next cached block in the same bucket, -1 ends
  int32_t *buckets;      // [bucket_mask + 1] first cached block of each bucket, -1: none
  uint32_t bucket_mask;
  int num_cached;  // blocks holding a hash, in use or free
} BlockManager;

// One request's blocks: ids[i] (and window_ids[i]) hold the KV of positions i * block_size to
// (i + 1) * block_size - 1. The arrays are the owner's storage (the request's allocation).
typedef struct {
  int32_t *ids;         // [capacity] the full-attention layers' (every layer's, not hybrid)
  int32_t *window_ids;  // [capacity] hybrid: the sliding layers'; NULL: not hybrid
  BlockHash *hashes;    // [capacity] hashes of the owner's full blocks, first num_hashes computed
  int num_blocks;       // ids in use
  int num_hashes;
  int num_cached;   // ids[0 .. num_cached) are in the prefix cache (hits, or blocks_cache),
                    // and so are window_ids[num_skipped .. num_cached)
  int num_skipped;  // hybrid: window_ids[0 .. num_skipped) left the window: BLOCK_NULL
  int capacity;     // the most this request can ever need, fixed at creation
} BlockTable;

// Blocks that hold num_tokens tokens.
static inline int blocks_for_tokens(int num_tokens, int block_size) {
  return (num_tokens + block_size - 1) / block_size;
}

// All num_blocks blocks start free, queued 0, 1, 2, ...
void blocks_init(BlockManager *bm, int num_blocks, int block_size, bool enable_caching);
// A hybrid pool (above) for sliding layers of `window` keys (> 0), steps adding at most
// max_chunk_tokens tokens to a table: blocks 1, 2, ... start free; block 0 is BLOCK_NULL.
// window 0: blocks_init's plain pool (max_chunk_tokens unused).
void blocks_init_hybrid(BlockManager *bm, int num_blocks, int block_size, bool enable_caching,
                        int window, int max_chunk_tokens);
void blocks_free(BlockManager *bm);

// Blocks that can hold KV: all but BLOCK_NULL in a hybrid pool.
static inline int blocks_num_usable(const BlockManager *bm) {
  return bm->num_blocks - (bm->window > 0);
}

// The most blocks a request of num_tokens tokens ever holds at once (a hybrid pool: its full
// blocks, and the window blocks of a step that adds max_chunk_tokens). Reads only the fields set
// by blocks_init, so any thread may call it, as blocks_can_ever_fit.
int blocks_most_needed(const BlockManager *bm, int num_tokens);

// True when a request of num_tokens tokens fits in the empty cache.
static inline bool blocks_can_ever_fit(const BlockManager *bm, int num_tokens) {
  return blocks_most_needed(bm, num_tokens) <= blocks_num_usable(bm);
}

// Blocks in use (referenced by a table), for /metrics: cached free blocks count as free.
static inline int blocks_num_used(const BlockManager *bm) {
  return blocks_num_usable(bm) - bm->num_free;
}

// An empty table over the caller's ids, window_ids (NULL unless the pool is hybrid) and hashes,
// [capacity] each.
static inline void blocks_table_init(BlockTable *t, int32_t *ids, int32_t *window_ids,
                                     BlockHash *hashes, int capacity) {
  *t = (BlockTable){.ids = ids, .window_ids = window_ids, .hashes = hashes, .capacity = capacity};
}

// Hybrid: releases t's window blocks that no query at position pos or later sees (those
// wholly before pos - window + 1); their entries become BLOCK_NULL. No-op otherwise. The
// scheduler calls it before growing a running table for the step whose first token is at pos.
// With caching, a released block not yet in the prefix cache is offered to it first when its
// tokens are among the num_known_tokens of token_ids (with async scheduling pos may count a
// token not sampled yet): the step that writes it may still be in flight, but any step that
// could hit it runs after that one (steps run in order), and blocks_cache at that step's update
// would find it already released.
void blocks_slide(BlockManager *bm, BlockTable *t, const uint32_t *token_ids, int num_known_tokens,
                  int pos);

// Grows t with fresh blocks (one of each group, hybrid) until it covers num_tokens tokens. All
// or nothing: false (and t unchanged) when the pool has too few free blocks. A fresh block taken
// from the queue loses its hash (eviction).
bool blocks_grow(BlockManager *bm, BlockTable *t, int num_tokens);

// For an empty t over token_ids [num_tokens]: the number of leading full blocks whose KV is in
// the prefix cache, at most (num_tokens - 1) / block_size (the last token is always computed,
// so a whole prompt never hits); hybrid, the window group's blocks that the first computed
// token sees must be cached too (the hit ends earlier where one is not). Their ids are parked in
// t's arrays (t stays empty) for blocks_admit, which must follow before any other call.
// Computes t's missing hashes. 0 with caching off.
int blocks_find_cached(BlockManager *bm, BlockTable *t, const uint32_t *token_ids, int num_tokens);

// Fills an empty t: the num_hit_blocks blocks blocks_find_cached just parked (one more
// reference each; a free one leaves the queue; hybrid, the window entries before the first
// computed token's window are BLOCK_NULL), then fresh blocks until t covers num_tokens.
// All or nothing: false (t empty, nothing taken) when the free blocks do not cover the fresh
// ones plus the hits that are free.
bool blocks_admit(BlockManager *bm, BlockTable *t, int num_hit_blocks, int num_tokens);

// Registers t's full blocks whose KV is written (the first num_written_tokens of token_ids,
// all known) in the prefix cache, from t->num_cached on, in both groups (a window block already
// released by blocks_slide is not). No-op with caching off.
void blocks_cache(BlockManager *bm, BlockTable *t, const uint32_t *token_ids,
                  int num_written_tokens);

// Drops t's references, last block first, so a request's tail is evicted before its shared
// head; a block no table holds joins the free queue (keeping its hash). t is empty afterwards
// (its hashes stay).
void blocks_release(BlockManager *bm, BlockTable *t);

#endif
