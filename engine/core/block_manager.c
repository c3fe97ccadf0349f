// block_manager.c: a free stack of block ids and per-request tables. Every operation is O(blocks
// moved); nothing allocates after init.
#include "core/block_manager.h"

#include <stdlib.h>

#include "common/check.h"

void blocks_init(BlockManager *bm, int num_blocks, int block_size) {
  CHECK(num_blocks > 0 && block_size > 0);
  bm->num_blocks = num_blocks;
  bm->block_size = block_size;
  bm->free_ids = xmalloc((size_t)num_blocks * sizeof *bm->free_ids);
  // Block 0 on top, so a fresh pool hands out 0, 1, 2, ...
  for (int i = 0; i < num_blocks; i++) bm->free_ids[i] = num_blocks - 1 - i;
  bm->num_free = num_blocks;
}

void blocks_free(BlockManager *bm) {
  free(bm->free_ids);
  *bm = (BlockManager){0};
}

bool blocks_can_ever_fit(const BlockManager *bm, int num_tokens) {
  return blocks_for_tokens(num_tokens, bm->block_size) <= bm->num_blocks;
}

bool blocks_grow(BlockManager *bm, BlockTable *t, int num_tokens) {
  int need = blocks_for_tokens(num_tokens, bm->block_size) - t->num_blocks;
  if (need <= 0) return true;
  if (need > bm->num_free) return false;
  CHECK(t->num_blocks + need <= t->capacity);
  for (int i = 0; i < need; i++) t->ids[t->num_blocks++] = bm->free_ids[--bm->num_free];
  return true;
}

void blocks_release(BlockManager *bm, BlockTable *t) {
  // Last block first, so that re-admitting the same request gets the same ids back.
  for (int i = t->num_blocks - 1; i >= 0; i--) bm->free_ids[bm->num_free++] = t->ids[i];
  CHECK(bm->num_free <= bm->num_blocks);
  t->num_blocks = 0;
}
