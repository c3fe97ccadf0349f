// test_gate.c: the gate against the run folders and result files in tests/fixtures/sweep:
// higher- and lower-is-better verdicts, the --max-drop boundary, --per-gpu, the within-spread
// note with repeats, a missing pair (exit 2, named), a failed candidate engine, --relative-to
// (ratios to a reference engine of each run: a slower machine passes, a configuration that lost
// ground fails, a missing or failed reference is unusable), and run_data's errors naming file,
// line and column.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep/gate.h"
#include "sweep/run_data.h"

#define FIX "tests/fixtures/sweep/"

static char *output;

// Runs the gate on two fixtures (relative_to: NULL or the reference engine); output holds its
// table.
static GateResult gate_relative(const char *base, const char *cand, const char *metric,
                                double max_drop, bool per_gpu, const char *relative_to) {
  RunData b, c;
  char err[512];
  assert_true(run_data_load(&b, base, err, sizeof err));
  assert_true(run_data_load(&c, cand, err, sizeof err));
  const char *metrics[] = {metric};
  GateOptions o = {.metrics = metrics, .num_metrics = 1, .max_drop_pct = max_drop,
                   .per_gpu = per_gpu, .relative_to = relative_to};
  size_t len;
  free(output);
  FILE *f = open_memstream(&output, &len);
  GateResult r = gate_run(f, &b, &c, &o);
  fclose(f);
  run_data_free(&b);
  run_data_free(&c);
  return r;
}

static GateResult gate(const char *base, const char *cand, const char *metric, double max_drop,
                       bool per_gpu) {
  return gate_relative(base, cand, metric, max_drop, per_gpu, NULL);
}

static void test_higher_is_better_boundary(void **state) {
  (void)state;
  // vllm/sharegpt 1000 -> 950: exactly 5.0% lower passes at --max-drop 5, fails at 4.9.
  assert_int_equal(gate(FIX "run-a", FIX "cand-ok.json", "total_token_throughput", 5, false),
                   GATE_PASS);
  assert_non_null(strstr(output, "-5.0%"));
  assert_int_equal(gate(FIX "run-a", FIX "cand-ok.json", "total_token_throughput", 4.9, false),
                   GATE_REGRESSION);
  assert_non_null(strstr(output, "REGRESSION"));
  assert_non_null(strstr(output, "gate: FAIL: 1 regression"));
}

static void test_lower_is_better(void **state) {
  (void)state;
  // mean TPOT 10 -> 9 is an improvement; 10 -> 11 (+10%) a regression.
  assert_int_equal(gate(FIX "run-a", FIX "cand-ok.json", "mean_tpot_ms", 5, false), GATE_PASS);
  assert_non_null(strstr(output, "improved"));
  assert_int_equal(gate(FIX "run-a", FIX "cand-worse.json", "mean_tpot_ms", 5, false),
                   GATE_REGRESSION);
  assert_non_null(strstr(output, "+10.0%"));
  assert_int_equal(gate(FIX "run-a", FIX "cand-worse.json", "mean_tpot_ms", 10, false),
                   GATE_PASS);
}

static void test_per_gpu(void **state) {
  (void)state;
  // cand-worse runs vllm-async-tp2 on 4 GPUs for the same totals: -50% per GPU.
  assert_int_equal(gate(FIX "run-a", FIX "cand-worse.json", "total_token_throughput", 5, false),
                   GATE_PASS);
  assert_int_equal(gate(FIX "run-a", FIX "cand-worse.json", "total_token_throughput", 5, true),
                   GATE_REGRESSION);
  assert_non_null(strstr(output, "total_token_throughput/GPU"));
  assert_non_null(strstr(output, "-50.0%"));
}

static void test_within_spread(void **state) {
  (void)state;
  // Baseline repeats 900, 1100, 1000 (median 1000); 940 is a 6% drop inside that spread.
  assert_int_equal(gate(FIX "run-r3", FIX "cand-spread.json", "total_token_throughput", 5, false),
                   GATE_REGRESSION);
  assert_non_null(strstr(output, "REGRESSION (within the measured spread)"));
}

static void test_missing_pair(void **state) {
  (void)state;
  assert_int_equal(gate(FIX "run-a", FIX "cand-missing.json", "total_token_throughput", 5, false),
                   GATE_UNUSABLE);
  assert_non_null(strstr(output, "missing pairs: vllm-async-tp2/short"));
}

static void test_failed_candidate(void **state) {
  (void)state;
  // An engine that failed in the candidate is a regression, with its error.
  assert_int_equal(gate(FIX "run-a", FIX "cand-failed.json", "total_token_throughput", 5, false),
                   GATE_REGRESSION);
  assert_non_null(strstr(output, "REGRESSION: the engine failed: CUDA error: out of memory"));
  // A run against itself passes even at --max-drop 0; so does the reference file.
  assert_int_equal(gate(FIX "run-a", FIX "run-a", "total_token_throughput", 0, false), GATE_PASS);
  assert_int_equal(gate("results/reference/seed-h100.json", "results/reference/seed-h100.json",
                        "total_token_throughput", 0, false),
                   GATE_PASS);
}

static void test_relative_to(void **state) {
  (void)state;
  // cand-slower-machine: every vllm figure halved (a machine half as fast). vllm-async-tp2 over
  // vllm: sharegpt 2400/1000 = 2.4 -> 1200/500 = 2.4 (+0.0%); short 3000/2000 = 1.5 ->
  // 1200/1000 = 1.2 (-20.0%).
  assert_int_equal(gate(FIX "run-a", FIX "cand-slower-machine.json", "total_token_throughput",
                        45, false),
                   GATE_REGRESSION);  // absolute: -50%
  assert_int_equal(gate_relative(FIX "run-a", FIX "cand-slower-machine.json",
                                 "total_token_throughput", 20, false, "vllm"),
                   GATE_PASS);
  assert_non_null(strstr(output, "total_token_throughput / vllm"));
  assert_non_null(strstr(output, "2.400          2.400     +0.0%  ok"));
  assert_non_null(strstr(output, "1.500          1.200    -20.0%  ok"));
  assert_non_null(strstr(output, "(ratios to engine 'vllm' of the same run)"));
  assert_non_null(strstr(output, "candidate: " FIX "cand-slower-machine.json (cpu: a CPU half"));
  assert_null(strstr(output, "\nvllm "));  // the reference's own rows are not judged
  assert_int_equal(gate_relative(FIX "run-a", FIX "cand-slower-machine.json",
                                 "total_token_throughput", 19.9, false, "vllm"),
                   GATE_REGRESSION);
  assert_non_null(strstr(output, "-20.0%  REGRESSION"));
  // Lower is better, relative too: TPOT 12/10 = 1.2 -> 24/20 = 1.2; 15/20 = 0.75 -> 30/40.
  assert_int_equal(gate_relative(FIX "run-a", FIX "cand-slower-machine.json", "mean_tpot_ms", 0,
                                 false, "vllm"),
                   GATE_PASS);
  // Per GPU: async-tp2 has 2 GPUs on both sides, so the ratios halve alike: 1.2 -> 1.2.
  assert_int_equal(gate_relative(FIX "run-a", FIX "cand-slower-machine.json",
                                 "total_token_throughput", 20, true, "vllm"),
                   GATE_PASS);
  assert_non_null(strstr(output, "1.200          1.200     +0.0%"));
}

static void test_relative_to_unusable_reference(void **state) {
  (void)state;
  assert_int_equal(gate_relative(FIX "run-a", FIX "cand-ok.json", "total_token_throughput", 5,
                                 false, "nope"),
                   GATE_UNUSABLE);
  assert_non_null(strstr(output, "--relative-to nope: the baseline " FIX
                                 "run-a has no engine 'nope' (engines: vllm vllm-async-tp2 "
                                 "vllm-flashinfer)"));
  assert_int_equal(gate_relative(FIX "run-a", FIX "cand-ok.json", "total_token_throughput", 5,
                                 false, "vllm-flashinfer"),
                   GATE_UNUSABLE);
  assert_non_null(strstr(output, "the reference engine 'vllm-flashinfer' failed in the baseline: "
                                 "RuntimeError: no attention sinks"));
}

static void test_direction(void **state) {
  (void)state;
  assert_int_equal(gate_metric_direction("total_token_throughput"), 1);
  assert_int_equal(gate_metric_direction("request_goodput"), 1);
  assert_int_equal(gate_metric_direction("p99_ttft_ms"), -1);
  assert_int_equal(gate_metric_direction("duration"), -1);
  assert_int_equal(gate_metric_direction("model_id"), 0);
}

static void test_load_errors(void **state) {
  (void)state;
  RunData r;
  char err[512];
  assert_false(run_data_load(&r, FIX "bad-syntax.json", err, sizeof err));
  assert_non_null(strstr(err, FIX "bad-syntax.json:2:"));
  run_data_free(&r);
  assert_false(run_data_load(&r, FIX "no-such-run", err, sizeof err));
  assert_non_null(strstr(err, "no-such-run"));
  run_data_free(&r);
  assert_false(run_data_load(&r, FIX "run-a/vllm", err, sizeof err));
  assert_non_null(strstr(err, "run-a/vllm/manifest.json"));
  run_data_free(&r);
}

static void test_repeat_stats(void **state) {
  (void)state;
  RunData r;
  char err[512];
  assert_true(run_data_load(&r, FIX "run-r3", err, sizeof err));
  RunStat s = run_data_stat(run_data_pair(&r, 0, 0), "total_token_throughput");
  assert_int_equal(s.num_values, 3);
  assert_float_equal(s.median, 1000, 1e-9);
  assert_float_equal(s.min, 900, 1e-9);
  assert_float_equal(s.max, 1100, 1e-9);
  run_data_free(&r);
}

static int teardown(void **state) {
  (void)state;
  free(output);
  output = NULL;
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_higher_is_better_boundary),
      cmocka_unit_test(test_lower_is_better),
      cmocka_unit_test(test_per_gpu),
      cmocka_unit_test(test_within_spread),
      cmocka_unit_test(test_missing_pair),
      cmocka_unit_test(test_failed_candidate),
      cmocka_unit_test(test_relative_to),
      cmocka_unit_test(test_relative_to_unusable_reference),
      cmocka_unit_test(test_direction),
      cmocka_unit_test(test_load_errors),
      cmocka_unit_test(test_repeat_stats),
  };
  return cmocka_run_group_tests(tests, NULL, teardown);
}
