// decode_batch.c: a decode step padded to a recorded graph's size (decode_batch.h).
#include "dist/decode_batch.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"

void decode_batch_init(DecodeBatch *d, int max_seqs, int max_blocks, bool hybrid) {
  CHECK(max_seqs > 0 && max_blocks > 0);
  const size_t n = (size_t)max_seqs, table = n * (size_t)max_blocks;
  *d = (DecodeBatch){.max_seqs = max_seqs, .max_blocks = max_blocks, .hybrid = hybrid};
  d->token_ids = xcalloc(n, sizeof *d->token_ids);
  d->positions = xcalloc(n, sizeof *d->positions);
  d->query_start = xcalloc(n + 1, sizeof *d->query_start);
  d->seq_lens = xcalloc(n, sizeof *d->seq_lens);
  d->logits_indices = xcalloc(n, sizeof *d->logits_indices);
  d->slot_mapping = xcalloc(n, sizeof *d->slot_mapping);
  d->block_tables = xcalloc(table, sizeof *d->block_tables);
  if (hybrid) {
    d->window_slot_mapping = xcalloc(n, sizeof *d->window_slot_mapping);
    d->window_block_tables = xcalloc(table, sizeof *d->window_block_tables);
  }
}

void decode_batch_free(DecodeBatch *d) {
  free(d->token_ids), free(d->positions), free(d->query_start), free(d->seq_lens);
  free(d->logits_indices), free(d->slot_mapping), free(d->block_tables);
  free(d->window_slot_mapping), free(d->window_block_tables);
  *d = (DecodeBatch){0};
}

bool decode_batch_fits(const DecodeBatch *d, const Batch *b) {
  if (b->num_seqs < 1 || b->num_seqs > d->max_seqs || b->num_tokens != b->num_seqs ||
      b->num_logits != b->num_seqs || b->max_blocks_per_seq < 1 ||
      b->max_blocks_per_seq > d->max_blocks || (b->window_block_tables != NULL) != d->hybrid ||
      (b->window_slot_mapping != NULL) != d->hybrid)
    return false;
  for (int i = 0; i < b->num_seqs; i++)
    if (b->query_start[i] != i || b->logits_indices[i] != i) return false;
  return true;
}

// Rows [n, size) of one table of width w: copies of row m, or with m < 0 block 0 only.
static void pad_table(int32_t *table, int n, int size, int w, int m) {
  for (int s = n; s < size; s++)
    if (m < 0)
      memset(table + (size_t)s * w, 0, (size_t)w * sizeof *table);
    else
      memcpy(table + (size_t)s * w, table + (size_t)m * w, (size_t)w * sizeof *table);
}

const Batch *decode_batch_pad(DecodeBatch *d, const Batch *b, int size) {
  const int n = b->num_seqs;  // the caller has checked decode_batch_fits: only its O(1) parts here
  CHECK(n <= size && size <= d->max_seqs && b->num_tokens == n && b->num_logits == n);
  CHECK(n == 0 ||
        (b->max_blocks_per_seq <= d->max_blocks && (b->window_block_tables != NULL) == d->hybrid));
  const int w = n > 0 ? b->max_blocks_per_seq : 1;
  if (n > 0) {
    memcpy(d->token_ids, b->token_ids, (size_t)n * sizeof *d->token_ids);
    memcpy(d->positions, b->positions, (size_t)n * sizeof *d->positions);
    memcpy(d->seq_lens, b->seq_lens, (size_t)n * sizeof *d->seq_lens);
    memcpy(d->slot_mapping, b->slot_mapping, (size_t)n * sizeof *d->slot_mapping);
    memcpy(d->block_tables, b->block_tables, (size_t)n * (size_t)w * sizeof *d->block_tables);
    if (d->hybrid) {
      memcpy(d->window_slot_mapping, b->window_slot_mapping,
             (size_t)n * sizeof *d->window_slot_mapping);
      memcpy(d->window_block_tables, b->window_block_tables,
             (size_t)n * (size_t)w * sizeof *d->window_block_tables);
    }
  }
  int m = n > 0 ? 0 : -1;  // the step's sequence of the shortest context, which padding repeats
  for (int s = 1; s < n; s++)
    if (b->positions[s] < b->positions[m]) m = s;
  for (int s = n; s < size; s++) {
    d->token_ids[s] = m >= 0 ? d->token_ids[m] : 0;
    d->positions[s] = m >= 0 ? d->positions[m] : 0;
    d->seq_lens[s] = m >= 0 ? d->seq_lens[m] : 1;
    d->slot_mapping[s] = -1;  // kv_write skips it
    if (d->hybrid) d->window_slot_mapping[s] = -1;
  }
  pad_table(d->block_tables, n, size, w, m);
  if (d->hybrid) pad_table(d->window_block_tables, n, size, w, m);
  for (int s = 0; s <= size; s++) d->query_start[s] = s;
  for (int s = 0; s < size; s++) d->logits_indices[s] = s;
  d->batch = (Batch){.num_seqs = size,
                     .num_tokens = size,
                     .token_ids = d->token_ids,
                     .positions = d->positions,
                     .slot_mapping = d->slot_mapping,
                     .query_start = d->query_start,
                     .seq_lens = d->seq_lens,
                     .block_tables = d->block_tables,
                     .max_blocks_per_seq = w,
                     .window_slot_mapping = d->hybrid ? d->window_slot_mapping : NULL,
                     .window_block_tables = d->hybrid ? d->window_block_tables : NULL,
                     .logits_indices = d->logits_indices,
                     .num_logits = size};
  return &d->batch;
}

int decode_graph_sizes(int max_size, int *sizes) {
  int n = 0;
  for (int s = 1; s <= max_size && s < 8; s *= 2) sizes[n++] = s;
  for (int s = 8; s <= max_size; s += 8) sizes[n++] = s;
  return n;
}
