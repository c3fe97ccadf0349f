// batch.h: one forward call's input: the tokens of several sequences flattened into one array
// (prefill chunks and decode tokens mixed), where each sequence's KV lives (block tables, slot
// mapping) and which positions need logits. Built by the caller (the runner); read-only here.
// A hybrid KV cache (model/kv_cache.h) keeps the sliding layers' KV in other blocks than the
// full layers': the window_ arrays say where, in the same shapes (entries of blocks that left
// every query's window name an all-zero block; core/block_manager.h).
#ifndef GE_MODEL_BATCH_H
#define GE_MODEL_BATCH_H

#include <stdint.h>

typedef struct {
  int num_seqs;
  int num_tokens;               // sum of every sequence's new tokens
  const uint32_t *token_ids;    // [num_tokens]
  const int32_t *positions;     // [num_tokens] absolute 0-based position of each token
  const int64_t *slot_mapping;  // [num_tokens] KV slot of each token: block * block_size + offset
  const int32_t *query_start;   // [num_seqs + 1] sequence s owns tokens query_start[s] .. [s+1]
  const int32_t *seq_lens;      // [num_seqs] tokens in the KV after this call (cached + new)
  const int32_t *block_tables;  // [num_seqs, max_blocks_per_seq] block ids, row s for sequence s
  int max_blocks_per_seq;
  const int64_t *window_slot_mapping;  // [num_tokens] hybrid: the sliding layers' slots; else NULL
  const int32_t *window_block_tables;  // [num_seqs, max_blocks_per_seq] hybrid: theirs; else NULL
  const int32_t *logits_indices;       // [num_logits] token indices (into 0..num_tokens) to unembed
  int num_logits;
} Batch;

#endif
