// test_engine.c: the serving engine end to end in one process (no HTTP): many requests at once
// through the scheduler, the batch builder, the forward pass and the sampler give exactly the
// greedy outputs of one-at-a-time generation, in sync and async mode, with a KV cache small
// enough to force preemptions; aborts and refusals.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "core/engine.h"
#include "core/generate.h"

#define NUM_REQUESTS 24
#define MAX_TOKENS 12

typedef struct {
  GptOssWeights weights;
  Backend *backend;
  Model model;
} Fixture;

static int setup(void **state) {
  Fixture *f = calloc(1, sizeof *f);
  char err[1024];
  WeightsOptions wo = {.load_format = LOAD_SAFETENSORS, .expert_format = WEIGHT_F32,
                       .dense_format = WEIGHT_F32};
  if (!weights_load("tests/fixtures/gptoss-tiny/a", &wo, &f->weights, err, sizeof err) ||
      !(f->backend = cpu_backend_create(0)) ||
      !model_init(&f->model, &f->weights, f->backend, 256, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  Fixture *f = *state;
  model_free(&f->model);
  f->backend->destroy(f->backend);
  weights_free(&f->weights);
  free(f);
  return 0;
}

// Prompt i: 5 + 7 * i tokens of a fixed pseudo-random sequence (ids < 1000).
static size_t prompt_of(int i, uint32_t *ids) {
  size_t n = 5 + 7 * (size_t)i;
  for (size_t k = 0; k < n; k++) ids[k] = (uint32_t)((k * 977 + (size_t)i * 131 + 17) % 1000);
  return n;
}

static void reference_output(Model *m, int i, TokenIds *out) {
  uint32_t ids[256];
  GenerateRequest r = {.prompt_ids = ids, .num_prompt_ids = prompt_of(i, ids),
                       .max_tokens = MAX_TOKENS, .sampling = {.temperature = 0, .top_p = 1},
                       .ignore_eos = true};
  GenerateResult result;
  char err[256];
  assert_true(generate_run(m, &r, &result, err, sizeof err));
  *out = result.output_ids;
}

static void serve_all(Fixture *f, bool async, int num_kv_blocks, uint64_t *num_preemptions) {
  EngineConfig cfg = {.max_num_batched_tokens = 64, .max_num_seqs = 8, .max_model_len = 256,
                      .block_size = 16, .num_kv_blocks = num_kv_blocks, .async_scheduling = async};
  Engine *e;
  char err[256];
  assert_true(engine_create(&e, &cfg, &f->model, err, sizeof err));
  engine_start(e);
  uint64_t ids[NUM_REQUESTS];
  for (int i = 0; i < NUM_REQUESTS; i++) {
    uint32_t prompt[256];
    EngineRequestParams p = {.prompt_ids = prompt, .num_prompt_ids = prompt_of(i, prompt),
                             .max_tokens = MAX_TOKENS, .sampling = {.temperature = 0, .top_p = 1},
                             .ignore_eos = true};
    ids[i] = engine_submit(e, &p, err, sizeof err);
    assert_true(ids[i] > 0);
  }
  TokenIds outputs[NUM_REQUESTS] = {0};
  int num_finished = 0;
  while (num_finished < NUM_REQUESTS) {
    TokenEvent events[64];
    size_t n = engine_poll_events(e, events, 64, 5000000000);
    assert_true(n > 0);  // no progress for 5 s: stuck
    for (size_t k = 0; k < n; k++) {
      int i = (int)(events[k].request_id - ids[0]);
      if (events[k].has_token) token_ids_push(&outputs[i], events[k].token_id);
      if (events[k].finish != FINISH_NONE) {
        assert_int_equal(events[k].finish, FINISH_LENGTH);
        assert_int_equal(events[k].num_output_tokens, MAX_TOKENS);
        num_finished++;
      }
    }
  }
  EngineStats stats;
  engine_stats(e, &stats);
  *num_preemptions = stats.num_preemptions;
  assert_int_equal(stats.num_running, 0);
  assert_int_equal(stats.num_kv_blocks_used, 0);
  engine_stop(e);
  engine_destroy(e);
  for (int i = 0; i < NUM_REQUESTS; i++) {
    TokenIds want;
    reference_output(&f->model, i, &want);
    assert_int_equal(outputs[i].len, want.len);
    assert_memory_equal(outputs[i].data, want.data, want.len * sizeof *want.data);
    token_ids_free(&want);
    token_ids_free(&outputs[i]);
  }
}

static void test_sync_outputs_equal_one_at_a_time(void **state) {
  uint64_t num_preemptions;
  serve_all(*state, false, 256, &num_preemptions);
  assert_int_equal(num_preemptions, 0);
}

static void test_async_outputs_equal_one_at_a_time(void **state) {
  uint64_t num_preemptions;
  serve_all(*state, true, 256, &num_preemptions);
}

static void test_preemption_keeps_outputs(void **state) {
  uint64_t sync_preemptions, async_preemptions;
  serve_all(*state, false, 24, &sync_preemptions);  // 24 blocks: not enough for 8 long requests
  serve_all(*state, true, 24, &async_preemptions);
  assert_true(sync_preemptions > 0);
  assert_true(async_preemptions > 0);
}

static void test_abort_and_refusals(void **state) {
  Fixture *f = *state;
  // 3 blocks of 16: a request needing more than 48 tokens of KV can never run.
  EngineConfig cfg = {.max_num_batched_tokens = 64, .max_num_seqs = 4, .max_model_len = 64,
                      .block_size = 16, .num_kv_blocks = 3};
  Engine *e;
  char err[256];
  assert_true(engine_create(&e, &cfg, &f->model, err, sizeof err));
  engine_start(e);
  uint32_t prompt[100] = {1, 2, 3, 4};
  EngineRequestParams p = {.prompt_ids = prompt, .num_prompt_ids = 4, .max_tokens = 61,
                           .sampling = {.temperature = 0, .top_p = 1}, .ignore_eos = true};
  assert_int_equal(engine_submit(e, &p, err, sizeof err), 0);  // 65 tokens > max_model_len 64
  assert_non_null(strstr(err, "64"));
  p.max_tokens = 50;
  assert_int_equal(engine_submit(e, &p, err, sizeof err), 0);  // 54 tokens > 48 in the cache
  p.max_tokens = 40;
  prompt[1] = 5000;  // outside fixture a's 1,024-token vocabulary
  assert_int_equal(engine_submit(e, &p, err, sizeof err), 0);
  assert_non_null(strstr(err, "5000"));
  prompt[1] = 2;
  p.num_prompt_ids = 0;
  assert_int_equal(engine_submit(e, &p, err, sizeof err), 0);
  p.num_prompt_ids = 4;
  uint64_t id = engine_submit(e, &p, err, sizeof err);
  assert_true(id > 0);
  engine_abort(e, id);
  bool aborted = false;
  while (!aborted) {
    TokenEvent ev;
    assert_int_equal(engine_poll_events(e, &ev, 1, 5000000000), 1);
    assert_int_equal(ev.request_id, id);
    if (ev.finish != FINISH_NONE) {
      assert_int_equal(ev.finish, FINISH_ABORT);
      aborted = true;
    }
  }
  EngineStats stats;
  engine_stats(e, &stats);
  assert_int_equal(stats.num_kv_blocks_used, 0);
  engine_stop(e);
  engine_destroy(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sync_outputs_equal_one_at_a_time),
      cmocka_unit_test(test_async_outputs_equal_one_at_a_time),
      cmocka_unit_test(test_preemption_keeps_outputs),
      cmocka_unit_test(test_abort_and_refusals),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
