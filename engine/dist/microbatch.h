// microbatch.h: a Batch cut at sequence boundaries into a few micro-batches of near-equal token
// counts, for the pipeline-parallel schedule (runner.h): each part is a Batch of its own (token
// indices, query starts and logits indices rebased to it) and knows which rows of the whole
// batch's logits are its.
#ifndef GE_DIST_MICROBATCH_H
#define GE_DIST_MICROBATCH_H

#include <stdint.h>

#include "model/batch.h"

#define MICROBATCH_MAX_PARTS 16

typedef struct {
  int num_parts;
  Batch parts[MICROBATCH_MAX_PARTS];
  int first_logit[MICROBATCH_MAX_PARTS];  // part p's logits are rows first_logit[p] .. + its count
  // storage the parts point into
  int32_t *query_start;     // [num_seqs + num_parts]
  int32_t *logits_indices;  // [num_logits]
  int seqs_cap, logits_cap;
} MicroBatches;

void microbatches_init(MicroBatches *mb);
void microbatches_free(MicroBatches *mb);

// Cuts b into min(max_parts, b->num_seqs) parts (max_parts <= MICROBATCH_MAX_PARTS), each a run
// of whole sequences, ending where the tokens so far first reach the part's share of the total.
// b's logits indices must ascend (each sequence's logits follow the previous one's). With
// max_parts 1 the one part is b itself (its arrays, not copies), valid while b is.
void microbatches_split(MicroBatches *mb, const Batch *b, int max_parts);

#endif
