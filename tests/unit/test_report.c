// test_report.c: report.c's console block against golden text (tests/fixtures/bench, written
// with vLLM's own format strings: conditional lines, centred headers, percentile labels, wide
// values), the warnings, the result JSON's keys and their order, vLLM's file name, and the
// atomic write (target replaced, nothing left behind, --append-result, a clear error).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/report.h"
#include "common/buf.h"
#include "common/file.h"

#define FIXTURES "tests/fixtures/bench/"
#define MS INT64_C(1000000)

static const ReportContext DEFAULT_CONTEXT = {
    .date = "20250913-120000",
    .endpoint_type = "openai",
    .model_id = "openai/gpt-oss-120b",
    .tokenizer_id = "openai/gpt-oss-120b",
    .num_prompts = 1000,
    .request_rate = INFINITY,
    .burstiness = 1.0,
};

static void set_summary(BenchMetrics *m, Metric metric, double mean, double median,
                        const double *percentiles) {
  m->summary[metric].mean_ms = mean;
  m->summary[metric].median_ms = median;
  for (size_t i = 0; i < m->options.num_percentiles; i++)
    m->summary[metric].percentiles_ms[i] = percentiles[i];
}

static void assert_printed(const ReportContext *ctx, const BenchMetrics *m, const char *golden) {
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  report_print(out, ctx, m);
  fclose(out);
  Buf expected = {0};
  char err[512];
  assert_true(file_read_all(golden, &expected, err, sizeof err));
  if (strcmp(text, expected.data) != 0) fail_msg("%s differs; printed:\n%s", golden, text);
  buf_free(&expected);
  free(text);
}

// ---------------------------------------------------------------------------------------------
// Console block

static void test_block_spec_example(void **state) {
  (void)state;
  ReportContext ctx = DEFAULT_CONTEXT;
  ctx.max_concurrency = 64;
  BenchMetrics m = {.num_completed = 1000,
                    .duration_s = 103.46,
                    .num_input_tokens = 1023000,
                    .num_output_tokens = 128000,
                    .request_throughput = 9.67,
                    .output_throughput = 1237.20,
                    .total_token_throughput = 11125.50,
                    .peak_output_tokens_per_s = 1520,
                    .peak_concurrent_requests = 64,
                    .mean_lag_ms = 0.05,
                    .p99_lag_ms = 0.31,
                    .max_lag_ms = 1.2};
  metrics_options_init(&m.options);
  set_summary(&m, METRIC_TTFT, 71.54, 73.88, (double[]){79.49});
  set_summary(&m, METRIC_TPOT, 7.91, 7.96, (double[]){8.03});
  set_summary(&m, METRIC_ITL, 7.74, 7.70, (double[]){8.39});
  set_summary(&m, METRIC_E2EL, 900.5, 901.25, (double[]){950.75});  // not selected: not shown
  assert_printed(&ctx, &m, FIXTURES "report_spec_example.txt");
}

static void test_block_rate_goodput_failures(void **state) {
  (void)state;
  ReportContext ctx = DEFAULT_CONTEXT;
  ctx.request_rate = 10.0;
  BenchMetrics m = {.num_completed = 97,
                    .duration_s = 10.004,
                    .num_input_tokens = 99328,
                    .num_output_tokens = 12416,
                    .request_throughput = 9.696121551379448,
                    .request_goodput = 8.9964014394242,
                    .output_throughput = 1241.1035585765694,
                    .total_token_throughput = 11169.932027189124,
                    .num_failed = 3,
                    .peak_output_tokens_per_s = 1380,
                    .peak_concurrent_requests = 23,
                    .mean_lag_ms = 0.125,
                    .p99_lag_ms = 2.675,
                    .max_lag_ms = 14.5};
  m.num_failed_by_kind[FAILURE_HTTP_STATUS] = 2;
  m.num_failed_by_kind[FAILURE_STREAM] = 1;
  metrics_options_init(&m.options);
  char err[256];
  assert_true(metrics_parse_percentile_metrics(&m.options, "ttft,tpot,itl,e2el", err, sizeof err));
  m.options.has_goodput = true;
  set_summary(&m, METRIC_TTFT, 45.125, 44.875, (double[]){88.005});
  set_summary(&m, METRIC_TPOT, 12.344999, 12.335, (double[]){15.995});
  set_summary(&m, METRIC_ITL, 12.3, 11.9, (double[]){30.015625});
  set_summary(&m, METRIC_E2EL, 1612.5, 1600.0, (double[]){2010.0});
  assert_printed(&ctx, &m, FIXTURES "report_rate_goodput.txt");
}

static void test_block_custom_percentiles(void **state) {
  (void)state;
  ReportContext ctx = DEFAULT_CONTEXT;
  ctx.request_rate = 2.5;
  ctx.max_concurrency = 1;
  BenchMetrics m = {.num_completed = 12345678,
                    .duration_s = 123456789.5,
                    .num_input_tokens = 12345678901,
                    .request_throughput = 0.1,
                    .total_token_throughput = 100.00000000001,
                    .num_failed = 11,
                    .peak_concurrent_requests = 1,
                    .mean_lag_ms = 20,
                    .p99_lag_ms = 45,
                    .max_lag_ms = 60};
  m.num_failed_by_kind[FAILURE_TIMEOUT] = 5;
  m.num_failed_by_kind[FAILURE_CONNECTION] = 6;
  metrics_options_init(&m.options);
  char err[256];
  assert_true(metrics_parse_percentile_metrics(&m.options, "e2el,ttft", err, sizeof err));
  assert_true(metrics_parse_metric_percentiles(&m.options, "50,90,99.9", err, sizeof err));
  set_summary(&m, METRIC_TTFT, 1, 2, (double[]){3, 4, 5});
  set_summary(&m, METRIC_E2EL, 1234567.891, 6, (double[]){7, 8, 99999999999.999});
  assert_printed(&ctx, &m, FIXTURES "report_custom_percentiles.txt");
}

static void test_warnings(void **state) {
  (void)state;
  BenchMetrics m = {.num_completed = 5, .p99_lag_ms = 3};
  char *text = NULL;
  size_t len = 0;
  FILE *err = open_memstream(&text, &len);
  report_print_warnings(err, &m);  // nothing to say
  fflush(err);
  assert_int_equal(len, 0);
  m.num_completed = 0;
  m.p99_lag_ms = 12.5;
  m.fell_behind = true;
  report_print_warnings(err, &m);
  fclose(err);
  assert_string_equal(
      text,
      "warning: All requests failed. This is likely due to a misconfiguration on the benchmark "
      "arguments.\n"
      "warning: the client fell behind its arrival schedule: p99 schedule lag 12.50 ms > 10 ms, "
      "so the server saw less load than was asked for (use --num-client-threads to add client "
      "threads).\n");
  free(text);
}

// ---------------------------------------------------------------------------------------------
// Result JSON

static int64_t gaps[] = {100 * MS, 100 * MS, 100 * MS, 100 * MS};

// Three requests (one failed) through metrics_compute, with non-default flags.
static void small_run(RequestResult r[3], BenchMetrics *m, const char *percentile_metrics,
                      const char *percentiles, bool goodput) {
  r[0] = (RequestResult){.success = true,
                         .generated_text = "Hello",
                         .prompt_len = 10,
                         .output_tokens = 5,
                         .ttft_ns = 100 * MS,
                         .latency_ns = 500 * MS,
                         .itl_ns = gaps,
                         .num_itl = 4};
  r[1] = (RequestResult){.success = true,
                         .generated_text = "ok\xff",
                         .prompt_len = 20,
                         .output_tokens = 1,
                         .ttft_ns = 50 * MS,
                         .latency_ns = 50 * MS};
  r[2] = (RequestResult){.failure = FAILURE_HTTP_STATUS,
                         .http_status = 500,
                         .error = "HTTP 500",
                         .generated_text = "",
                         .prompt_len = 30};
  MetricsOptions o;
  metrics_options_init(&o);
  char err[256];
  assert_true(metrics_parse_percentile_metrics(&o, percentile_metrics, err, sizeof err));
  assert_true(metrics_parse_metric_percentiles(&o, percentiles, err, sizeof err));
  char *slo[] = {"ttft:75"};
  if (goodput) assert_true(metrics_parse_goodput(&o, slo, 1, err, sizeof err));
  metrics_compute(m, r, 3, 2000 * MS, &o);
}

static void assert_keys(json_t *root, const char *const *keys, size_t num_keys) {
  size_t i = 0;
  const char *key;
  json_t *value;
  json_object_foreach(root, key, value) {
    if (i >= num_keys || strcmp(key, keys[i]) != 0)
      fail_msg("key %zu is \"%s\", expected \"%s\"", i, key, i < num_keys ? keys[i] : "(none)");
    i++;
  }
  assert_int_equal(i, num_keys);
}

static const char *const EXTRA_KEYS[] = {
    "dataset_name",            "failed_requests",         "failed_http_status",   "failed_timeout",
    "failed_connection",       "failed_stream_error",  "max_output_tokens_per_s",
    "peak_concurrent_requests", "max_concurrent_requests", "backend",
    "mean_schedule_lag_ms", "p99_schedule_lag_ms",
    "max_schedule_lag_ms",     "client_fell_behind"};
#define NUM_EXTRA_KEYS (sizeof EXTRA_KEYS / sizeof *EXTRA_KEYS)

static void test_json_full(void **state) {
  (void)state;
  RequestResult r[3];
  BenchMetrics m;
  small_run(r, &m, "e2el,ttft", "50,99.9", true);
  char *metadata[] = {"gpu=H200", " note = a = b "};
  ReportContext ctx = DEFAULT_CONTEXT;
  ctx.label = "run1";
  ctx.dataset_name = "sharegpt-synth";
  ctx.metadata = metadata;
  ctx.num_metadata = 2;
  ctx.request_rate = 10;
  ctx.max_concurrency = 64;
  ctx.save_detailed = true;
  char err[256];
  json_t *root = report_build_json(&ctx, &m, r, 3, err, sizeof err);
  assert_non_null(root);
  static const char *const vllm_keys[] = {"date",
                                          "endpoint_type",
                                          "label",
                                          "model_id",
                                          "tokenizer_id",
                                          "num_prompts",
                                          "gpu",
                                          "note",
                                          "request_rate",
                                          "burstiness",
                                          "max_concurrency",
                                          "duration",
                                          "completed",
                                          "total_input_tokens",
                                          "total_output_tokens",
                                          "request_throughput",
                                          "request_goodput",
                                          "output_throughput",
                                          "total_token_throughput",
                                          "input_lens",
                                          "output_lens",
                                          "ttfts",
                                          "itls",
                                          "generated_texts",
                                          "errors",
                                          "mean_ttft_ms",
                                          "median_ttft_ms",
                                          "std_ttft_ms",
                                          "p50_ttft_ms",
                                          "p99.9_ttft_ms",
                                          "mean_e2el_ms",
                                          "median_e2el_ms",
                                          "std_e2el_ms",
                                          "p50_e2el_ms",
                                          "p99.9_e2el_ms"};
  size_t num_vllm = sizeof vllm_keys / sizeof *vllm_keys;
  const char *keys[64];
  memcpy(keys, vllm_keys, sizeof vllm_keys);
  memcpy(keys + num_vllm, EXTRA_KEYS, sizeof EXTRA_KEYS);
  assert_keys(root, keys, num_vllm + NUM_EXTRA_KEYS);

  assert_string_equal(json_string_value(json_object_get(root, "label")), "run1");
  assert_string_equal(json_string_value(json_object_get(root, "dataset_name")), "sharegpt-synth");
  assert_string_equal(json_string_value(json_object_get(root, "note")), "a");  // split("=")[1]
  assert_true(json_real_value(json_object_get(root, "request_rate")) == 10.0);
  assert_int_equal(json_integer_value(json_object_get(root, "max_concurrency")), 64);
  assert_int_equal(json_integer_value(json_object_get(root, "completed")), 2);
  assert_true(json_real_value(json_object_get(root, "request_goodput")) == 0.5);
  assert_true(json_real_value(json_object_get(root, "duration")) == 2.0);
  json_t *output_lens = json_object_get(root, "output_lens");
  assert_int_equal(json_array_size(output_lens), 3);
  assert_int_equal(json_integer_value(json_array_get(output_lens, 2)), 0);  // failed
  json_t *itls = json_object_get(root, "itls");
  assert_int_equal(json_array_size(json_array_get(itls, 0)), 4);
  assert_true(json_real_value(json_array_get(json_array_get(itls, 0), 0)) == 0.1);  // seconds
  assert_true(json_real_value(json_array_get(json_object_get(root, "ttfts"), 1)) == 0.05);
  json_t *texts = json_object_get(root, "generated_texts"),
         *errors = json_object_get(root, "errors");
  assert_string_equal(json_string_value(json_array_get(texts, 1)), "ok\xEF\xBF\xBD");  // U+FFFD
  assert_string_equal(json_string_value(json_array_get(errors, 0)), "");
  assert_string_equal(json_string_value(json_array_get(errors, 2)), "HTTP 500");
  assert_int_equal(json_integer_value(json_object_get(root, "failed_http_status")), 1);
  json_decref(root);
}

static void test_json_defaults(void **state) {
  (void)state;
  RequestResult r[3];
  BenchMetrics m;
  small_run(r, &m, "ttft,tpot,itl", "99", false);
  char err[256];
  json_t *root = report_build_json(&DEFAULT_CONTEXT, &m, r, 3, err, sizeof err);
  static const char *const vllm_keys[] = {"date",
                                          "endpoint_type",
                                          "label",
                                          "model_id",
                                          "tokenizer_id",
                                          "num_prompts",
                                          "request_rate",
                                          "burstiness",
                                          "max_concurrency",
                                          "duration",
                                          "completed",
                                          "total_input_tokens",
                                          "total_output_tokens",
                                          "request_throughput",
                                          "request_goodput",
                                          "output_throughput",
                                          "total_token_throughput",
                                          "mean_ttft_ms",
                                          "median_ttft_ms",
                                          "std_ttft_ms",
                                          "p99_ttft_ms",
                                          "mean_tpot_ms",
                                          "median_tpot_ms",
                                          "std_tpot_ms",
                                          "p99_tpot_ms",
                                          "mean_itl_ms",
                                          "median_itl_ms",
                                          "std_itl_ms",
                                          "p99_itl_ms"};
  size_t num_vllm = sizeof vllm_keys / sizeof *vllm_keys;
  const char *keys[64];
  memcpy(keys, vllm_keys, sizeof vllm_keys);
  memcpy(keys + num_vllm, EXTRA_KEYS, sizeof EXTRA_KEYS);
  assert_keys(root, keys, num_vllm + NUM_EXTRA_KEYS);
  assert_true(json_is_null(json_object_get(root, "label")));
  assert_string_equal(json_string_value(json_object_get(root, "request_rate")), "inf");
  assert_true(json_is_null(json_object_get(root, "max_concurrency")));
  assert_true(json_is_null(json_object_get(root, "request_goodput")));
  assert_true(json_real_value(json_object_get(root, "burstiness")) == 1.0);
  json_decref(root);
}

// A ramp-up's keys: after max_concurrency (vLLM's item 11), rps_change_events after the
// detailed arrays (item 21); the file name vLLM gives it.
static void test_json_ramp_up(void **state) {
  (void)state;
  RequestResult r[3];
  BenchMetrics m;
  small_run(r, &m, "ttft", "99", false);
  json_t *events = json_pack("[{s:i, s:s}]", "rps", 2, "timestamp", "2025-09-13T12:00:00.5");
  ReportContext ctx = DEFAULT_CONTEXT;
  ctx.ramp_up_strategy = "exponential";
  ctx.ramp_up_start_rps = 2;
  ctx.ramp_up_end_rps = 32;
  ctx.rps_change_events = events;
  ctx.max_concurrency = 8;
  ctx.backend = "openai-chat";
  char err[256], name[256];
  json_t *root = report_build_json(&ctx, &m, r, 3, err, sizeof err);
  static const char *const vllm_keys[] = {
      "date", "endpoint_type", "label", "model_id", "tokenizer_id", "num_prompts",
      "request_rate", "burstiness", "max_concurrency", "ramp_up_strategy", "ramp_up_start_rps",
      "ramp_up_end_rps", "duration", "completed", "total_input_tokens", "total_output_tokens",
      "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
      "rps_change_events", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms"};
  size_t num_vllm = sizeof vllm_keys / sizeof *vllm_keys;
  const char *keys[64];
  memcpy(keys, vllm_keys, sizeof vllm_keys);
  memcpy(keys + num_vllm, EXTRA_KEYS, sizeof EXTRA_KEYS);
  assert_keys(root, keys, num_vllm + NUM_EXTRA_KEYS);
  assert_int_equal(json_integer_value(json_object_get(root, "ramp_up_end_rps")), 32);
  assert_true(json_equal(json_object_get(root, "rps_change_events"), events));
  assert_string_equal(json_string_value(json_object_get(root, "backend")), "openai-chat");
  report_result_filename(&ctx, name, sizeof name);
  assert_string_equal(name,
                      "openai-ramp-up-exponential-2qps-32qps-concurrency8-gpt-oss-120b-"
                      "20250913-120000.json");
  json_decref(root);
  json_decref(events);
}

static void test_metadata_errors(void **state) {
  (void)state;
  char *metadata[] = {"a=1", "novalue"};
  char err[256];
  assert_true(report_check_metadata(metadata, 1, err, sizeof err));
  assert_false(report_check_metadata(metadata, 2, err, sizeof err));
  assert_string_equal(
      err, "--metadata 'novalue': Invalid metadata format. Please use KEY=VALUE format.");
  RequestResult r[3];
  BenchMetrics m;
  small_run(r, &m, "ttft", "99", false);
  ReportContext ctx = DEFAULT_CONTEXT;
  ctx.metadata = metadata;
  ctx.num_metadata = 2;
  assert_null(report_build_json(&ctx, &m, r, 3, err, sizeof err));
}

static void test_result_filename(void **state) {
  (void)state;
  char name[256];
  ReportContext ctx = DEFAULT_CONTEXT;
  report_result_filename(&ctx, name, sizeof name);
  assert_string_equal(name, "openai-infqps-gpt-oss-120b-20250913-120000.json");
  ctx.label = "h200-tp8";
  ctx.request_rate = 10;
  ctx.max_concurrency = 64;
  ctx.model_id = "gpt-oss-20b";
  report_result_filename(&ctx, name, sizeof name);
  assert_string_equal(name, "h200-tp8-10.0qps-concurrency64-gpt-oss-20b-20250913-120000.json");
}

// ---------------------------------------------------------------------------------------------
// Writing the file

typedef struct {
  char dir[256];
  char path[300];
} TempDir;

static int make_temp_dir(void **state) {
  TempDir *t = calloc(1, sizeof *t);
  snprintf(t->dir, sizeof t->dir, "%s/gptoss-report-XXXXXX", P_tmpdir);
  if (!mkdtemp(t->dir)) return -1;
  snprintf(t->path, sizeof t->path, "%s/result.json", t->dir);
  *state = t;
  return 0;
}

static int remove_temp_dir(void **state) {
  TempDir *t = *state;
  unlink(t->path);
  rmdir(t->dir);
  free(t);
  return 0;
}

// The names in dir, sorted, joined by spaces.
static void list_dir(const char *dir, char *out, size_t out_size) {
  struct dirent **entries;
  int n = scandir(dir, &entries, NULL, alphasort);
  assert_true(n >= 0);
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    if (entries[i]->d_name[0] != '.' || strlen(entries[i]->d_name) > 2) {
      if (out[0]) strncat(out, " ", out_size - strlen(out) - 1);
      strncat(out, entries[i]->d_name, out_size - strlen(out) - 1);
    }
    free(entries[i]);
  }
  free(entries);
}

static void read_text(const char *path, Buf *out) {
  char err[512];
  buf_clear(out);
  assert_true(file_read_all(path, out, err, sizeof err));
}

static void test_write_replaces_atomically(void **state) {
  TempDir *t = *state;
  FILE *old = fopen(t->path, "w");
  fputs("old content that is longer than nothing", old);
  fclose(old);
  RequestResult r[3];
  BenchMetrics m;
  small_run(r, &m, "ttft", "99", false);
  char err[512], names[512];
  assert_true(report_write_json(t->path, &DEFAULT_CONTEXT, &m, r, 3, err, sizeof err));
  list_dir(t->dir, names, sizeof names);
  assert_string_equal(names, "result.json");  // no temporary file left
  Buf text = {0};
  read_text(t->path, &text);
  // vLLM's json.dump: one line, ", " and ": ", no final newline.
  const char *start =
      "{\"date\": \"20250913-120000\", \"endpoint_type\": \"openai\", \"label\": null, ";
  assert_memory_equal(text.data, start, strlen(start));
  assert_true(text.data[text.len - 1] == '}');
  assert_null(strchr(text.data, '\n'));
  json_error_t jerr;
  json_t *root = json_loads(text.data, 0, &jerr);
  assert_non_null(root);
  assert_int_equal(json_integer_value(json_object_get(root, "total_input_tokens")), 30);
  json_decref(root);

  // --append-result: the old run, "\n", the new run.
  size_t first_len = text.len;
  ReportContext ctx = DEFAULT_CONTEXT;
  ctx.append_result = true;
  ctx.num_prompts = 7;
  assert_true(report_write_json(t->path, &ctx, &m, r, 3, err, sizeof err));
  read_text(t->path, &text);
  assert_true(text.len > first_len + 1 && text.data[first_len] == '\n');
  root = json_loads(text.data + first_len + 1, 0, &jerr);
  assert_int_equal(json_integer_value(json_object_get(root, "num_prompts")), 7);
  json_decref(root);
  list_dir(t->dir, names, sizeof names);
  assert_string_equal(names, "result.json");
  buf_free(&text);
}

static void test_write_error_names_path(void **state) {
  TempDir *t = *state;
  RequestResult r[3];
  BenchMetrics m;
  small_run(r, &m, "ttft", "99", false);
  char missing[400], err[512], expected[600], names[512];
  snprintf(missing, sizeof missing, "%s/no-such-dir/result.json", t->dir);
  assert_false(report_write_json(missing, &DEFAULT_CONTEXT, &m, r, 3, err, sizeof err));
  snprintf(expected, sizeof expected, "cannot write %s: No such file or directory",
           missing);
  assert_string_equal(err, expected);
  // A directory in the way of the target: the rename fails and the temporary file is removed.
  snprintf(missing, sizeof missing, "%s/result.json", t->dir);
  assert_int_equal(mkdir(missing, 0755), 0);
  assert_false(report_write_json(missing, &DEFAULT_CONTEXT, &m, r, 3, err, sizeof err));
  assert_non_null(strstr(err, missing));
  list_dir(t->dir, names, sizeof names);
  assert_string_equal(names, "result.json");
  rmdir(missing);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_block_spec_example),
      cmocka_unit_test(test_json_ramp_up),
      cmocka_unit_test(test_block_rate_goodput_failures),
      cmocka_unit_test(test_block_custom_percentiles),
      cmocka_unit_test(test_warnings),
      cmocka_unit_test(test_json_full),
      cmocka_unit_test(test_json_defaults),
      cmocka_unit_test(test_metadata_errors),
      cmocka_unit_test(test_result_filename),
      cmocka_unit_test_setup_teardown(test_write_replaces_atomically, make_temp_dir,
                                      remove_temp_dir),
      cmocka_unit_test_setup_teardown(test_write_error_names_path, make_temp_dir, remove_temp_dir),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
