// test_gate.c: the gate against the run folders and result files in tests/fixtures/sweep:
// higher- and lower-is-better verdicts, the --max-drop boundary, --per-gpu, the median-only
// fallback with 1 sample on either side, a missing pair (exit 2, named), a failed candidate engine,
// --relative-to (ratios to a reference engine of each run: a slower machine passes, a
// configuration that lost ground fails, a missing or failed reference is unusable), and
// run_data (errors naming file, line and column; repeat numbers across a gap). Then the rank
// test's part on synthetic runs built in memory, with p-values computed by hand: a significant
// regression, a big median drop inside overlapping noise, an improvement, too few repeats to
// reach alpha, and --relative-to pairing repeat k with the reference's repeat k.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

#include "sweep/gate.h"
#include "sweep/run_data.h"

#define FIX "tests/fixtures/sweep/"

static char *output;

// The gate on b and c with o, its table into output; frees both runs.
static GateResult gate_and_free(RunData *b, RunData *c, const GateOptions *o) {
  size_t len;
  free(output);
  FILE *f = open_memstream(&output, &len);
  GateResult r = gate_run(f, b, c, o);
  fclose(f);
  run_data_free(b);
  run_data_free(c);
  return r;
}

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
                   .alpha = GATE_DEFAULT_ALPHA, .per_gpu = per_gpu, .relative_to = relative_to};
  return gate_and_free(&b, &c, &o);
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

static void test_one_sample_median_only(void **state) {
  (void)state;
  // Baseline repeats 900, 1100, 1000 (median 1000); one candidate value 940: the rank test
  // cannot decide on 1 sample, so the 6% median drop decides, and the row and a note say so.
  assert_int_equal(gate(FIX "run-r3", FIX "cand-spread.json", "total_token_throughput", 5, false),
                   GATE_REGRESSION);
  assert_non_null(strstr(output, "-6.0%     3:1       -  REGRESSION (median only: 1 sample in "
                                 "the candidate)"));
  assert_non_null(strstr(output, "gate: note: 1 of 1 comparison judged on medians only: a side "
                                 "with 1 sample"));
  // The other way round, as with a baseline file that holds one value per pair: 940 -> the
  // repeats' median 1000 is +6.4%, improved on the median alone, and the row says why.
  assert_int_equal(gate(FIX "cand-spread.json", FIX "run-r3", "total_token_throughput", 5, false),
                   GATE_PASS);
  assert_non_null(strstr(output, "+6.4%     1:3       -  improved (median only: 1 sample in "
                                 "the baseline)"));
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
  assert_non_null(strstr(output, "2.400          2.400     +0.0%     1:1       -  ok (median "
                                 "only: 1 sample each)"));
  assert_non_null(strstr(output, "1.500          1.200    -20.0%     1:1       -  ok"));
  assert_non_null(strstr(output, "(ratios to engine 'vllm' of the same run)"));
  assert_non_null(strstr(output, "candidate: " FIX "cand-slower-machine.json (cpu: a CPU half"));
  assert_null(strstr(output, "\nvllm "));  // the reference's own rows are not judged
  assert_int_equal(gate_relative(FIX "run-a", FIX "cand-slower-machine.json",
                                 "total_token_throughput", 19.9, false, "vllm"),
                   GATE_REGRESSION);
  assert_non_null(strstr(output, "-20.0%     1:1       -  REGRESSION (median only"));
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
  const RunPair *p = run_data_pair(&r, 0, 0);
  assert_int_equal(p->repeats[0], 1);
  assert_int_equal(p->repeats[2], 3);
  run_data_free(&r);
  // A result file's null item is a repeat without a result: the numbering holds after it, and
  // the export writes the gap back.
  assert_true(run_data_load(&r, FIX "run-gap.json", err, sizeof err));
  p = run_data_pair(&r, 0, 0);
  assert_int_equal(p->num_results, 2);
  assert_int_equal(p->repeats[0], 1);
  assert_int_equal(p->repeats[1], 3);
  json_t *exported = run_data_export(&r);
  json_t *list = json_object_get(json_object_get(exported, "results"), "vllm/sharegpt");
  assert_int_equal(json_array_size(list), 3);
  assert_true(json_is_null(json_array_get(list, 1)));
  json_decref(exported);
  run_data_free(&r);
}

// A run built in memory: engines "base" and "async" on workload "w", each pair with one
// total_token_throughput per repeat (NAN: that repeat has no result). run_data_free frees it.
#define SYNTH_MAX_REPEATS 8
static void synth_run(RunData *r, const char *name, const double *base, const double *async,
                      size_t num_repeats) {
  assert_true(num_repeats <= SYNTH_MAX_REPEATS);
  memset(r, 0, sizeof *r);
  r->path = xstrdup(name);
  r->name = name;
  r->manifest = json_pack("{s:s, s:[]}", "name", name, "results");
  r->num_engines = 2;
  r->num_workloads = 1;
  r->repeat = (int)num_repeats;
  r->engines = xcalloc(2, sizeof *r->engines);
  r->workloads = xcalloc(1, sizeof *r->workloads);
  r->pairs = xcalloc(2, sizeof *r->pairs);
  r->workloads[0] = (RunWorkload){.id = "w", .label = "w"};
  const double *values[2] = {base, async};
  for (size_t e = 0; e < 2; e++) {
    r->engines[e] = (RunEngine){.id = e ? "async" : "base", .gpus = 1, .status = "ok"};
    RunPair *p = &r->pairs[e];
    *p = (RunPair){.engine = e, .given = true};
    p->results = xcalloc(num_repeats, sizeof *p->results);
    p->repeats = xcalloc(num_repeats, sizeof *p->repeats);
    for (size_t k = 0; k < num_repeats; k++) {
      if (isnan(values[e][k])) continue;
      json_t *result = json_pack("{s:f}", "total_token_throughput", values[e][k]);
      json_array_append_new(json_object_get(r->manifest, "results"), result);  // owns it
      p->results[p->num_results] = result;
      p->repeats[p->num_results++] = (int)k + 1;
    }
  }
}

// The gate on two synthetic runs (see synth_run), max drop 5%, alpha 0.05.
static GateResult gate_synth(const double *b_base, const double *b_async, size_t nb,
                             const double *c_base, const double *c_async, size_t nc,
                             const char *relative_to) {
  RunData b, c;
  synth_run(&b, "synth-baseline", b_base, b_async, nb);
  synth_run(&c, "synth-candidate", c_base, c_async, nc);
  const char *metrics[] = {"total_token_throughput"};
  GateOptions o = {.metrics = metrics, .num_metrics = 1, .max_drop_pct = 5,
                   .alpha = GATE_DEFAULT_ALPHA, .relative_to = relative_to};
  return gate_and_free(&b, &c, &o);
}

static const double BASE4[] = {100, 101, 102, 103};

static void test_significant_regression(void **state) {
  (void)state;
  // async 100..103 -> 80..83: median 101.5 -> 81.5 (-19.7%); every candidate value below every
  // baseline one, U = 0, exact two-sided p = 2 / C(8, 4) = 0.0286 < 0.05.
  const double slower[] = {80, 81, 82, 83};
  assert_int_equal(gate_synth(BASE4, BASE4, 4, BASE4, slower, 4, NULL), GATE_REGRESSION);
  assert_non_null(strstr(output, "\nasync                  w              total_token_throughput "
                                 "                101.50          81.50    -19.7%     4:4   0.029 "
                                 " REGRESSION\n"));
  assert_non_null(strstr(output, "\nbase  "));  // absolute: base is judged too, unchanged
  assert_non_null(strstr(output, "+0.0%     4:4       1  ok\n"));
  assert_non_null(strstr(output, "gate: FAIL: 1 regression (more than 5.0% worse, and "
                                 "Mann-Whitney p < 0.05 where the test can decide)"));
  assert_null(strstr(output, "gate: note"));
}

static void test_drop_within_noise(void **state) {
  (void)state;
  // Medians 100 -> 85 (-15%), but the repeats overlap: candidate {60, 80, 85, 95, 125} over
  // baseline {70, 90, 100, 110, 130} wins 0 + 1 + 1 + 2 + 4 = 8 pairs, U = 8. For n = m = 5,
  // U <= 8 in 1+1+2+3+5+7+9+11+14 = 53 of C(10, 5) = 252 splits: p = 2 x 53/252 = 0.42.
  const double base[] = {70, 100, 130, 90, 110}, cand[] = {85, 60, 125, 80, 95};
  assert_int_equal(gate_synth(base, base, 5, base, cand, 5, NULL), GATE_PASS);
  assert_non_null(strstr(output, "-15.0%     5:5    0.42  ok: within noise\n"));
  assert_non_null(strstr(output, "gate: PASS: 1 comparison within 5.0%, 1 worse but within "
                                 "noise (p >= 0.05)"));
}

static void test_improvement(void **state) {
  (void)state;
  // 100..103 -> 120..123: median 101.5 -> 121.5 (+19.7%), U = n m = 16, p = 0.0286: improved, pass.
  const double faster[] = {120, 121, 122, 123};
  assert_int_equal(gate_synth(BASE4, BASE4, 4, BASE4, faster, 4, NULL), GATE_PASS);
  assert_non_null(strstr(output, "+19.7%     4:4   0.029  improved\n"));
}

static void test_too_few_repeats(void **state) {
  (void)state;
  // n = m = 3 can never give p < 0.05 (at best 2 / C(6, 3) = 0.1): the -20% median drop decides
  // alone, the row says so, and the note says what would let the test decide: with 3 baseline
  // samples, 5 candidate ones (2 / C(8, 3) = 0.036; 4 give 2 / 35 = 0.057).
  const double base[] = {100, 101, 102}, slower[] = {80, 81, 82};
  assert_int_equal(gate_synth(base, base, 3, base, slower, 3, NULL), GATE_REGRESSION);
  assert_non_null(strstr(output, "-19.8%     3:3       -  REGRESSION (median only: 3+3 samples "
                                 "never give p < 0.05)\n"));
  assert_non_null(strstr(output, "gate: note: 2 of 2 comparisons judged on medians only: with 3 "
                                 "baseline and 3 candidate samples the smallest two-sided "
                                 "Mann-Whitney p is 0.1, never below --alpha 0.05; with 3 "
                                 "baseline samples the candidate needs 5"));
}

static void test_relative_to_per_repeat(void **state) {
  (void)state;
  // The reference swings 100/200 from repeat to repeat and async moves with it: every baseline
  // ratio is 1.0, every candidate ratio 0.9 (-10%). Paired per repeat the change is clear:
  // U = 0, p = 2 / C(9, 4) = 0.016 with 5 baseline and 4 candidate ratios (the candidate's
  // reference lacks repeat 2, so async's repeat 2 is left out). Divided by the reference's
  // median (150) instead, the ratios would swing 0.6 / 1.2 and overlap the baseline's.
  const double b_base[] = {100, 200, 100, 200, 100};
  const double c_base[] = {100, NAN, 100, 200, 100}, c_async[] = {90, 180, 90, 180, 90};
  assert_int_equal(gate_synth(b_base, b_base, 5, c_base, c_async, 5, "base"), GATE_REGRESSION);
  assert_non_null(strstr(output, "total_token_throughput / base           1.000          0.900 "
                                 "   -10.0%     5:4   0.016  REGRESSION\n"));
  assert_null(strstr(output, "\nbase "));  // the reference is not judged
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
      cmocka_unit_test(test_one_sample_median_only),
      cmocka_unit_test(test_missing_pair),
      cmocka_unit_test(test_failed_candidate),
      cmocka_unit_test(test_relative_to),
      cmocka_unit_test(test_relative_to_unusable_reference),
      cmocka_unit_test(test_direction),
      cmocka_unit_test(test_load_errors),
      cmocka_unit_test(test_repeat_stats),
      cmocka_unit_test(test_significant_regression),
      cmocka_unit_test(test_drop_within_noise),
      cmocka_unit_test(test_improvement),
      cmocka_unit_test(test_too_few_repeats),
      cmocka_unit_test(test_relative_to_per_repeat),
  };
  return cmocka_run_group_tests(tests, NULL, teardown);
}
