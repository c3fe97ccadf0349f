// block_manager.h: the KV block pool as bookkeeping: which of num_blocks block ids are free (a
// stack: O(1) alloc and free), and each request's block table, grown on demand as its tokens
// reach a new block and released whole on finish, abort or preemption. Block ids only: it never
// touches KV memory (model/kv_cache.h owns that) and knows nothing of requests or scheduling.
// No prefix caching: blocks are never shared, so no hashes and no reference counts.
// Single-threaded: the engine thread owns it.
#ifndef GE_CORE_BLOCK_MANAGER_H
#define GE_CORE_BLOCK_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
  int num_blocks;
  int block_size;     // tokens per block
  int32_t *free_ids;  // [num_blocks] free_ids[0 .. num_free) are free; the last is handed out next
  int num_free;
} BlockManager;

// One request's blocks: ids[i] holds the KV of positions i * block_size to (i + 1) * block_size
// - 1. The ids array is the owner's storage (the request's allocation).
typedef struct {
  int32_t *ids;     // [capacity]
  int num_blocks;   // ids in use
  int capacity;     // the most this request can ever need, fixed at creation
} BlockTable;

// Blocks that hold num_tokens tokens.
static inline int blocks_for_tokens(int num_tokens, int block_size) {
  return (num_tokens + block_size - 1) / block_size;
}

// All num_blocks blocks start free.
void blocks_init(BlockManager *bm, int num_blocks, int block_size);
void blocks_free(BlockManager *bm);

// True when a request of num_tokens tokens fits in the empty cache. Reads only the fields set by
// blocks_init, so any thread may call it.
bool blocks_can_ever_fit(const BlockManager *bm, int num_tokens);

// Blocks in use, for /metrics.
static inline int blocks_num_used(const BlockManager *bm) { return bm->num_blocks - bm->num_free; }

// An empty table over the caller's ids [capacity].
static inline void blocks_table_init(BlockTable *t, int32_t *ids, int capacity) {
  *t = (BlockTable){.ids = ids, .capacity = capacity};
}

// Grows t until it covers num_tokens tokens. All or nothing: false (and t unchanged) when the
// pool has too few free blocks.
bool blocks_grow(BlockManager *bm, BlockTable *t, int num_tokens);

// Returns all of t's blocks to the pool; t is empty afterwards.
void blocks_release(BlockManager *bm, BlockTable *t);

#endif
