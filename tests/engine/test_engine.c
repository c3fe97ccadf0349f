// test_engine.c: the serving engine end to end in one process (no HTTP): many requests at once
// through the scheduler, the batch builder, the forward pass and the sampler give exactly the
// greedy outputs of one-at-a-time generation, in sync and async mode, with a KV cache small
// enough to force preemptions, on one rank and on tp 2 x pp 2 ranks, with prefix caching off and
// on (the prompts share a prefix, so cached blocks are hit); aborts and refusals; logit_bias,
// stop_token_ids, min_tokens and raw logprobs through the engine in both modes; requests with a
// temperature (some with top-k or top-p) give the same tokens sampled by the backend's sample op
// and on the host. The engine's KV cache is hybrid (the sliding layers keep only their window's
// blocks) unless a test says otherwise; the plain one gives the same outputs and, at equal
// bytes, preempts more.
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
#include "replay_graphs.h"

#define NUM_REQUESTS 24
#define MAX_TOKENS 12

typedef struct {
  Runner *single;    // one rank
  Runner *parallel;  // tp 2 x pp 2
} Fixture;

// gpt-oss-tiny on tp x pp CPU ranks, calls of up to 256 tokens and max_num_logits logits rows
// (0: as many as tokens).
static Runner *runner_with(int tp, int pp, int max_num_logits) {
  char err[1024];
  RunnerOptions o = {.model = "tests/fixtures/gptoss-tiny/a",
                     .weights = {.load_format = LOAD_SAFETENSORS,
                                 .expert_format = WEIGHT_F32,
                                 .dense_format = WEIGHT_F32},
                     .tensor_parallel = tp,
                     .pipeline_parallel = pp,
                     .device = DEVICE_CPU,
                     .max_num_tokens = 256,
                     .max_num_logits = max_num_logits};
  Runner *r;
  if (!runner_create(&r, &o, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return NULL;
  }
  return r;
}

static Runner *runner_of(int tp, int pp) { return runner_with(tp, pp, 0); }

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
  GenerateRequest r = {.prompt_ids = ids,
                       .num_prompt_ids = prompt_of(i, ids),
                       .max_tokens = MAX_TOKENS,
                       .sampling = {.temperature = 0, .top_p = 1},
                       .ignore_eos = true};
  GenerateResult result;
  char err[256];
  assert_true(generate_run(runner, &r, &result, err, sizeof err));
  *out = result.output_ids;
}

// Submits request i (prompt_of(i), sampling[i], seed 1000 + i) for every i to an engine not yet
// started, starts it (so every run schedules the same steps, whatever the machine's timing) and
// collects request i's tokens into outputs[i] until every request has finished, each by length.
static void run_requests(Engine *e, const SamplingParams *sampling, TokenIds *outputs) {
  char err[256];
  uint64_t ids[NUM_REQUESTS];
  for (int i = 0; i < NUM_REQUESTS; i++) {
    uint32_t prompt[256];
    EngineRequestParams p = {.prompt_ids = prompt,
                             .num_prompt_ids = prompt_of(i, prompt),
                             .max_tokens = MAX_TOKENS,
                             .sampling = sampling[i],
                             .seed = 1000 + (uint64_t)i,
                             .ignore_eos = true};
    ids[i] = engine_submit(e, &p, err, sizeof err);
    assert_true(ids[i] > 0);
  }
  engine_start(e);
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
}

// Serves every request at once on runner under cfg; each output equals one-at-a-time generation
// on it. With graphs, decode steps that fit run by the runner's graphs (dist/runner.h; the
// runner has graph ops: replay_graphs.h), prepared before the engine and recorded after it.
// Returns the engine's final stats; steps (NULL: not asked) gets the runner's step counts of the
// engine's run (runner_step_counts: steps, of them by a graph).
static EngineStats serve_all_config(Runner *runner, const EngineConfig *cfg, bool graphs,
                                    long long steps[2]) {
  long long before[2];
  runner_step_counts(runner, &before[0], &before[1]);
  Engine *e;
  char err[256];
  const int max_blocks = (cfg->max_model_len + cfg->block_size - 1) / cfg->block_size;
  if (graphs)
    assert_true(runner_prepare_graphs(runner, 2 * cfg->max_num_seqs, max_blocks,
                                      engine_hybrid_kv(cfg, runner_config(runner)), err,
                                      sizeof err));
  assert_true(engine_create(&e, cfg, runner, err, sizeof err));
  if (graphs) assert_true(runner_capture_graphs(runner, err, sizeof err));
  SamplingParams greedy[NUM_REQUESTS];
  for (int i = 0; i < NUM_REQUESTS; i++) greedy[i] = (SamplingParams){.temperature = 0, .top_p = 1};
  TokenIds outputs[NUM_REQUESTS] = {0};
  run_requests(e, greedy, outputs);
  if (steps) {
    runner_step_counts(runner, &steps[0], &steps[1]);
    steps[0] -= before[0], steps[1] -= before[1];
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

static EngineStats serve_all_kv(Runner *runner, bool async, int num_kv_blocks, bool caching,
                                bool hybrid) {
  const EngineConfig cfg = {.max_num_batched_tokens = 64,
                            .max_num_seqs = 8,
                            .max_model_len = 256,
                            .block_size = 16,
                            .num_kv_blocks = num_kv_blocks,
                            .async_scheduling = async,
                            .enable_prefix_caching = caching,
                            .disable_hybrid_kv_cache = !hybrid};
  return serve_all_config(runner, &cfg, false, NULL);
}

// The engine's default KV cache: hybrid (fixture a has sliding and full layers).
static EngineStats serve_all_caching(Runner *runner, bool async, int num_kv_blocks, bool caching) {
  return serve_all_kv(runner, async, num_kv_blocks, caching, true);
}

static void serve_all(Runner *runner, bool async, int num_kv_blocks, uint64_t *num_preemptions) {
  EngineStats stats = serve_all_caching(runner, async, num_kv_blocks, false);
  assert_int_equal(stats.prefix_cache_queries, 0);
  *num_preemptions = stats.num_preemptions;
}

// Requests with a temperature (each its own seed) served on runner with the backend's sample op
// or, with host_sampling, every row sampled on the host: outputs[i] gets request i's tokens.
static void serve_drawn(Runner *runner, bool async, bool host_sampling, TokenIds *outputs) {
  EngineConfig cfg = {.max_num_batched_tokens = 64,
                      .max_num_seqs = 8,
                      .max_model_len = 256,
                      .block_size = 16,
                      .num_kv_blocks = 256,
                      .async_scheduling = async,
                      .host_sampling = host_sampling};
  Engine *e;
  char err[256];
  assert_true(engine_create(&e, &cfg, runner, err, sizeof err));
  SamplingParams drawn[NUM_REQUESTS];
  for (int i = 0; i < NUM_REQUESTS; i++)  // a third with top-p 0.8, a third with top-k 20
    drawn[i] = (SamplingParams){.temperature = 0.5f + 0.1f * (float)(i % 8),
                                .top_p = i % 3 == 1 ? 0.8f : 1,
                                .top_k = i % 3 == 2 ? 20 : 0};
  run_requests(e, drawn, outputs);
  engine_stop(e);
  engine_destroy(e);
}

// The same tokens either way (both pick through common/pick.h), in sync and async mode, on one
// rank and on tp 2 x pp 2 (sampled on the last stage's tensor rank 0), and the draws mattered
// (some output differs from the greedy one).
static void test_backend_sampling_equals_host(void **state) {
  Fixture *f = *state;
  for (int run = 0; run < 4; run++) {
    const bool async = run % 2;
    Runner *runner = run < 2 ? f->single : f->parallel;
    TokenIds device[NUM_REQUESTS] = {0}, host[NUM_REQUESTS] = {0};
    serve_drawn(runner, async, false, device);
    serve_drawn(runner, async, true, host);
    bool any_differs_from_greedy = false;
    for (int i = 0; i < NUM_REQUESTS; i++) {
      assert_int_equal(device[i].len, MAX_TOKENS);
      assert_int_equal(device[i].len, host[i].len);
      assert_memory_equal(device[i].data, host[i].data, host[i].len * sizeof *host[i].data);
      TokenIds greedy;
      reference_output(f->single, i, &greedy);
      any_differs_from_greedy |=
          memcmp(greedy.data, host[i].data, greedy.len * sizeof *greedy.data) != 0;
      token_ids_free(&greedy);
      token_ids_free(&device[i]);
      token_ids_free(&host[i]);
    }
    assert_true(any_differs_from_greedy);  // the draws mattered
  }
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

// The plain KV cache gives the same outputs as the hybrid one (the tests above), sync and async,
// with prefix caching off and on, under preemption, on one rank and on tp 2 x pp 2; and at equal
// bytes (a hybrid block holds 2 of fixture a's 4 layers, so 48 hybrid blocks take the memory of
// 24 plain ones) the hybrid cache preempts less: its sliding layers keep 8 positions, not 178.
static void test_plain_and_hybrid_kv_cache(void **state) {
  Fixture *f = *state;
  Runner *runners[] = {f->single, f->parallel};
  for (int k = 0; k < 2; k++)
    for (int mode = 0; mode < 4; mode++) {
      const bool async = mode & 1, caching = mode >> 1;
      EngineStats plain = serve_all_kv(runners[k], async, 24, caching, false);
      EngineStats hybrid = serve_all_kv(runners[k], async, 48, caching, true);
      assert_int_equal(plain.num_kv_blocks, 24);
      assert_int_equal(hybrid.num_kv_blocks, 47);  // block 0 is the null block
      assert_true(plain.num_preemptions > 0);
      assert_true(hybrid.num_preemptions < plain.num_preemptions);
    }
}

// Decode steps run by the runner's CUDA-graph path (on the CPU through replay_graphs.h, which
// stands in for the recording): the same outputs, sync and async, hybrid and plain cache, one
// rank and two tensor-parallel ranks (each records and launches its own graphs, collectives
// in them), with up to 20 sequences a step and as many logits rows (graphs of 1, 2, 4, 8, 16
// and 20, the last cut from 24 to the rows a step may have: most steps are padded); the engine's
// own decode steps fit (every step once the prompts are in ran by a graph). Pipeline stages
// record none.
static void test_decode_graphs_keep_outputs(void **state) {
  Fixture *f = *state;
  char err[256];
  assert_false(runner_prepare_graphs(f->parallel, 8, 16, true, err, sizeof err));
  assert_non_null(strstr(err, "-pp 1"));
  for (int tp = 1; tp <= 2; tp++)
    for (int mode = 0; mode < 4; mode++) {
      Runner *runner = runner_with(tp, 1, 20);
      assert_non_null(runner);
      replay_graphs_install(runner);
      const EngineConfig cfg = {.max_num_batched_tokens = 64,
                                .max_num_seqs = 20,
                                .max_model_len = 256,
                                .block_size = 16,
                                .num_kv_blocks = 256,
                                .async_scheduling = mode & 1,
                                .disable_hybrid_kv_cache = mode >> 1};
      long long steps[2];
      serve_all_config(runner, &cfg, true, steps);
      assert_int_equal(runner->num_sizes, 6);  // the sizes recorded (dropped with the cache)
      assert_int_equal(runner->graph_sizes[4], 16);
      assert_int_equal(runner->graph_sizes[5], 20);
      print_message("# -tp %d, %s, %s cache: %lld of %lld steps by a graph\n", tp,
                    mode & 1 ? "async" : "sync", mode >> 1 ? "plain" : "hybrid", steps[1],
                    steps[0]);
      for (int rank = 0; rank < tp; rank++) assert_int_equal(g_replay[rank].num_launches, steps[1]);
      // every step once no prompt is left (each sequence then adds one token a step)
      assert_true(steps[1] >= MAX_TOKENS - 2);
      runner_free(runner);
    }
}

static void test_abort_and_refusals(void **state) {
  Fixture *f = *state;
  // 3 blocks of 16 (a plain cache): a request needing more than 48 tokens of KV can never run.
  EngineConfig cfg = {.max_num_batched_tokens = 64,
                      .max_num_seqs = 4,
                      .max_model_len = 64,
                      .block_size = 16,
                      .num_kv_blocks = 3,
                      .disable_hybrid_kv_cache = true};
  Engine *e;
  char err[256];
  assert_true(engine_create(&e, &cfg, f->single, err, sizeof err));
  engine_start(e);
  uint32_t prompt[100] = {1, 2, 3, 4};
  EngineRequestParams p = {.prompt_ids = prompt,
                           .num_prompt_ids = 4,
                           .max_tokens = 61,
                           .sampling = {.temperature = 0, .top_p = 1},
                           .ignore_eos = true};
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

// One request through e to its end: its output ids, its last event, and its first event.
static void run_one(Engine *e, const EngineRequestParams *p, TokenIds *out, TokenEvent *first,
                    TokenEvent *last) {
  char err[256];
  uint64_t id = engine_submit(e, p, err, sizeof err);
  if (!id) fail_msg("%s", err);
  for (bool seen = false;;) {
    TokenEvent ev;
    assert_int_equal(engine_poll_events(e, &ev, 1, 5000000000), 1);
    assert_int_equal(ev.request_id, id);
    if (!seen) *first = ev;
    seen = true;
    if (ev.has_token) token_ids_push(out, ev.token_id);
    if (ev.finish != FINISH_NONE) {
      *last = ev;
      return;
    }
  }
}

// A +100 bias makes greedy pick its id every time; that id as a stop_token_id ends the request
// at once (FINISH_STOP, the id its last token) even with ignore_eos, unless min_tokens masks it
// for the first 3 tokens. Logprobs are the raw logits': the sampled id's equals the top entry
// without a bias, and stays far below 0 when only the bias made it win.
static void sampling_fields(Runner *runner, bool async) {
  EngineConfig cfg = {.max_num_batched_tokens = 64,
                      .max_num_seqs = 4,
                      .max_model_len = 256,
                      .block_size = 16,
                      .num_kv_blocks = 64,
                      .async_scheduling = async};
  Engine *e;
  char err[256];
  assert_true(engine_create(&e, &cfg, runner, err, sizeof err));
  engine_start(e);
  uint32_t prompt[] = {11, 22, 33, 44, 55};
  SamplerBias bias = {.token_id = 42, .bias = 100};
  uint32_t stop = 42;
  EngineRequestParams p = {.prompt_ids = prompt,
                           .num_prompt_ids = 5,
                           .max_tokens = 6,
                           .sampling = {.temperature = 0, .top_p = 1},
                           .ignore_eos = true,
                           .logit_bias = &bias,
                           .num_logit_bias = 1};
  TokenIds out = {0};
  TokenEvent first, last;
  run_one(e, &p, &out, &first, &last);
  assert_int_equal(out.len, 6);
  for (size_t i = 0; i < out.len; i++) assert_int_equal(out.data[i], 42);
  assert_int_equal(last.finish, FINISH_LENGTH);

  p.stop_token_ids = &stop;
  p.num_stop_token_ids = 1;
  out.len = 0;
  run_one(e, &p, &out, &first, &last);
  assert_int_equal(out.len, 1);
  assert_int_equal(last.finish, FINISH_STOP);
  assert_int_equal(last.token_id, 42);
  assert_int_equal(last.num_output_tokens, 1);

  p.sampling.min_tokens = 3;  // 42 masked for 3 tokens, then the bias makes the 4th 42: stop
  out.len = 0;
  run_one(e, &p, &out, &first, &last);
  assert_int_equal(out.len, 4);
  for (int i = 0; i < 3; i++) assert_int_not_equal(out.data[i], 42);
  assert_int_equal(out.data[3], 42);
  assert_int_equal(last.finish, FINISH_STOP);

  EngineRequestParams lp = {.prompt_ids = prompt,
                            .num_prompt_ids = 5,
                            .max_tokens = 3,
                            .sampling = {.temperature = 0, .top_p = 1},
                            .ignore_eos = true,
                            .logprobs = true,
                            .num_top_logprobs = 5};
  out.len = 0;
  run_one(e, &lp, &out, &first, &last);
  assert_true(first.has_logprobs);
  assert_int_equal(first.logprobs.num_top, 5);
  assert_int_equal(first.logprobs.top_ids[0], out.data[0]);
  assert_float_equal(first.logprobs.logprob, first.logprobs.top_logprobs[0], 1e-6);
  for (int k = 0; k < 5; k++) {
    assert_true(first.logprobs.top_logprobs[k] <= 0);
    if (k) assert_true(first.logprobs.top_logprobs[k] <= first.logprobs.top_logprobs[k - 1]);
  }
  assert_true(last.has_logprobs);
  uint32_t unbiased_top = first.logprobs.top_ids[0];
  bias.token_id = unbiased_top == 42 ? 43 : 42;
  lp.logit_bias = &bias;
  lp.num_logit_bias = 1;
  out.len = 0;
  run_one(e, &lp, &out, &first, &last);
  assert_int_equal(out.data[0], bias.token_id);
  assert_int_equal(first.logprobs.top_ids[0], unbiased_top);  // raw: before the bias
  assert_true(first.logprobs.logprob < first.logprobs.top_logprobs[0]);

  SamplerBias outside = {.token_id = 5000, .bias = 1};
  p.logit_bias = &outside;
  assert_int_equal(engine_submit(e, &p, err, sizeof err), 0);
  assert_non_null(strstr(err, "logit_bias"));
  p.num_logit_bias = 0;
  p.sampling.min_tokens = 7;
  assert_int_equal(engine_submit(e, &p, err, sizeof err), 0);
  assert_non_null(strstr(err, "min_tokens"));
  token_ids_free(&out);
  engine_stop(e);
  engine_destroy(e);
}

static void test_sampling_fields(void **state) {
  Fixture *f = *state;
  sampling_fields(f->single, false);
  sampling_fields(f->single, true);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sync_outputs_equal_one_at_a_time),
      cmocka_unit_test(test_backend_sampling_equals_host),
      cmocka_unit_test(test_async_outputs_equal_one_at_a_time),
      cmocka_unit_test(test_preemption_keeps_outputs),
      cmocka_unit_test(test_parallel_outputs_equal_one_at_a_time),
      cmocka_unit_test(test_prefix_caching_keeps_outputs),
      cmocka_unit_test(test_plain_and_hybrid_kv_cache),
      cmocka_unit_test(test_decode_graphs_keep_outputs),
      cmocka_unit_test(test_abort_and_refusals),
      cmocka_unit_test(test_sampling_fields),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
