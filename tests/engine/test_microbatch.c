// test_microbatch.c: cutting a batch into pipeline micro-batches (dist/microbatch.c) against
// hand-worked cases: whole sequences per part, parts ending where the tokens first reach their
// share, every part keeping at least one sequence, token arrays and block tables offset, query
// starts and logits indices rebased, and each part's first logits row.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dist/microbatch.h"

// Five sequences of 1, 8, 2, 2 and 3 tokens (16 in all), two blocks each; logits for the last
// token of sequences 0, 1, 3 and 4 (sequence 2 is a prefill chunk that samples nothing).
enum { SEQS = 5, TOKENS = 16, BLOCKS = 2 };
static const int32_t QUERY_START[SEQS + 1] = {0, 1, 9, 11, 13, 16};
static const int32_t LOGITS[] = {0, 8, 12, 15};

typedef struct {
  uint32_t ids[TOKENS];
  int32_t positions[TOKENS], seq_lens[SEQS], tables[SEQS * BLOCKS], window_tables[SEQS * BLOCKS];
  int64_t slots[TOKENS], window_slots[TOKENS];
  Batch batch;
  MicroBatches mb;
} Fixture;

static int setup(void **state) {
  Fixture *f = test_calloc(1, sizeof *f);
  for (int t = 0; t < TOKENS; t++) f->ids[t] = 100 + (uint32_t)t, f->positions[t] = t;
  for (int t = 0; t < TOKENS; t++) f->slots[t] = t, f->window_slots[t] = 1000 + t;
  for (int s = 0; s < SEQS; s++) {
    f->seq_lens[s] = 10 + s;
    f->tables[s * BLOCKS] = 2 * s;
    f->tables[s * BLOCKS + 1] = 2 * s + 1;
    f->window_tables[s * BLOCKS] = 100 + s;  // a hybrid cache's window blocks
    f->window_tables[s * BLOCKS + 1] = 200 + s;
  }
  f->batch = (Batch){.num_seqs = SEQS,
                     .num_tokens = TOKENS,
                     .token_ids = f->ids,
                     .positions = f->positions,
                     .slot_mapping = f->slots,
                     .query_start = QUERY_START,
                     .seq_lens = f->seq_lens,
                     .block_tables = f->tables,
                     .max_blocks_per_seq = BLOCKS,
                     .window_slot_mapping = f->window_slots,
                     .window_block_tables = f->window_tables,
                     .logits_indices = LOGITS,
                     .num_logits = 4};
  microbatches_init(&f->mb);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  Fixture *f = *state;
  microbatches_free(&f->mb);
  test_free(f);
  return 0;
}

static void test_two_parts(void **state) {
  Fixture *f = *state;
  MicroBatches *mb = &f->mb;
  microbatches_split(mb, &f->batch, 2);
  assert_int_equal(mb->num_parts, 2);
  // Part 0 ends at the first boundary with at least 8 tokens: after sequence 1 (9 tokens).
  const Batch *p0 = &mb->parts[0], *p1 = &mb->parts[1];
  assert_int_equal(p0->num_seqs, 2);
  assert_int_equal(p0->num_tokens, 9);
  assert_int_equal(p0->query_start[2], 9);
  assert_int_equal(p0->num_logits, 2);
  assert_int_equal(p0->logits_indices[1], 8);
  assert_int_equal(mb->first_logit[0], 0);
  // Part 1: sequences 2-4, tokens 9-15, rebased.
  assert_int_equal(p1->num_seqs, 3);
  assert_int_equal(p1->num_tokens, 7);
  assert_int_equal(p1->token_ids[0], 109);
  assert_int_equal(p1->positions[0], 9);
  assert_int_equal(p1->query_start[0], 0);
  assert_int_equal(p1->query_start[1], 2);
  assert_int_equal(p1->query_start[3], 7);
  assert_int_equal(p1->seq_lens[0], 12);
  assert_int_equal(p1->block_tables[0], 4);
  assert_int_equal(p1->window_slot_mapping[0], 1009);
  assert_int_equal(p1->window_block_tables[0], 102);
  assert_int_equal(p1->window_block_tables[1], 202);
  assert_int_equal(p1->num_logits, 2);
  assert_int_equal(p1->logits_indices[0], 3);  // token 12
  assert_int_equal(p1->logits_indices[1], 6);  // token 15
  assert_int_equal(mb->first_logit[1], 2);
}

// More parts than sequences: one part per sequence. Four parts of five sequences: the long
// sequence 1 alone reaches the first two shares, yet each later part keeps a sequence.
static void test_parts_keep_a_sequence_each(void **state) {
  Fixture *f = *state;
  MicroBatches *mb = &f->mb;
  microbatches_split(mb, &f->batch, 8);
  assert_int_equal(mb->num_parts, SEQS);
  for (int p = 0; p < SEQS; p++) assert_int_equal(mb->parts[p].num_seqs, 1);
  assert_int_equal(mb->parts[2].num_logits, 0);
  assert_int_equal(mb->first_logit[3], 2);
  microbatches_split(mb, &f->batch, 4);
  assert_int_equal(mb->num_parts, 4);
  const int want_seqs[4] = {2, 1, 1, 1};  // shares of 4 tokens: ends after 9, 11, 13, 16
  int seqs = 0, tokens = 0;
  for (int p = 0; p < 4; p++) {
    assert_int_equal(mb->parts[p].num_seqs, want_seqs[p]);
    seqs += mb->parts[p].num_seqs;
    tokens += mb->parts[p].num_tokens;
  }
  assert_int_equal(seqs, SEQS);
  assert_int_equal(tokens, TOKENS);
}

// One part (no pipeline) is the batch itself: the same arrays, nothing rebased or copied.
static void test_one_part_is_the_batch(void **state) {
  Fixture *f = *state;
  microbatches_split(&f->mb, &f->batch, 1);
  assert_int_equal(f->mb.num_parts, 1);
  assert_ptr_equal(f->mb.parts[0].query_start, f->batch.query_start);
  assert_ptr_equal(f->mb.parts[0].logits_indices, f->batch.logits_indices);
  assert_int_equal(f->mb.parts[0].num_tokens, TOKENS);
  assert_int_equal(f->mb.first_logit[0], 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_two_parts, setup, teardown),
      cmocka_unit_test_setup_teardown(test_parts_keep_a_sequence_each, setup, teardown),
      cmocka_unit_test_setup_teardown(test_one_part_is_the_batch, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
