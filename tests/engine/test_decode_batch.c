// test_decode_batch.c: a decode step padded to a recorded graph's size (dist/decode_batch.h):
// the sizes graphs are recorded for, which batches fit, the padded arrays by hand, and the
// padding's meaning on the real forward pass (CPU backend, the gpt-oss-tiny fixture, a hybrid
// KV cache): the step's own rows get the logits they get unpadded, and the padding rows write
// no KV, even where a real sequence keeps the key that they read (block 0, slot 0).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "dist/decode_batch.h"
#include "model/forward.h"
#include "decode_calls.h"
#include "relative_error.h"

#define FIXTURE "tests/fixtures/gptoss-tiny/a"

static void test_graph_sizes(void **state) {
  (void)state;
  int sizes[600];
  assert_int_equal(decode_graph_sizes(1, sizes), 1);
  assert_int_equal(sizes[0], 1);
  assert_int_equal(decode_graph_sizes(7, sizes), 3);  // 1 2 4: a step of 5 to 7 runs op by op
  assert_int_equal(sizes[2], 4);
  const int want[] = {1, 2, 4, 8, 16};
  assert_int_equal(decode_graph_sizes(23, sizes), 5);
  assert_memory_equal(sizes, want, sizeof want);
  assert_int_equal(decode_graph_sizes(512, sizes), 3 + 64);  // vLLM's default list
  assert_int_equal(sizes[3], 8);
  assert_int_equal(sizes[66], 512);
}

// A decode step of three sequences (table rows of WIDTH blocks), window arrays when hybrid.
typedef struct {
  uint32_t ids[SEQS];
  int32_t positions[SEQS], query_start[SEQS + 1], seq_lens[SEQS], logits_indices[SEQS];
  int64_t slots[SEQS], window_slots[SEQS];
  int32_t tables[SEQS * WIDTH], window_tables[SEQS * WIDTH];
  Batch batch;
} Step;

static void step_init(Step *s, bool hybrid) {
  memset(s, 0, sizeof *s);
  for (int i = 0; i < SEQS; i++) {
    s->ids[i] = (uint32_t)(100 + i);
    s->positions[i] = 30 - 10 * i;  // sequence 2 has the shortest context
    s->query_start[i] = i;
    s->seq_lens[i] = 31 - 10 * i;
    s->logits_indices[i] = i;
    s->slots[i] = 7 + i;
    s->window_slots[i] = 70 + i;
    for (int j = 0; j < WIDTH; j++)
      s->tables[i * WIDTH + j] = 1 + i * WIDTH + j,
                            s->window_tables[i * WIDTH + j] = 50 + i * WIDTH + j;
  }
  s->query_start[SEQS] = SEQS;
  s->batch = (Batch){.num_seqs = SEQS,
                     .num_tokens = SEQS,
                     .token_ids = s->ids,
                     .positions = s->positions,
                     .slot_mapping = s->slots,
                     .query_start = s->query_start,
                     .seq_lens = s->seq_lens,
                     .block_tables = s->tables,
                     .max_blocks_per_seq = WIDTH,
                     .window_slot_mapping = hybrid ? s->window_slots : NULL,
                     .window_block_tables = hybrid ? s->window_tables : NULL,
                     .logits_indices = s->logits_indices,
                     .num_logits = SEQS};
}

static void test_which_batches_fit(void **state) {
  (void)state;
  DecodeBatch d;
  decode_batch_init(&d, 8, WIDTH, true);
  Step s;
  step_init(&s, true);
  assert_true(decode_batch_fits(&d, &s.batch));
  Batch b = s.batch;
  b.window_block_tables = NULL, b.window_slot_mapping = NULL;  // a plain cache's step
  assert_false(decode_batch_fits(&d, &b));
  b = s.batch;
  b.max_blocks_per_seq = WIDTH + 1;  // longer than the recordings' rows
  assert_false(decode_batch_fits(&d, &b));
  b = s.batch;
  int32_t two_tokens[SEQS + 1] = {0, 2, 3, 4};  // a prefill chunk of 2 in it
  b.query_start = two_tokens, b.num_tokens = 4;
  assert_false(decode_batch_fits(&d, &b));
  b = s.batch;
  b.num_logits = SEQS - 1;  // a sequence that does not sample
  assert_false(decode_batch_fits(&d, &b));
  b = s.batch;
  int32_t swapped[SEQS] = {1, 0, 2};
  b.logits_indices = swapped;
  assert_false(decode_batch_fits(&d, &b));
  decode_batch_free(&d);
  decode_batch_init(&d, 2, WIDTH, true);  // fewer sequences than the step
  assert_false(decode_batch_fits(&d, &s.batch));
  decode_batch_free(&d);
}

static void test_padded_arrays(void **state) {
  (void)state;
  DecodeBatch d;
  decode_batch_init(&d, 8, 2 * WIDTH, true);
  Step s;
  step_init(&s, true);
  // earlier contents must not leak into the padding
  memset(d.block_tables, 0x7f, 8 * 2 * WIDTH * sizeof *d.block_tables);
  const Batch *p = decode_batch_pad(&d, &s.batch, 5);
  assert_int_equal(p->num_seqs, 5);
  assert_int_equal(p->num_tokens, 5);
  assert_int_equal(p->num_logits, 5);
  assert_int_equal(p->max_blocks_per_seq, WIDTH);  // the step's rows, packed
  for (int i = 0; i < 5; i++) {
    const bool real = i < SEQS;
    const int like = real ? i : 2;  // padding repeats sequence 2, the shortest context
    assert_int_equal(p->token_ids[i], 100 + like);
    assert_int_equal(p->positions[i], 30 - 10 * like);
    assert_int_equal(p->seq_lens[i], 31 - 10 * like);
    assert_int_equal(p->slot_mapping[i], real ? 7 + i : -1);  // but writes no KV
    assert_int_equal(p->window_slot_mapping[i], real ? 70 + i : -1);
    assert_int_equal(p->query_start[i], i);
    assert_int_equal(p->logits_indices[i], i);
    for (int j = 0; j < WIDTH; j++) {
      assert_int_equal(p->block_tables[i * WIDTH + j], 1 + like * WIDTH + j);
      assert_int_equal(p->window_block_tables[i * WIDTH + j], 50 + like * WIDTH + j);
    }
  }
  assert_int_equal(p->query_start[5], 5);
  // a batch of padding only (what the graphs are recorded over)
  const Batch none = {0};
  p = decode_batch_pad(&d, &none, 8);
  assert_int_equal(p->num_seqs, 8);
  assert_int_equal(p->max_blocks_per_seq, 1);
  for (int i = 0; i < 8; i++) {
    assert_int_equal(p->slot_mapping[i], -1);
    assert_int_equal(p->block_tables[i], 0);
  }
  decode_batch_free(&d);
}

// ---------------------------------------------------------------------------------------------
// the padding on the forward pass

typedef struct {
  GptOssWeights weights;
  Backend *backend;
  Model model;
  KvCache kv;
} Tiny;

static void tiny_init(Tiny *t) {
  char err[1024];
  WeightsOptions wo = {
      .load_format = LOAD_SAFETENSORS, .expert_format = WEIGHT_F32, .dense_format = WEIGHT_F32};
  if (!weights_load(FIXTURE, &wo, &t->weights, err, sizeof err)) fail_msg("%s", err);
  t->backend = cpu_backend_create_portable(1);
  if (!model_init(&t->model, &t->weights, t->backend, NULL, 64, 0, err, sizeof err))
    fail_msg("%s", err);
  if (!kv_cache_init(&t->kv, t->backend, &t->weights.config, NULL, KV_F32, 16, BLOCK, true, err,
                     sizeof err))
    fail_msg("%s", err);
}

static void tiny_free(Tiny *t) {
  kv_cache_free(&t->kv);
  model_free(&t->model);
  t->backend->destroy(t->backend);
  weights_free(&t->weights);
}

static void test_padded_decode_equals_unpadded(void **state) {
  (void)state;
  Tiny plain, padded;
  tiny_init(&plain);
  tiny_init(&padded);
  const size_t vocab = (size_t)plain.weights.config.vocab_size;
  float *want = malloc(SEQS * vocab * sizeof *want), *got = malloc(8 * vocab * sizeof *got);
  DecodeBatch d;
  decode_batch_init(&d, 8, WIDTH, true);
  Call c;
  // The same prompts into both caches, then two decode steps: as they are, and padded to 8.
  const int zero[SEQS] = {0}, one[SEQS] = {1, 1, 1};
  model_forward(&plain.model, call_build(&c, zero, LENS), &plain.kv, want);
  model_forward(&padded.model, call_build(&c, zero, LENS), &padded.kv, got);
  for (int step = 0; step < 2; step++) {
    int first[SEQS];
    for (int s = 0; s < SEQS; s++) first[s] = LENS[s] + step;
    const Batch *b = call_build(&c, first, one);
    model_forward(&plain.model, b, &plain.kv, want);
    assert_true(decode_batch_fits(&d, b));
    model_forward(&padded.model, decode_batch_pad(&d, b, 8), &padded.kv, got);
    const double rel = relative_error(got, want, SEQS * vocab);  // the step's own rows
    print_message("# decode step %d: padded vs unpadded logits, relative error %g\n", step, rel);
    if (rel > 1e-5) fail_msg("decode step %d: relative error %g", step, rel);
  }
  // The caches agree (up to the products' rounding at other batch sizes, as the logits): no
  // padding row wrote, not even slot 0 of block 0, which holds sequence 0's first key and
  // value and is where the padding rows read.
  const size_t row = (size_t)plain.kv.num_kv_heads * plain.kv.head_dim;
  const size_t array = (size_t)plain.kv.num_blocks * BLOCK * row;
  for (int a = 0; a < plain.kv.num_arrays; a++) {
    const float *want_k = plain.kv.k_arrays[a], *want_v = plain.kv.v_arrays[a];
    const float *got_k = padded.kv.k_arrays[a], *got_v = padded.kv.v_arrays[a];
    const double errors[4] = {
        relative_error(got_k, want_k, array), relative_error(got_v, want_v, array),
        relative_error(got_k, want_k, row), relative_error(got_v, want_v, row)};
    for (int e = 0; e < 4; e++)
      if (errors[e] > 1e-5)
        fail_msg("KV array %d: %s %s differ by %g", a, e % 2 ? "values" : "keys",
                 e < 2 ? "anywhere" : "in slot 0", errors[e]);
  }
  decode_batch_free(&d);
  free(want), free(got);
  tiny_free(&plain);
  tiny_free(&padded);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_graph_sizes),
      cmocka_unit_test(test_which_batches_fit),
      cmocka_unit_test(test_padded_arrays),
      cmocka_unit_test(test_padded_decode_equals_unpadded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
