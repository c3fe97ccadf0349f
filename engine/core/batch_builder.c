// batch_builder.c: one pass over the scheduled entries, O(scheduled tokens + blocks copied).
// Only the block-table buffer grows, and only when a longer sequence or a larger batch than
// any before it appears.
#include "core/batch_builder.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"

void batch_builder_init(BatchBuilder *b, const EngineConfig *config, bool hybrid_kv) {
  size_t num_tokens = (size_t)config->max_num_batched_tokens;
  size_t num_seqs = (size_t)config->max_num_seqs;
  *b = (BatchBuilder){.block_size = config->block_size, .hybrid_kv = hybrid_kv};
  if (hybrid_kv) b->window_slot_mapping = xmalloc(num_tokens * sizeof *b->window_slot_mapping);
  b->token_ids = xmalloc(num_tokens * sizeof *b->token_ids);
  b->positions = xmalloc(num_tokens * sizeof *b->positions);
  b->slot_mapping = xmalloc(num_tokens * sizeof *b->slot_mapping);
  b->query_start = xmalloc((num_seqs + 1) * sizeof *b->query_start);
  b->seq_lens = xmalloc(num_seqs * sizeof *b->seq_lens);
  b->logits_indices = xmalloc(num_seqs * sizeof *b->logits_indices);
  b->patch_token_index = xmalloc(num_seqs * sizeof *b->patch_token_index);
  b->patch_sample_row = xmalloc(num_seqs * sizeof *b->patch_sample_row);
}

void batch_builder_free(BatchBuilder *b) {
  free(b->token_ids);
  free(b->positions);
  free(b->slot_mapping);
  free(b->query_start);
  free(b->seq_lens);
  free(b->logits_indices);
  free(b->block_tables);
  free(b->window_slot_mapping);
  free(b->window_block_tables);
  free(b->patch_token_index);
  free(b->patch_sample_row);
  *b = (BatchBuilder){0};
}

// Makes block_tables hold num_seqs rows of stride blocks.
static void reserve_block_tables(BatchBuilder *b, int num_seqs, int stride) {
  size_t need = (size_t)num_seqs * (size_t)stride;
  if (need <= b->block_tables_capacity) return;
  size_t cap = b->block_tables_capacity ? b->block_tables_capacity : 1024;
  while (cap < need) cap *= 2;
  b->block_tables = xrealloc(b->block_tables, cap * sizeof *b->block_tables);
  if (b->hybrid_kv)
    b->window_block_tables = xrealloc(b->window_block_tables, cap * sizeof *b->window_block_tables);
  b->block_tables_capacity = cap;
}

const Batch *batch_build(BatchBuilder *b, const SchedOutput *out) {
  const int bs = b->block_size;
  int stride = 1;
  for (int s = 0; s < out->num_entries; s++) {
    const SchedEntry *e = &out->entries[s];
    int num_blocks = blocks_for_tokens(e->start_pos + e->num_new_tokens, bs);
    if (num_blocks > stride) stride = num_blocks;
  }
  reserve_block_tables(b, out->num_entries, stride);
  b->num_patches = 0;
  int t = 0;
  for (int s = 0; s < out->num_entries; s++) {
    const SchedEntry *e = &out->entries[s];
    const Request *r = e->req;
    int seq_len = e->start_pos + e->num_new_tokens;
    int num_blocks = blocks_for_tokens(seq_len, bs);
    CHECK(r->status != REQ_FINISHED && num_blocks <= r->blocks.num_blocks);
    CHECK(b->hybrid_kv == (r->blocks.window_ids != NULL));
    const int32_t *ids = r->blocks.ids, *window_ids = r->blocks.window_ids;
    b->query_start[s] = t;
    for (int pos = e->start_pos; pos < seq_len; pos++, t++) {
      if (pos < r->num_tokens) {
        b->token_ids[t] = r->token_ids[pos];
      } else {  // the previous step's sample, patched in later
        CHECK(e->prev_sample_row >= 0 && pos == r->num_tokens);
        b->token_ids[t] = BATCH_PENDING_TOKEN;
        b->patch_token_index[b->num_patches] = t;
        b->patch_sample_row[b->num_patches++] = e->prev_sample_row;
      }
      b->positions[t] = pos;
      b->slot_mapping[t] = (int64_t)ids[pos / bs] * bs + pos % bs;
      if (window_ids) {  // a block the step writes is one its first token still sees
        CHECK(pos / bs >= r->blocks.num_skipped);
        b->window_slot_mapping[t] = (int64_t)window_ids[pos / bs] * bs + pos % bs;
      }
    }
    b->seq_lens[s] = seq_len;
    const size_t row = (size_t)s * (size_t)stride, row_bytes = (size_t)num_blocks * sizeof *ids;
    memcpy(b->block_tables + row, ids, row_bytes);
    if (window_ids) {  // the entries before the window are BLOCK_NULL: written, not copied
      _Static_assert(BLOCK_NULL == 0, "a row of null blocks is zero bytes");
      const int skipped = r->blocks.num_skipped < num_blocks ? r->blocks.num_skipped : num_blocks;
      memset(b->window_block_tables + row, 0, (size_t)skipped * sizeof *ids);
      memcpy(b->window_block_tables + row + skipped, window_ids + skipped,
             (size_t)(num_blocks - skipped) * sizeof *ids);
    }
    if (e->sample_row >= 0) b->logits_indices[e->sample_row] = t - 1;
  }
  CHECK(t == out->num_tokens);
  b->query_start[out->num_entries] = t;
  b->batch = (Batch){.num_seqs = out->num_entries,
                     .num_tokens = t,
                     .token_ids = b->token_ids,
                     .positions = b->positions,
                     .slot_mapping = b->slot_mapping,
                     .query_start = b->query_start,
                     .seq_lens = b->seq_lens,
                     .block_tables = b->block_tables,
                     .max_blocks_per_seq = stride,
                     .window_slot_mapping = b->window_slot_mapping,
                     .window_block_tables = b->window_block_tables,
                     .logits_indices = b->logits_indices,
                     .num_logits = out->num_samples};
  return &b->batch;
}

void batch_patch_tokens(BatchBuilder *b, const uint32_t *prev_sampled_ids) {
  for (int k = 0; k < b->num_patches; k++)
    b->token_ids[b->patch_token_index[k]] = prev_sampled_ids[b->patch_sample_row[k]];
}
