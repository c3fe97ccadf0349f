// test_metrics.c: metrics.c on small hand-computed runs: counts and throughputs over successful
// requests only, TPOT left out for output_len <= 1, failed requests by kind, empty runs, goodput
// (an SLO equal to the value passes), v0.11's per-second peak buckets, schedule lag, and the
// parsers of --percentile-metrics, --metric-percentiles and --goodput with their error texts.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "bench/metrics.h"

#define MS INT64_C(1000000)  // one millisecond in ns

// Equal up to rounding in the last few bits (the hand values are decimal).
static void assert_near(double got, double expected) {
  if (fabs(got - expected) > 1e-9 * (1 + fabs(expected))) fail_msg("%.17g != %.17g", got, expected);
}

static RequestResult succeeded(uint32_t prompt_len, uint32_t output_tokens, int64_t start_ns,
                               int64_t ttft_ns, int64_t latency_ns, int64_t *itl_ns,
                               size_t num_itl) {
  return (RequestResult){.success = true, .prompt_len = prompt_len, .output_tokens = output_tokens,
                         .intended_ns = start_ns, .start_ns = start_ns, .ttft_ns = ttft_ns,
                         .latency_ns = latency_ns, .itl_ns = itl_ns, .num_itl = num_itl};
}

static RequestResult failed(FailureKind kind, uint32_t prompt_len) {
  // What a broken stream may leave behind: none of it may count.
  return (RequestResult){.failure = kind, .prompt_len = prompt_len, .output_tokens = 7,
                         .ttft_ns = 5 * MS, .latency_ns = 9 * MS};
}

// Two successes (one with a single output token) and one failure, over 2 s.
static int64_t gaps[] = {100 * MS, 100 * MS, 100 * MS, 100 * MS};
static void three_requests(RequestResult r[3]) {
  r[0] = succeeded(10, 5, 0, 100 * MS, 500 * MS, gaps, 4);
  r[1] = succeeded(20, 1, 0, 50 * MS, 50 * MS, NULL, 0);
  r[2] = failed(FAILURE_HTTP_STATUS, 30);
}

static void test_counts_and_throughputs(void **state) {
  (void)state;
  RequestResult r[3];
  three_requests(r);
  MetricsOptions o;
  metrics_options_init(&o);
  BenchMetrics m;
  metrics_compute(&m, r, 3, 2000 * MS, &o);
  assert_int_equal(m.num_requests, 3);
  assert_int_equal(m.num_completed, 2);
  assert_int_equal(m.num_input_tokens, 30);  // the failed request's 30 do not count
  assert_int_equal(m.num_output_tokens, 6);  // nor its 7 output tokens
  assert_true(m.duration_s == 2.0);
  assert_true(m.request_throughput == 1.0);
  assert_true(m.output_throughput == 3.0);
  assert_true(m.total_token_throughput == 18.0);
  assert_false(m.options.has_goodput);
  assert_true(m.request_goodput == 0.0);
  assert_int_equal(m.num_failed, 1);
  assert_int_equal(m.num_failed_by_kind[FAILURE_HTTP_STATUS], 1);
  assert_int_equal(m.num_failed_by_kind[FAILURE_TIMEOUT], 0);
}

static void test_latency_statistics(void **state) {
  (void)state;
  RequestResult r[3];
  three_requests(r);
  MetricsOptions o;
  metrics_options_init(&o);
  assert_true(metrics_parse_metric_percentiles(&o, "50,99", NULL, 0));
  BenchMetrics m;
  metrics_compute(&m, r, 3, 2000 * MS, &o);
  const MetricSummary *ttft = &m.summary[METRIC_TTFT];  // [100, 50] ms
  assert_near(ttft->mean_ms, 75);
  assert_near(ttft->median_ms, 75);
  assert_near(ttft->std_ms, 25);
  assert_near(ttft->percentiles_ms[0], 75);
  assert_near(ttft->percentiles_ms[1], 99.5);  // 100 - 50 * (1 - 0.99)
  // TPOT only from the request with 5 tokens: (500 - 100) / 4; the 1-token one is left out.
  const MetricSummary *tpot = &m.summary[METRIC_TPOT];
  assert_near(tpot->mean_ms, 100);
  assert_near(tpot->median_ms, 100);
  assert_near(tpot->std_ms, 0);
  assert_near(tpot->percentiles_ms[1], 100);
  const MetricSummary *itl = &m.summary[METRIC_ITL];  // four gaps of 100 ms
  assert_near(itl->mean_ms, 100);
  assert_near(itl->percentiles_ms[1], 100);
  const MetricSummary *e2el = &m.summary[METRIC_E2EL];  // [500, 50] ms
  assert_near(e2el->mean_ms, 275);
  assert_near(e2el->std_ms, 225);
  assert_near(e2el->percentiles_ms[0], 275);
}

static void test_tpot_needs_two_tokens(void **state) {
  (void)state;
  RequestResult r[2] = {succeeded(1, 1, 0, 40 * MS, 90 * MS, NULL, 0),
                        succeeded(1, 0, 0, 40 * MS, 90 * MS, NULL, 0)};
  MetricsOptions o;
  metrics_options_init(&o);
  BenchMetrics m;
  metrics_compute(&m, r, 2, 1000 * MS, &o);
  assert_true(m.summary[METRIC_TPOT].mean_ms == 0.0);  // empty list
  assert_true(m.summary[METRIC_TPOT].percentiles_ms[0] == 0.0);
  assert_near(m.summary[METRIC_TTFT].mean_ms, 40);
}

static void test_empty_and_all_failed(void **state) {
  (void)state;
  MetricsOptions o;
  metrics_options_init(&o);
  BenchMetrics m;
  metrics_compute(&m, NULL, 0, 1000 * MS, &o);
  assert_int_equal(m.num_completed, 0);
  assert_true(m.request_throughput == 0.0);
  assert_true(m.peak_output_tokens_per_s == 0.0);
  assert_true(m.mean_lag_ms == 0.0 && m.max_lag_ms == 0.0);

  RequestResult r[3] = {failed(FAILURE_TIMEOUT, 5), failed(FAILURE_CONNECTION, 5),
                        failed(FAILURE_STREAM, 5)};
  metrics_compute(&m, r, 3, 1000 * MS, &o);
  assert_int_equal(m.num_completed, 0);
  assert_int_equal(m.num_output_tokens, 0);
  assert_int_equal(m.num_input_tokens, 0);
  for (int k = 0; k < NUM_METRICS; k++) {
    assert_true(m.summary[k].mean_ms == 0.0);
    assert_true(m.summary[k].median_ms == 0.0);
    assert_true(m.summary[k].std_ms == 0.0);
    assert_true(m.summary[k].percentiles_ms[0] == 0.0);
  }
  assert_int_equal(m.num_failed, 3);
  assert_int_equal(m.num_failed_by_kind[FAILURE_TIMEOUT], 1);
  assert_int_equal(m.num_failed_by_kind[FAILURE_CONNECTION], 1);
  assert_int_equal(m.num_failed_by_kind[FAILURE_STREAM], 1);
  assert_int_equal(m.peak_concurrent_requests, 0);

  metrics_compute(&m, r, 3, 0, &o);  // a zero duration gives zeros, not inf/NaN
  assert_true(m.request_throughput == 0.0 && m.total_token_throughput == 0.0);
}

static void test_goodput(void **state) {
  (void)state;
  RequestResult r[3];
  three_requests(r);  // ttft 100/50 ms, tpot 100/(0) ms, e2el 500/50 ms
  MetricsOptions o;
  BenchMetrics m;
  struct {
    char *slos[3];
    size_t num_slos;
    size_t num_good;
  } cases[] = {
      {{"ttft:80"}, 1, 1},              // only the 50 ms one
      {{"ttft:100"}, 1, 2},             // equal passes
      {{"tpot:0"}, 1, 1},               // the 1-token request counts TPOT 0 here
      {{"e2el:500", "ttft:99"}, 2, 1},  // every SLO must hold
      {{"ttft:1000", "tpot:100", "e2el:500"}, 3, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    metrics_options_init(&o);
    char err[512];
    assert_true(metrics_parse_goodput(&o, cases[i].slos, cases[i].num_slos, err, sizeof err));
    metrics_compute(&m, r, 3, 2000 * MS, &o);
    assert_true(m.options.has_goodput);
    assert_int_equal(m.num_good, cases[i].num_good);
    assert_true(m.request_goodput == (double)cases[i].num_good / 2);
  }
}

// v0.11: A starts at 0 with output events at 0.5, 0.8, 1.1, 1.4 s (ends 1.4 s); B starts at 1.2 s
// with events at 1.4, 1.5, 1.6 s (ends 1.6 s); the failed C is ignored. Buckets: ceil(1.6) + 1 = 3.
// Events per second: [2, 5, 0]. A and B overlap during [1.2, 1.4): peak concurrency 2.
static void test_peak_buckets(void **state) {
  (void)state;
  int64_t a_gaps[] = {300 * MS, 300 * MS, 300 * MS}, b_gaps[] = {100 * MS, 100 * MS};
  RequestResult r[3] = {succeeded(1, 4, 0, 500 * MS, 1400 * MS, a_gaps, 3),
                        succeeded(1, 3, 1200 * MS, 200 * MS, 400 * MS, b_gaps, 2),
                        failed(FAILURE_TIMEOUT, 1)};
  r[2].start_ns = 5000 * MS;
  MetricsOptions o;
  metrics_options_init(&o);
  BenchMetrics m;
  metrics_compute(&m, r, 3, 2000 * MS, &o);
  assert_true(m.peak_output_tokens_per_s == 5.0);
  assert_int_equal(m.peak_concurrent_requests, 2);

  // Shifted by a large start time: only differences matter.
  for (int i = 0; i < 3; i++) r[i].start_ns += 123456 * (int64_t)1000000000;
  metrics_compute(&m, r, 3, 2000 * MS, &o);
  assert_true(m.peak_output_tokens_per_s == 5.0);
  assert_int_equal(m.peak_concurrent_requests, 2);
}

// Concurrency is per instant: A [0, 0.4 s), B [0.4, 0.8 s) and C [0.5, 0.6 s) share second 0 (v0.11
// would say 3), but at most two overlap (B and C); B starting as A ends does not overlap A.
static void test_peak_concurrency_is_instantaneous(void **state) {
  (void)state;
  RequestResult r[3] = {succeeded(1, 1, 0, 100 * MS, 400 * MS, NULL, 0),
                        succeeded(1, 1, 400 * MS, 100 * MS, 400 * MS, NULL, 0),
                        succeeded(1, 1, 500 * MS, 50 * MS, 100 * MS, NULL, 0)};
  MetricsOptions o;
  metrics_options_init(&o);
  BenchMetrics m;
  metrics_compute(&m, r, 3, 1000 * MS, &o);
  assert_int_equal(m.peak_concurrent_requests, 2);
}

static void test_schedule_lag(void **state) {
  (void)state;
  RequestResult r[3] = {succeeded(1, 2, 0, MS, 2 * MS, NULL, 0),
                        succeeded(1, 2, 0, MS, 2 * MS, NULL, 0), failed(FAILURE_STREAM, 1)};
  int64_t lags[3] = {0, 1 * MS, 30 * MS};  // the failed request was sent too, late
  for (int i = 0; i < 3; i++) r[i].ready_ns = 1000 * MS, r[i].start_ns = 1000 * MS + lags[i];
  MetricsOptions o;
  metrics_options_init(&o);
  BenchMetrics m;
  metrics_compute(&m, r, 3, 2000 * MS, &o);
  assert_near(m.mean_lag_ms, 31.0 / 3);
  assert_near(m.p99_lag_ms, 29.42);  // 30 - 29 * (1 - 0.98)
  assert_near(m.max_lag_ms, 30);
  assert_true(m.fell_behind);

  r[2].start_ns = r[2].ready_ns + 2 * MS;  // p99 = 1.98 ms: on schedule
  metrics_compute(&m, r, 3, 2000 * MS, &o);
  assert_near(m.p99_lag_ms, 1.98);
  assert_false(m.fell_behind);
}

static void test_parse_percentile_metrics(void **state) {
  (void)state;
  MetricsOptions o;
  metrics_options_init(&o);
  assert_true(o.selected[METRIC_TTFT] && o.selected[METRIC_TPOT] && o.selected[METRIC_ITL]);
  assert_false(o.selected[METRIC_E2EL]);
  char err[512];
  assert_true(metrics_parse_percentile_metrics(&o, "e2el,ttft", err, sizeof err));
  assert_true(o.selected[METRIC_TTFT] && o.selected[METRIC_E2EL]);
  assert_false(o.selected[METRIC_TPOT] || o.selected[METRIC_ITL]);
  assert_true(metrics_parse_percentile_metrics(&o, "", err, sizeof err));  // vLLM: no sections
  for (int k = 0; k < NUM_METRICS; k++) assert_false(o.selected[k]);

  metrics_options_init(&o);
  assert_false(metrics_parse_percentile_metrics(&o, "ttft, itl", err, sizeof err));
  assert_string_equal(err,
                      "--percentile-metrics: unknown metric ' itl' in 'ttft, itl' (choose from "
                      "ttft, tpot, itl, e2el, separated by commas without spaces)");
  assert_true(o.selected[METRIC_TPOT]);  // unchanged on error
}

static void test_parse_metric_percentiles(void **state) {
  (void)state;
  MetricsOptions o;
  metrics_options_init(&o);
  assert_int_equal(o.num_percentiles, 1);
  assert_true(o.percentiles[0] == 99);
  char err[512];
  assert_true(metrics_parse_metric_percentiles(&o, "50,90,99.9,100,0", err, sizeof err));
  assert_int_equal(o.num_percentiles, 5);
  assert_true(o.percentiles[2] == 99.9 && o.percentiles[3] == 100 && o.percentiles[4] == 0);

  assert_false(metrics_parse_metric_percentiles(&o, "50,p99", err, sizeof err));
  assert_string_equal(err,
                      "--metric-percentiles: 'p99' is not a number (give percentiles separated by "
                      "commas, such as 50,90,99.9)");
  assert_false(metrics_parse_metric_percentiles(&o, "99,", err, sizeof err));
  assert_false(metrics_parse_metric_percentiles(&o, "100.5", err, sizeof err));
  assert_string_equal(err, "--metric-percentiles: 100.5 is outside [0, 100]");
  assert_false(metrics_parse_metric_percentiles(&o, "nan", err, sizeof err));
  assert_int_equal(o.num_percentiles, 5);  // unchanged on error
}

static void test_parse_goodput(void **state) {
  (void)state;
  MetricsOptions o;
  metrics_options_init(&o);
  char err[512];
  char *ok[] = {"ttft:500", "e2el:1e3", "ttft:250"};  // a later key overrides
  assert_true(metrics_parse_goodput(&o, ok, 3, err, sizeof err));
  assert_true(o.has_goodput && o.has_slo[METRIC_TTFT] && o.has_slo[METRIC_E2EL]);
  assert_false(o.has_slo[METRIC_TPOT]);
  assert_true(o.slo_ms[METRIC_TTFT] == 250 && o.slo_ms[METRIC_E2EL] == 1000);

  // A negative value overridden by a later one is fine: vLLM checks its dict, not the tokens.
  metrics_options_init(&o);
  char *overridden[] = {"tpot:-1", "tpot:5"};
  assert_true(metrics_parse_goodput(&o, overridden, 2, err, sizeof err));
  assert_true(o.slo_ms[METRIC_TPOT] == 5);

  const char *format_error =
      "--goodput: Invalid format found for service level objectives. Specify service level "
      "objectives for goodput as \"KEY:VALUE\" pairs, where the key is a metric name, and the "
      "value is a number in milliseconds.";
  char *malformed[][2] = {{"ttft=5"}, {"ttft:5:6"}, {"ttft:"}, {"foo:1", "ttft:fast"}};
  for (size_t i = 0; i < 4; i++) {
    metrics_options_init(&o);
    assert_false(metrics_parse_goodput(&o, malformed[i], i == 3 ? 2 : 1, err, sizeof err));
    assert_string_equal(err, format_error);  // format errors come before name checks
    assert_false(o.has_goodput);
  }
  char *bad_name[] = {"itl:5"};
  assert_false(metrics_parse_goodput(&o, bad_name, 1, err, sizeof err));
  assert_string_equal(err,
                      "--goodput: Invalid metric name found, itl: 5.0. The service level "
                      "objective name should be one of ['ttft', 'tpot', 'e2el']. ");
  char *negative[] = {"ttft:10", "e2el:-2.5"};
  assert_false(metrics_parse_goodput(&o, negative, 2, err, sizeof err));
  assert_string_equal(err,
                      "--goodput: Invalid value found, e2el: -2.5. The service level objective "
                      "value should be non-negative.");
  assert_false(o.has_goodput);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_counts_and_throughputs),
      cmocka_unit_test(test_latency_statistics),
      cmocka_unit_test(test_tpot_needs_two_tokens),
      cmocka_unit_test(test_empty_and_all_failed),
      cmocka_unit_test(test_goodput),
      cmocka_unit_test(test_peak_buckets),
      cmocka_unit_test(test_peak_concurrency_is_instantaneous),
      cmocka_unit_test(test_schedule_lag),
      cmocka_unit_test(test_parse_percentile_metrics),
      cmocka_unit_test(test_parse_metric_percentiles),
      cmocka_unit_test(test_parse_goodput),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
