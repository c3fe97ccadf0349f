// test_golden.c: the forward pass against the float64 reference's golden data
// (tests/fixtures/gptoss-tiny/{a,b}: logits at every prompt position, greedy ids), and the
// invariants the scheduler relies on: prefill in chunks plus cached decode equals one prefill,
// and a sequence's logits do not depend on what else shares its batch.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "common/npy.h"
#include "core/generate.h"
#include "model/forward.h"
#include "relative_error.h"

#define FIXTURES "tests/fixtures/gptoss-tiny/"
#define BLOCK 16

typedef struct {
  char path[256];  // the fixture's folder
  GptOssWeights weights;
  Backend *backend;
  Model model;
  TokenIds prompt;
  TokenIds greedy;
  float *golden_logits;  // [prompt.len, vocab]
} Golden;

static void read_ids(json_t *root, const char *key, TokenIds *out) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(root, key), i, v)
      token_ids_push(out, (uint32_t)json_integer_value(v));
}

static Golden *golden_load(const char *name) {
  Golden *g = calloc(1, sizeof *g);
  char path[256], err[1024];
  snprintf(path, sizeof path, FIXTURES "%s", name);
  snprintf(g->path, sizeof g->path, "%s", path);
  WeightsOptions wo = {
      .load_format = LOAD_SAFETENSORS, .expert_format = WEIGHT_F32, .dense_format = WEIGHT_F32};
  if (!weights_load(path, &wo, &g->weights, err, sizeof err)) fail_msg("%s", err);
  g->backend = cpu_backend_create(0);
  if (!model_init(&g->model, &g->weights, g->backend, NULL, 256, 0, err, sizeof err))
    fail_msg("%s", err);
  snprintf(path, sizeof path, FIXTURES "%s/golden.json", name);
  json_t *root = json_load_file(path, 0, NULL);
  assert_non_null(root);
  read_ids(root, "prompt_ids", &g->prompt);
  read_ids(root, "greedy_ids", &g->greedy);
  json_decref(root);
  snprintf(path, sizeof path, FIXTURES "%s/logits.npy", name);
  int64_t rows, cols;
  if (!npy_read_f32(path, &g->golden_logits, &rows, &cols, err, sizeof err)) fail_msg("%s", err);
  assert_int_equal(rows, (int64_t)g->prompt.len);
  assert_int_equal(cols, g->weights.config.vocab_size);
  return g;
}

static void golden_free(Golden *g) {
  model_free(&g->model);
  g->backend->destroy(g->backend);
  weights_free(&g->weights);
  token_ids_free(&g->prompt);
  token_ids_free(&g->greedy);
  free(g->golden_logits);
  free(g);
}

static void check_fixture(const char *name) {
  Golden *g = golden_load(name);
  size_t vocab = (size_t)g->weights.config.vocab_size, n = g->prompt.len;
  float *logits = malloc(n * vocab * sizeof *logits);
  GenerateRequest req = {.prompt_ids = g->prompt.data,
                         .num_prompt_ids = n,
                         .max_tokens = (int)g->greedy.len,
                         .sampling = {.temperature = 0, .top_p = 1},
                         .ignore_eos = true,
                         .prompt_logits = logits};
  GenerateResult result;
  char err[512];
  RunnerOptions o = {.model = g->path,
                     .weights = {.load_format = LOAD_SAFETENSORS,
                                 .expert_format = WEIGHT_F32,
                                 .dense_format = WEIGHT_F32},
                     .tensor_parallel = 1,
                     .pipeline_parallel = 1,
                     .device = DEVICE_CPU,
                     .max_num_tokens = 256};
  Runner *runner;
  if (!runner_create(&runner, &o, err, sizeof err)) fail_msg("%s", err);
  assert_true(generate_run(runner, &req, &result, err, sizeof err));
  runner_free(runner);
  double rel = relative_error(logits, g->golden_logits, n * vocab);
  printf("# %s: logits relative error %.3g over %zu positions\n", name, rel, n);
  assert_true(rel <= 1e-4);
  assert_int_equal(result.output_ids.len, g->greedy.len);
  assert_memory_equal(result.output_ids.data, g->greedy.data, g->greedy.len * sizeof(uint32_t));
  token_ids_free(&result.output_ids);
  free(logits);
  golden_free(g);
}

static void test_fixture_a_matches_the_reference(void **state) {
  (void)state;
  check_fixture("a");
}

static void test_fixture_b_matches_the_reference(void **state) {
  (void)state;
  check_fixture("b");
}

// ---------------------------------------------------------------------------------------------
// batches built by hand: several sequences, each with its own blocks

typedef struct {
  const uint32_t *ids;  // the sequence's tokens
  int first;            // tokens already in the KV
  int num;              // tokens in this call
  int32_t blocks[16];   // its block table
} SeqPart;

// Runs one forward call over parts and returns logits for every token of every part.
static void run_parts(Model *m, KvCache *kv, const SeqPart *parts, int num_parts, float *logits) {
  uint32_t ids[512];
  int32_t positions[512], query_start[17], seq_lens[16], logits_indices[512], tables[16 * 16];
  int64_t slots[512];
  int t = 0;
  for (int s = 0; s < num_parts; s++) {
    query_start[s] = t;
    seq_lens[s] = parts[s].first + parts[s].num;
    memcpy(&tables[s * 16], parts[s].blocks, sizeof parts[s].blocks);
    for (int i = 0; i < parts[s].num; i++, t++) {
      int pos = parts[s].first + i;
      ids[t] = parts[s].ids[pos];
      positions[t] = pos;
      slots[t] = (int64_t)parts[s].blocks[pos / BLOCK] * BLOCK + pos % BLOCK;
      logits_indices[t] = t;
    }
  }
  query_start[num_parts] = t;
  Batch b = {.num_seqs = num_parts,
             .num_tokens = t,
             .token_ids = ids,
             .positions = positions,
             .slot_mapping = slots,
             .query_start = query_start,
             .seq_lens = seq_lens,
             .block_tables = tables,
             .max_blocks_per_seq = 16,
             .logits_indices = logits_indices,
             .num_logits = t};
  model_forward(m, &b, kv, logits);
}

static void test_chunked_prefill_and_decode_equal_one_prefill(void **state) {
  (void)state;
  Golden *g = golden_load("b");
  size_t vocab = (size_t)g->weights.config.vocab_size;
  int n = (int)g->prompt.len;
  char err[256];
  KvCache kv;
  assert_true(kv_cache_init(&kv, g->backend, &g->weights.config, NULL, KV_F32, 16, BLOCK, false,
                            err, sizeof err));
  float *whole = malloc((size_t)n * vocab * sizeof *whole);
  float *pieces = malloc((size_t)n * vocab * sizeof *pieces);
  SeqPart part = {.ids = g->prompt.data, .first = 0, .num = n, .blocks = {0, 1, 2, 3}};
  run_parts(&g->model, &kv, &part, 1, whole);
  int chunk_sizes[] = {1, 7, n};
  for (int c = 0; c < 3; c++) {
    // a fresh set of blocks, out of order, so the paging is exercised too
    SeqPart p = {.ids = g->prompt.data, .blocks = {9, 4, 12, 6}};
    for (p.first = 0; p.first < n; p.first += p.num) {
      int prefill_left = n - 3 - p.first;  // the last three tokens go as decode steps
      p.num =
          prefill_left <= 0 ? 1 : (chunk_sizes[c] < prefill_left ? chunk_sizes[c] : prefill_left);
      run_parts(&g->model, &kv, &p, 1, pieces + (size_t)p.first * vocab);
    }
    double rel = relative_error(pieces, whole, (size_t)n * vocab);
    if (rel > 1e-5) fail_msg("chunks of %d: relative error %g", chunk_sizes[c], rel);
  }
  free(whole);
  free(pieces);
  kv_cache_free(&kv);
  golden_free(g);
}

static void test_batch_neighbours_do_not_change_a_sequence(void **state) {
  (void)state;
  Golden *g = golden_load("a");
  size_t vocab = (size_t)g->weights.config.vocab_size;
  int n = (int)g->prompt.len;
  char err[256];
  KvCache kv;
  assert_true(kv_cache_init(&kv, g->backend, &g->weights.config, NULL, KV_F32, 16, BLOCK, false,
                            err, sizeof err));
  uint32_t other[40];
  for (int i = 0; i < 40; i++) other[i] = (uint32_t)((i * 131 + 7) % 1000);
  float *alone = malloc((size_t)n * vocab * sizeof *alone);
  float *shared = malloc((size_t)(n + 40) * vocab * sizeof *shared);
  SeqPart seq = {.ids = g->prompt.data, .first = 0, .num = n, .blocks = {0, 1}};
  run_parts(&g->model, &kv, &seq, 1, alone);
  SeqPart both[2] = {{.ids = other, .first = 0, .num = 40, .blocks = {5, 6, 7}},
                     {.ids = g->prompt.data, .first = 0, .num = n, .blocks = {2, 3}}};
  run_parts(&g->model, &kv, both, 2, shared);
  double rel = relative_error(shared + (size_t)40 * vocab, alone, (size_t)n * vocab);
  if (rel > 1e-5) fail_msg("relative error %g with a neighbour", rel);
  free(alone);
  free(shared);
  kv_cache_free(&kv);
  golden_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixture_a_matches_the_reference),
      cmocka_unit_test(test_fixture_b_matches_the_reference),
      cmocka_unit_test(test_chunked_prefill_and_decode_equal_one_prefill),
      cmocka_unit_test(test_batch_neighbours_do_not_change_a_sequence),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
