// decode_batch.h: a decode step's batch (one new token a sequence) padded up to the size of a
// recorded graph (dist/runner_graphs.c's CUDA graphs; vLLM pads its cudagraph batches alike): the
// step's sequences first, then padding rows that repeat the step's sequence of the shortest
// context (its token, position and table rows) but write no KV (slot -1), and get logits rows
// nobody reads. Repeating a real row, a padding row routes to the experts that row already
// reads (a row of its own, at position 0, could add 4 experts a layer to a small step's ~20)
// and reads the fewest keys. A batch of padding only (what graphs are recorded over) has rows
// of one token at position 0 that read slot 0 of block 0. Also the sizes graphs are recorded
// for. Host memory only: the backend uploads the result (upload_graph_batch).
#ifndef GE_DIST_DECODE_BATCH_H
#define GE_DIST_DECODE_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "model/batch.h"

typedef struct {
  int max_seqs, max_blocks;  // the most sequences, and blocks a sequence, it can hold
  bool hybrid;               // with window arrays (a hybrid KV cache's steps have them)
  uint32_t *token_ids;
  int32_t *positions, *query_start, *seq_lens, *logits_indices;
  int64_t *slot_mapping, *window_slot_mapping;
  int32_t *block_tables, *window_block_tables;  // [max_seqs, max_blocks]
  Batch batch;                                  // the last decode_batch_pad's
} DecodeBatch;

void decode_batch_init(DecodeBatch *d, int max_seqs, int max_blocks, bool hybrid);
void decode_batch_free(DecodeBatch *d);

// Whether b is a decode step d can pad: one token and one logits row a sequence, in order
// (num_tokens == num_seqs == num_logits, query_start[i] == logits_indices[i] == i), at most
// max_seqs sequences of
// at most max_blocks blocks, with window arrays exactly when d is hybrid.
bool decode_batch_fits(const DecodeBatch *d, const Batch *b);

// b's sequences (b fits d, which the caller has checked, or has no sequence), then
// size - b->num_seqs padding ones, as a Batch of size sequences that lives in d until the next
// call. size <= max_seqs.
const Batch *decode_batch_pad(DecodeBatch *d, const Batch *b, int size);

// The batch sizes graphs are recorded for, ascending, into sizes (room for max_size): 1, 2, 4,
// then every multiple of 8, up to max_size (vLLM's --cuda-graph-sizes pattern). Returns how many.
int decode_graph_sizes(int max_size, int *sizes);

#endif
