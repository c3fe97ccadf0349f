// microbatch.c: cutting a Batch into micro-batches at sequence boundaries (microbatch.h).
#include "dist/microbatch.h"

#include <stdlib.h>

#include "common/check.h"

void microbatches_init(MicroBatches *mb) { *mb = (MicroBatches){0}; }

void microbatches_free(MicroBatches *mb) {
  free(mb->query_start);
  free(mb->logits_indices);
  *mb = (MicroBatches){0};
}

static void reserve(MicroBatches *mb, int num_seqs, int num_logits) {
  if (num_seqs + MICROBATCH_MAX_PARTS > mb->seqs_cap) {
    mb->seqs_cap = 2 * (num_seqs + MICROBATCH_MAX_PARTS);
    mb->query_start = xrealloc(mb->query_start, (size_t)mb->seqs_cap * sizeof(int32_t));
  }
  if (num_logits > mb->logits_cap) {
    mb->logits_cap = 2 * num_logits;
    mb->logits_indices = xrealloc(mb->logits_indices, (size_t)mb->logits_cap * sizeof(int32_t));
  }
}

// Part [s0, s1) of b's sequences, its query starts written at qs and its logits indices at li
// (rebased to the part's first token); *logit is b's next logits row, advanced past the part's.
static Batch cut(const Batch *b, int s0, int s1, int32_t *qs, int32_t *li, int *logit) {
  const int t0 = b->query_start[s0], t1 = b->query_start[s1];
  for (int s = s0; s <= s1; s++) qs[s - s0] = b->query_start[s] - t0;
  int n = 0;
  for (; *logit < b->num_logits && b->logits_indices[*logit] < t1; (*logit)++, n++) {
    CHECK(b->logits_indices[*logit] >= t0);
    li[n] = b->logits_indices[*logit] - t0;
  }
  return (Batch){.num_seqs = s1 - s0,
                 .num_tokens = t1 - t0,
                 .token_ids = b->token_ids + t0,
                 .positions = b->positions + t0,
                 .slot_mapping = b->slot_mapping + t0,
                 .query_start = qs,
                 .seq_lens = b->seq_lens + s0,
                 .block_tables = b->block_tables + (size_t)s0 * (size_t)b->max_blocks_per_seq,
                 .max_blocks_per_seq = b->max_blocks_per_seq,
                 .window_slot_mapping = b->window_slot_mapping ? b->window_slot_mapping + t0 : NULL,
                 .window_block_tables =
                     b->window_block_tables
                         ? b->window_block_tables + (size_t)s0 * (size_t)b->max_blocks_per_seq
                         : NULL,
                 .logits_indices = li,
                 .num_logits = n};
}

void microbatches_split(MicroBatches *mb, const Batch *b, int max_parts) {
  CHECK(max_parts >= 1 && max_parts <= MICROBATCH_MAX_PARTS && b->num_seqs >= 1);
  if (max_parts == 1) {  // no pipeline: the batch as it is, nothing copied (every step's path)
    mb->num_parts = 1;
    mb->parts[0] = *b;
    mb->first_logit[0] = 0;
    return;
  }
  for (int i = 1; i < b->num_logits; i++) CHECK(b->logits_indices[i] > b->logits_indices[i - 1]);
  reserve(mb, b->num_seqs, b->num_logits);
  const int parts = max_parts < b->num_seqs ? max_parts : b->num_seqs;
  const int64_t total = b->num_tokens;
  mb->num_parts = 0;
  int s0 = 0, logit = 0;
  int32_t *qs = mb->query_start;
  for (int p = 0; p < parts; p++) {
    // Leave at least one sequence for each later part; end where the share is reached.
    const int last_end = b->num_seqs - (parts - 1 - p);
    int s1 = s0 + 1;
    while (s1 < last_end && (int64_t)b->query_start[s1] * parts < total * (p + 1)) s1++;
    if (p == parts - 1) s1 = b->num_seqs;
    mb->first_logit[p] = logit;
    mb->parts[p] = cut(b, s0, s1, qs, mb->logits_indices + logit, &logit);
    qs += s1 - s0 + 1;
    s0 = s1;
    mb->num_parts++;
  }
}
