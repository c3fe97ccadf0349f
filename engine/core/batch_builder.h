// batch_builder.h: turns a SchedOutput into the flat arrays of a model Batch (token ids,
// positions, slot mapping, query offsets, sequence lengths, block tables, logits indices) in
// buffers sized once and reused every step: no allocation per token or per step. Reads the
// scheduled requests; changes nothing in them or in the scheduler.
//
// Build right after sched_schedule, before the next sched_update (which may free the blocks of
// the requests it finishes). The Batch points into the builder: in async mode, where step N+1 is
// built while step N runs, the engine alternates two builders.
//
// Async input tokens: a decode scheduled before its input token is sampled (SchedEntry
// prev_sample_row >= 0) gets BATCH_PENDING_TOKEN in token_ids, and the builder records a patch
// (token index, row of the previous step's sampled ids). Once step N's sampled ids exist,
// batch_patch_tokens(builder of N+1, ids of N) writes them in before N+1 runs; a device backend
// can apply the same patch list as a gather from the sampled ids it already holds. The marker is
// outside every vocabulary, so an unpatched batch fails the embedding's id check.
#ifndef GE_CORE_BATCH_BUILDER_H
#define GE_CORE_BATCH_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine.h"
#include "core/scheduler.h"
#include "model/batch.h"

#define BATCH_PENDING_TOKEN UINT32_MAX

typedef struct {
  int block_size;
  uint32_t *token_ids;      // [max_num_batched_tokens]
  int32_t *positions;       // [max_num_batched_tokens]
  int64_t *slot_mapping;    // [max_num_batched_tokens]
  int32_t *query_start;     // [max_num_seqs + 1]
  int32_t *seq_lens;        // [max_num_seqs]
  int32_t *logits_indices;  // [max_num_seqs]
  int32_t *block_tables;    // [block_tables_capacity], used as [num_seqs, max_blocks_per_seq]
  size_t block_tables_capacity;
  bool hybrid_kv;                // the requests' tables have window ids: the window_ arrays too
  int64_t *window_slot_mapping;  // hybrid: [max_num_batched_tokens]
  int32_t *window_block_tables;  // hybrid: [block_tables_capacity], as block_tables
  int32_t *patch_token_index;    // [max_num_seqs] token whose id is the previous step's sample ...
  int32_t *patch_sample_row;     // [max_num_seqs] ... at this row of its sampled ids
  int num_patches;
  Batch batch;  // points into the arrays above
} BatchBuilder;

// hybrid_kv: the requests' block tables are a hybrid pool's (core/block_manager.h).
void batch_builder_init(BatchBuilder *b, const EngineConfig *config, bool hybrid_kv);
void batch_builder_free(BatchBuilder *b);

// The Batch of out (sequences in entry order, logits row k = the entry with sample_row k). Row s
// of block_tables (and window_block_tables) holds the blocks of sequence s's seq_lens[s] tokens;
// the rest of the row (up to max_blocks_per_seq, the longest sequence's block count) is
// unspecified.
const Batch *batch_build(BatchBuilder *b, const SchedOutput *out);

// Fills the pending input tokens from the previous step's sampled ids [its num_samples].
void batch_patch_tokens(BatchBuilder *b, const uint32_t *prev_sampled_ids);

#endif
