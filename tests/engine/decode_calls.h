// decode_calls.h: forward calls over three sequences of the gpt-oss-tiny shapes, each with its
// own full and window blocks (sequence 0 holds block 0, where a decode step's padding rows read):
// their prompts, then decode steps. For tests of padded decode steps and their recorded graphs
// (test_decode_batch.c on the CPU, test_cuda_ops.c on a device). Static: include it once.
#ifndef GE_TESTS_DECODE_CALLS_H
#define GE_TESTS_DECODE_CALLS_H

#include <stdint.h>
#include <string.h>

#include "model/batch.h"

#define BLOCK 16
#define SEQS 3
#define WIDTH 4  // blocks a table row

// The three sequences: prompt lengths, full blocks (sequence 0 holds block 0, where padding
// reads) and window blocks.
static const int LENS[SEQS] = {20, 5, 33};
static const int32_t FULL[SEQS][WIDTH] = {{0, 1}, {2}, {3, 9, 10}};
static const int32_t WINDOW[SEQS][WIDTH] = {{4, 5}, {6}, {7, 11, 12}};

static uint32_t prompt_id(int s, int pos) { return (uint32_t)(1 + (s * 131 + pos * 17) % 1000); }

// One forward call: tokens [first[s], first[s] + n[s]) of every sequence s.
typedef struct {
  uint32_t ids[64];
  int32_t positions[64], query_start[SEQS + 1], seq_lens[SEQS], logits_indices[SEQS];
  int32_t tables[SEQS * WIDTH], window_tables[SEQS * WIDTH];
  int64_t slots[64], window_slots[64];
  Batch batch;
} Call;

static const Batch *call_build(Call *c, const int *first, const int *n) {
  memset(c, 0, sizeof *c);
  int tok = 0;
  for (int s = 0; s < SEQS; s++) {
    c->query_start[s] = tok;
    c->seq_lens[s] = first[s] + n[s];
    memcpy(c->tables + s * WIDTH, FULL[s], sizeof FULL[s]);
    memcpy(c->window_tables + s * WIDTH, WINDOW[s], sizeof WINDOW[s]);
    for (int pos = first[s]; pos < first[s] + n[s]; pos++, tok++) {
      c->ids[tok] = prompt_id(s, pos);
      c->positions[tok] = pos;
      c->slots[tok] = (int64_t)FULL[s][pos / BLOCK] * BLOCK + pos % BLOCK;
      c->window_slots[tok] = (int64_t)WINDOW[s][pos / BLOCK] * BLOCK + pos % BLOCK;
    }
    c->logits_indices[s] = tok - 1;  // each sequence's last token
  }
  c->query_start[SEQS] = tok;
  c->batch = (Batch){.num_seqs = SEQS,
                     .num_tokens = tok,
                     .token_ids = c->ids,
                     .positions = c->positions,
                     .slot_mapping = c->slots,
                     .query_start = c->query_start,
                     .seq_lens = c->seq_lens,
                     .block_tables = c->tables,
                     .max_blocks_per_seq = WIDTH,
                     .window_slot_mapping = c->window_slots,
                     .window_block_tables = c->window_tables,
                     .logits_indices = c->logits_indices,
                     .num_logits = SEQS};
  return &c->batch;
}

#endif
