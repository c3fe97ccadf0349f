// test_parallel.c: tensor and pipeline parallelism against one rank: the logits of tp 2, tp 4,
// pp 2 and tp 2 x pp 2 equal tp 1 within 1e-5 (relative to each row's largest logit) on both
// golden fixtures and on gpt-oss-tiny with dummy weights (its MXFP4 experts sliced by expert
// before decoding), in float32, over a prefill of three sequences of different lengths (cut into
// micro-batches under pp) and a decode step; and the refusals of sizes that do not divide the
// model; and that the warm-up step (dist/warm_up.h) leaves the runner as it found it. The fast
// formats (bf16, q8) round each linear layer's input rows (to bf16, to int8), a step that turns the
// last-bit differences of a partial sum's order into differences of one rounding step in some
// inputs: for them tp must stay within 2e-2, their own error bound against float32
// (test_fast_formats.c).
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
#include "dist/runner.h"
#include "dist/warm_up.h"

#define BLOCK 16
#define NUM_SEQS 3
#define MAX_BLOCKS 2

static const int PROMPT_LEN[NUM_SEQS] = {9, 17, 4};

// The arrays of one forward call over NUM_SEQS sequences; sequence s owns blocks 2s, 2s + 1.
typedef struct {
  uint32_t ids[64];
  int32_t positions[64], query_start[NUM_SEQS + 1], seq_lens[NUM_SEQS];
  int64_t slots[64];
  int32_t tables[NUM_SEQS * MAX_BLOCKS], logits_indices[64];
  Batch batch;
} Call;

// Tokens first .. first + count[s] - 1 of each sequence, logits for every token.
static void call_build(Call *c, const int *first, const int *count, uint32_t vocab) {
  int t = 0;
  for (int s = 0; s < NUM_SEQS; s++) {
    c->query_start[s] = t;
    c->tables[s * MAX_BLOCKS] = 2 * s;
    c->tables[s * MAX_BLOCKS + 1] = 2 * s + 1;
    for (int i = 0; i < count[s]; i++, t++) {
      const int pos = first[s] + i;
      c->ids[t] = (uint32_t)((pos * 131 + s * 977 + 7) % vocab);
      c->positions[t] = pos;
      c->slots[t] = (int64_t)c->tables[s * MAX_BLOCKS + pos / BLOCK] * BLOCK + pos % BLOCK;
      c->logits_indices[t] = t;
    }
    c->seq_lens[s] = first[s] + count[s];
  }
  c->query_start[NUM_SEQS] = t;
  c->batch = (Batch){.num_seqs = NUM_SEQS,
                     .num_tokens = t,
                     .token_ids = c->ids,
                     .positions = c->positions,
                     .slot_mapping = c->slots,
                     .query_start = c->query_start,
                     .seq_lens = c->seq_lens,
                     .block_tables = c->tables,
                     .max_blocks_per_seq = MAX_BLOCKS,
                     .logits_indices = c->logits_indices,
                     .num_logits = t};
}

// A runner and its KV cache; with warm_up, the warm-up step (dist/warm_up.h) runs first, for a
// configuration of max_num_seqs 5 and max_model_len 40 (so 64 tokens over 5 sequences of 13, 13,
// 13, 13 and 12 tokens, block tables 3 blocks wide).
static Runner *runner_of_warmed(const char *model, const char *format, int tp, int pp,
                                bool warm_up) {
  RunnerOptions o = {.model = model,
                     .weights = {.load_format = LOAD_AUTO, .seed = 7},
                     .tensor_parallel = tp,
                     .pipeline_parallel = pp,
                     .num_threads = 2,
                     .device = DEVICE_CPU,
                     .max_num_tokens = 64};
  assert_true(weights_formats_from_name(format, model, &o.weights));
  char err[512];
  Runner *r;
  if (!runner_create(&r, &o, err, sizeof err)) fail_msg("tp %d pp %d: %s", tp, pp, err);
  if (warm_up && !runner_warm_up(r, 5, 40, BLOCK, err, sizeof err)) fail_msg("warm-up: %s", err);
  assert_true(runner_kv_init(r, NUM_SEQS * MAX_BLOCKS, BLOCK, false, err, sizeof err));
  return r;
}

static Runner *runner_of(const char *model, const char *format, int tp, int pp) {
  return runner_of_warmed(model, format, tp, pp, false);
}

// The prefill's and then one decode step's logits: [prefill tokens + NUM_SEQS, vocab].
static float *run_two_steps(Runner *r, int *num_rows) {
  const int vocab = runner_config(r)->vocab_size;
  int zero[NUM_SEQS] = {0}, one[NUM_SEQS] = {1, 1, 1};
  Call prefill, decode;
  call_build(&prefill, zero, PROMPT_LEN, (uint32_t)vocab);
  call_build(&decode, PROMPT_LEN, one, (uint32_t)vocab);
  *num_rows = prefill.batch.num_tokens + decode.batch.num_tokens;
  float *logits = malloc((size_t)*num_rows * (size_t)vocab * sizeof *logits);
  runner_forward(r, &prefill.batch, logits, NULL, NULL, NULL);
  runner_forward(r, &decode.batch, logits + (size_t)prefill.batch.num_tokens * vocab, NULL, NULL,
                 NULL);
  return logits;
}

static void check_model(const char *model, const char *format, double bound) {
  static const int SPLITS[][2] = {{2, 1}, {4, 1}, {1, 2}, {2, 2}};
  Runner *single = runner_of(model, format, 1, 1);
  int rows;
  float *want = run_two_steps(single, &rows);
  const int vocab = runner_config(single)->vocab_size;
  runner_free(single);
  for (size_t i = 0; i < sizeof SPLITS / sizeof *SPLITS; i++) {
    Runner *r = runner_of(model, format, SPLITS[i][0], SPLITS[i][1]);
    int got_rows;
    float *got = run_two_steps(r, &got_rows);
    assert_int_equal(got_rows, rows);
    double worst = 0;
    for (int row = 0; row < rows; row++) {
      const float *a = got + (size_t)row * vocab, *b = want + (size_t)row * vocab;
      double diff = 0, scale = 0;
      for (int v = 0; v < vocab; v++) {
        diff = fmax(diff, fabs((double)a[v] - b[v]));
        scale = fmax(scale, fabs((double)b[v]));
      }
      worst = fmax(worst, diff / scale);
    }
    printf("# %s (%s) tp %d pp %d: largest relative difference %.3g over %d rows\n", model, format,
           SPLITS[i][0], SPLITS[i][1], worst, rows);
    assert_true(worst <= bound);
    free(got);
    runner_free(r);
  }
  free(want);
}

static void test_fixture_a(void **state) {
  (void)state;
  check_model("tests/fixtures/gptoss-tiny/a", "f32", 1e-5);
}

static void test_fixture_b(void **state) {
  (void)state;
  check_model("tests/fixtures/gptoss-tiny/b", "f32", 1e-5);
}

static void test_tiny_dummy(void **state) {
  (void)state;
  check_model("gpt-oss-tiny", "f32", 1e-5);
}

static void test_tiny_dummy_fast_formats(void **state) {
  (void)state;
  check_model("gpt-oss-tiny", "bf16", 2e-2);
  check_model("gpt-oss-tiny", "q8", 2e-2);
}

// The warm-up step leaves nothing behind that a later step could see: after it, the same two
// steps give the same logits, bit for bit, on one rank and on tp 2 x pp 2 (micro-batches, the
// gathered logits, sampling where the logits lie).
static void test_warm_up_changes_nothing(void **state) {
  (void)state;
  static const int SPLITS[][2] = {{1, 1}, {2, 2}};
  for (size_t i = 0; i < sizeof SPLITS / sizeof *SPLITS; i++) {
    Runner *plain = runner_of("gpt-oss-tiny", "f32", SPLITS[i][0], SPLITS[i][1]);
    Runner *warmed = runner_of_warmed("gpt-oss-tiny", "f32", SPLITS[i][0], SPLITS[i][1], true);
    int rows, warmed_rows;
    float *want = run_two_steps(plain, &rows), *got = run_two_steps(warmed, &warmed_rows);
    assert_int_equal(warmed_rows, rows);
    const size_t n = (size_t)rows * (size_t)runner_config(plain)->vocab_size;
    assert_memory_equal(got, want, n * sizeof(float));
    printf("# tp %d pp %d: %d rows of logits identical after the warm-up step\n", SPLITS[i][0],
           SPLITS[i][1], rows);
    free(want), free(got);
    runner_free(plain), runner_free(warmed);
  }
}

static void refused(const char *model, int tp, int pp, const char *want) {
  RunnerOptions o = {.model = model,
                     .weights = {.load_format = LOAD_AUTO},
                     .tensor_parallel = tp,
                     .pipeline_parallel = pp,
                     .device = DEVICE_CPU,
                     .max_num_tokens = 16};
  assert_true(weights_formats_from_name("f32", model, &o.weights));
  char err[512] = "";
  Runner *r;
  assert_false(runner_create(&r, &o, err, sizeof err));
  if (!strstr(err, want)) fail_msg("tp %d pp %d: '%s' lacks '%s'", tp, pp, err, want);
}

// Fixture a: 8 query heads, 2 KV heads, 8 experts, vocabulary 1024, 4 layers.
static void test_sizes_that_do_not_divide(void **state) {
  (void)state;
  const char *a = "tests/fixtures/gptoss-tiny/a";
  refused(a, 3, 1, "-tp 3 does not divide the model's 8 query heads");
  refused(a, 3, 1, "1, 2, 4, 8");
  refused(a, 16, 1, "-tp 16 does not divide");
  refused(a, 1, 5, "-pp 5 is more stages than the model's 4 layers");
  refused(a, 0, 1, "-tp 0");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixture_a),
      cmocka_unit_test(test_fixture_b),
      cmocka_unit_test(test_tiny_dummy),
      cmocka_unit_test(test_tiny_dummy_fast_formats),
      cmocka_unit_test(test_sizes_that_do_not_divide),
      cmocka_unit_test(test_warm_up_changes_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
