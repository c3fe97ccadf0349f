// test_engine.c: the serving engine end to end in one process (no HTTP): many requests at once
// through the scheduler, the batch builder, the forward pass and the sampler give exactly the
// greedy outputs of one-at-a-time generation, in sync and async mode, with a KV cache small
// enough to force preemptions, on one rank and on tp 2 x pp 2 ranks, with prefix caching off and
// on (the prompts share a prefix, so cached blocks are hit); aborts and refusals.
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
  Runner *single;    // one rank
  Runner *parallel;  // tp 2 x pp 2
} Fixture;

static Runner *runner_of(int tp, int pp) {
  char err[1024];
  RunnerOptions o = {.model = "tests/fixtures/gptoss-tiny/a",
                     .weights = {.load_format = LOAD_SAFETENSORS,
                                 .expert_format = WEIGHT_F32,
                                 .dense_format = WEIGHT_F32},
                     .tensor_parallel = tp,
                     .pipeline_parallel = pp,
                     .device = DEVICE_CPU,
                     .max_num_tokens = 256};
  Runner *r;
  if (!runner_create(&r, &o, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return NULL;
  }
  return r;
}

static int setup(void **state) {
  Fixture *f = calloc(1, sizeof *f);
  f->single = runner_of(1, 1);
  f->parallel = runner_of(2, 2);
  *state = f;
  return f->single && f->parallel ? 0 : -1;
}

static int teardown(void **state) {
  Fixture *f = *state;
  runner_free(f->single);
  runner_free(f->parallel);
  free(f);
  return 0;
}

// Prompt i: 5 + 7 * i tokens of a fixed pseudo-random sequence (ids < 1000); the first 40 are
// the same for every prompt (so the shorter prompts are prefixes of each other), then the
// sequence depends on i.
static size_t prompt_of(int i, uint32_t *ids) {
  size_t n = 5 + 7 * (size_t)i;
  for (size_t k = 0; k < n; k++)
    ids[k] = (uint32_t)((k * 977 + (k < 40 ? 0 : (size_t)i * 131) + 17) % 1000);
  return n;
}

static void reference_output(Runner *runner, int i, TokenIds *out) {
  uint32_t ids[256];
  GenerateRequest r = {.prompt_ids = ids, .num_prompt_ids = prompt_of(i, ids),
                       .max_tokens = MAX_TOKENS, .sampling = {.temperature = 0, .top_p = 1},
                       .ignore_eos = true};
  GenerateResult result;
  char err[256];
  assert_true(generate_run(runner, &r, &result, err, sizeof err));
  *out = result.output_ids;
}

// Serves every request at once on runner; each output equals one-at-a-time generation on it.
// Returns the engine's final stats.
static EngineStats serve_all_caching(Runner *runner, bool async, int num_kv_blocks,
                                     bool caching) {
  EngineConfig cfg = {.max_num_batched_tokens = 64, .max_num_seqs = 8, .max_model_len = 256,
                      .block_size = 16, .num_kv_blocks = num_kv_blocks, .async_scheduling = async,
                      .enable_prefix_caching = caching};
  Engine *e;
  char err[256];
  assert_true(engine_create(&e, &cfg, runner, err, sizeof err));
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
  assert_int_equal(stats.num_running, 0);
  assert_int_equal(stats.num_kv_blocks_used, 0);
  engine_stop(e);
  engine_destroy(e);
  for (int i = 0; i < NUM_REQUESTS; i++) {
    TokenIds want;
    reference_output(runner, i, &want);
    assert_int_equal(outputs[i].len, want.len);
    assert_memory_equal(outputs[i].data, want.data, want.len * sizeof *want.data);
    token_ids_free(&want);
    token_ids_free(&outputs[i]);
  }
  return stats;
}

static void serve_all(Runner *runner, bool async, int num_kv_blocks, uint64_t *num_preemptions) {
  EngineStats stats = serve_all_caching(runner, async, num_kv_blocks, false);
  assert_int_equal(stats.prefix_cache_queries, 0);
  *num_preemptions = stats.num_preemptions;
}

static void test_sync_outputs_equal_one_at_a_time(void **state) {
  Fixture *f = *state;
  uint64_t num_preemptions;
  serve_all(f->single, false, 256, &num_preemptions);
  assert_int_equal(num_preemptions, 0);
}

static void test_async_outputs_equal_one_at_a_time(void **state) {
  Fixture *f = *state;
  uint64_t num_preemptions;
  serve_all(f->single, true, 256, &num_preemptions);
}

static void test_preemption_keeps_outputs(void **state) {
  Fixture *f = *state;
  uint64_t sync_preemptions, async_preemptions;
  serve_all(f->single, false, 24, &sync_preemptions);  // 24 blocks: too few for 8 long requests
  serve_all(f->single, true, 24, &async_preemptions);
  assert_true(sync_preemptions > 0);
  assert_true(async_preemptions > 0);
}

// Tensor x pipeline parallel ranks: batches cut into micro-batches, partial sums all-reduced,
// with preemption, in sync and async mode.
static void test_parallel_outputs_equal_one_at_a_time(void **state) {
  Fixture *f = *state;
  uint64_t sync_preemptions, async_preemptions;
  serve_all(f->parallel, false, 24, &sync_preemptions);
  serve_all(f->parallel, true, 24, &async_preemptions);
  assert_true(sync_preemptions > 0);
  assert_true(async_preemptions > 0);
}

// Prefix caching on: the same outputs, on one rank and on tp 2 x pp 2, sync and async, with
// room to spare and under preemption; hits were found, in whole blocks, and every block is free
// at the end (serve_all_caching).
static void test_prefix_caching_keeps_outputs(void **state) {
  Fixture *f = *state;
  Runner *runners[] = {f->single, f->parallel};
  uint64_t sum_prompts = 0;
  for (int i = 0; i < NUM_REQUESTS; i++) sum_prompts += 5 + 7 * (uint64_t)i;
  for (int k = 0; k < 2; k++)
    for (int async = 0; async <= 1; async++) {
      int num_blocks = k == 0 && !async ? 256 : 24;
      EngineStats st = serve_all_caching(runners[k], async, num_blocks, true);
      assert_int_equal(st.prefix_cache_queries, sum_prompts);
      assert_true(st.prefix_cache_hits > 0);
      assert_int_equal(st.prefix_cache_hits % 16, 0);
      if (num_blocks == 24) assert_true(st.num_preemptions > 0);
    }
}

static void test_abort_and_refusals(void **state) {
  Fixture *f = *state;
  // 3 blocks of 16: a request needing more than 48 tokens of KV can never run.
  EngineConfig cfg = {.max_num_batched_tokens = 64, .max_num_seqs = 4, .max_model_len = 64,
                      .block_size = 16, .num_kv_blocks = 3};
  Engine *e;
  char err[256];
  assert_true(engine_create(&e, &cfg, f->single, err, sizeof err));
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
      cmocka_unit_test(test_parallel_outputs_equal_one_at_a_time),
      cmocka_unit_test(test_prefix_caching_keeps_outputs),
      cmocka_unit_test(test_abort_and_refusals),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
