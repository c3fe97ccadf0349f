// report.c: prints vLLM's result block and ours, and saves the result JSON (see report.h). The
// block's text is fixed by vLLM: every width, label and condition here follows spec
// vllm-bench.md section 1.2 and must not be "tidied". Our figures never go inside that block.
#include "bench/report.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/pyfmt.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/file.h"
#include "text/utf8.h"

#define REPORT_WIDTH 50

static const struct {
  const char *json_key;
  const char *label;
} FAILURE_INFO[NUM_FAILURE_KINDS] = {
    [FAILURE_HTTP_STATUS] = {"failed_http_status", "Failed (HTTP status):"},
    [FAILURE_TIMEOUT] = {"failed_timeout", "Failed (timeout):"},
    [FAILURE_CONNECTION] = {"failed_connection", "Failed (connection):"},
    [FAILURE_STREAM] = {"failed_stream_error", "Failed (stream error):"},
};

// vLLM's p_word: "99" for 99.0, "99.9" for 99.9 (Python's str of the float).
static void percentile_word(double p, char out[static PYFMT_FLOAT_LEN]) {
  if (p == floor(p))
    snprintf(out, PYFMT_FLOAT_LEN, "%lld", (long long)p);
  else
    pyfmt_float_repr(p, out);
}

// ---------------------------------------------------------------------------------------------
// Console

// Python's "{s:{c}^{n}}" with n=50: floor(pad/2) fill characters left of text, the rest right.
static void print_centred(FILE *out, const char *text, char fill) {
  int len = (int)strlen(text), pad = len < REPORT_WIDTH ? REPORT_WIDTH - len : 0;
  for (int i = 0; i < pad / 2; i++) fputc(fill, out);
  fputs(text, out);
  for (int i = 0; i < pad - pad / 2; i++) fputc(fill, out);
  fputc('\n', out);
}

// "{:<40} {:<10}" and "{:<40} {:<10.2f}": the value is padded too, so lines end in spaces.
static void print_int(FILE *out, const char *label, long long value) {
  fprintf(out, "%-40s %-10lld\n", label, value);
}

static void print_float(FILE *out, const char *label, double value) {
  fprintf(out, "%-40s %-10.2f\n", label, value);
}

static void print_metric_section(FILE *out, const BenchMetrics *m, Metric metric) {
  const MetricInfo *info = &METRIC_INFO[metric];
  const MetricSummary *s = &m->summary[metric];
  char label[96];
  print_centred(out, info->header, '-');
  snprintf(label, sizeof label, "Mean %s (ms):", info->name);
  print_float(out, label, s->mean_ms);
  snprintf(label, sizeof label, "Median %s (ms):", info->name);
  print_float(out, label, s->median_ms);
  for (size_t i = 0; i < m->options.num_percentiles; i++) {
    char word[PYFMT_FLOAT_LEN];
    percentile_word(m->options.percentiles[i], word);
    snprintf(label, sizeof label, "P%s %s (ms):", word, info->name);
    print_float(out, label, s->percentiles_ms[i]);
  }
}

static void print_extras(FILE *out, const BenchMetrics *m) {
  print_centred(out, " gptoss-bench extras ", '=');
  print_int(out, "Failed requests:", (long long)m->num_failed);
  for (int kind = FAILURE_NONE + 1; kind < NUM_FAILURE_KINDS; kind++)
    if (m->num_failed_by_kind[kind] > 0)
      print_int(out, FAILURE_INFO[kind].label, (long long)m->num_failed_by_kind[kind]);
  // v0.11's two lines, with its labels and formats (both .2f).
  print_float(out, "Peak output token throughput (tok/s):", m->peak_output_tokens_per_s);
  print_int(out, "Peak concurrent requests:", (long long)m->peak_concurrent_requests);
  print_float(out, "Mean schedule lag (ms):", m->mean_lag_ms);
  print_float(out, "P99 schedule lag (ms):", m->p99_lag_ms);
  print_float(out, "Max schedule lag (ms):", m->max_lag_ms);
  print_centred(out, "", '=');
}

void report_print(FILE *out, const ReportContext *ctx, const BenchMetrics *m) {
  print_centred(out, " Serving Benchmark Result ", '=');
  print_int(out, "Successful requests:", (long long)m->num_completed);
  if (ctx->max_concurrency > 0)
    print_int(out, "Maximum request concurrency:", ctx->max_concurrency);
  if (ctx->request_rate != INFINITY)
    print_float(out, "Request rate configured (RPS):", ctx->request_rate);
  print_float(out, "Benchmark duration (s):", m->duration_s);
  print_int(out, "Total input tokens:", (long long)m->num_input_tokens);
  print_int(out, "Total generated tokens:", (long long)m->num_output_tokens);
  print_float(out, "Request throughput (req/s):", m->request_throughput);
  if (m->options.has_goodput) print_float(out, "Request goodput (req/s):", m->request_goodput);
  print_float(out, "Output token throughput (tok/s):", m->output_throughput);
  print_float(out, "Total Token throughput (tok/s):", m->total_token_throughput);
  for (int metric = 0; metric < NUM_METRICS; metric++)
    if (m->options.selected[metric]) print_metric_section(out, m, (Metric)metric);
  print_centred(out, "", '=');
  print_extras(out, m);
}

void report_print_warnings(FILE *err, const BenchMetrics *m) {
  if (m->num_completed == 0)
    fprintf(err,
            "warning: All requests failed. This is likely due to a misconfiguration on the "
            "benchmark arguments.\n");
  if (m->fell_behind) {
    fprintf(err,
            "warning: the client fell behind its arrival schedule: p99 schedule lag %.2f ms > "
            "%.0f ms, so the server saw less load than was asked for (use --num-client-threads "
            "to add client threads).\n",
            m->p99_lag_ms, METRICS_LAG_WARN_NS / 1e6);
  }
}

// ---------------------------------------------------------------------------------------------
// Result JSON

// Splits a --metadata item as vLLM does: key = item.split("=")[0].strip(), value = [1].strip().
// False when it has no '='.
static bool split_metadata(const char *item, Buf *key, Buf *value) {
  const char *eq = strchr(item, '=');
  if (!eq) return false;
  const char *value_end = eq + 1 + strcspn(eq + 1, "=");
  const char *parts[2][2] = {{item, eq}, {eq + 1, value_end}};
  Buf *outs[2] = {key, value};
  for (int i = 0; i < 2; i++) {
    const char *a = parts[i][0], *b = parts[i][1];
    while (a < b && isspace((unsigned char)*a)) a++;
    while (b > a && isspace((unsigned char)b[-1])) b--;
    buf_clear(outs[i]);
    buf_append(outs[i], a, (size_t)(b - a));
  }
  return true;
}

bool report_check_metadata(char *const *items, size_t num_items, char *err, size_t err_size) {
  for (size_t i = 0; i < num_items; i++) {
    if (!strchr(items[i], '=')) {
      snprintf(err, err_size,
               "--metadata '%s': Invalid metadata format. Please use KEY=VALUE format.", items[i]);
      return false;
    }
    json_t *probe = json_string(items[i]);
    if (!probe) {
      snprintf(err, err_size, "--metadata '%s': not valid UTF-8", items[i]);
      return false;
    }
    json_decref(probe);
  }
  return true;
}

void report_result_filename(const ReportContext *ctx, char *out, size_t out_size) {
  char rate[PYFMT_FLOAT_LEN], concurrency[32] = "";
  pyfmt_float_repr(ctx->request_rate, rate);
  if (ctx->max_concurrency > 0)
    snprintf(concurrency, sizeof concurrency, "-concurrency%d", ctx->max_concurrency);
  const char *slash = strrchr(ctx->model_id, '/');
  const char *label = ctx->label && *ctx->label ? ctx->label : ctx->endpoint_type;  // `or`
  const char *model = slash ? slash + 1 : ctx->model_id;
  if (ctx->ramp_up_strategy)
    snprintf(out, out_size, "%s-ramp-up-%s-%dqps-%dqps%s-%s-%s.json", label,
             ctx->ramp_up_strategy, ctx->ramp_up_start_rps, ctx->ramp_up_end_rps, concurrency,
             model, ctx->date);
  else
    snprintf(out, out_size, "%s-%sqps%s-%s-%s.json", label, rate, concurrency, model, ctx->date);
}

static void set(json_t *object, const char *key, json_t *value) {
  CHECK(value && json_object_set_new(object, key, value) == 0);
}

// Python writes NaN/Infinity, which JSON readers refuse: null instead (never expected).
static json_t *real(double v) { return isfinite(v) ? json_real(v) : json_null(); }

// A JSON string of text that should be UTF-8; invalid bytes become U+FFFD, as Python's
// errors="replace" would make them.
static json_t *text(const char *s) {
  json_t *j = json_string(s ? s : "");
  if (j) return j;
  Buf clean = {0};
  size_t n = strlen(s);
  for (size_t i = 0; i < n;) {
    int k = utf8_next((const uint8_t *)s + i, n - i);
    if (k > 0) {
      buf_append(&clean, s + i, (size_t)k);
      i += (size_t)k;
    } else {
      buf_append_str(&clean, UTF8_REPLACEMENT);
      i += k < 0 ? (size_t)-k : n - i;  // 0: an unfinished character at the end
    }
  }
  j = json_string(clean.data ? clean.data : "");
  buf_free(&clean);
  return j;
}

// vLLM's six --save-detailed arrays: one entry per request, failures included; times in seconds.
static void add_detailed(json_t *root, const RequestResult *results, size_t num_results) {
  json_t *input_lens = json_array(), *output_lens = json_array(), *ttfts = json_array();
  json_t *itls = json_array(), *texts = json_array(), *errors = json_array();
  for (size_t i = 0; i < num_results; i++) {
    const RequestResult *r = &results[i];
    json_array_append_new(input_lens, json_integer(r->prompt_len));
    json_array_append_new(output_lens, json_integer(r->success ? r->output_tokens : 0));
    json_array_append_new(ttfts, real((double)r->ttft_ns / 1e9));
    json_t *gaps = json_array();
    for (size_t k = 0; k < r->num_itl; k++)
      json_array_append_new(gaps, real((double)r->itl_ns[k] / 1e9));
    json_array_append_new(itls, gaps);
    json_array_append_new(texts, text(r->generated_text));
    json_array_append_new(errors, text(r->error));
  }
  set(root, "input_lens", input_lens);
  set(root, "output_lens", output_lens);
  set(root, "ttfts", ttfts);
  set(root, "itls", itls);
  set(root, "generated_texts", texts);
  set(root, "errors", errors);
}

static void add_metric(json_t *root, const BenchMetrics *m, Metric metric) {
  const char *key = METRIC_INFO[metric].key;
  const MetricSummary *s = &m->summary[metric];
  char name[96];
  snprintf(name, sizeof name, "mean_%s_ms", key);
  set(root, name, real(s->mean_ms));
  snprintf(name, sizeof name, "median_%s_ms", key);
  set(root, name, real(s->median_ms));
  snprintf(name, sizeof name, "std_%s_ms", key);
  set(root, name, real(s->std_ms));
  for (size_t i = 0; i < m->options.num_percentiles; i++) {
    char word[PYFMT_FLOAT_LEN];
    percentile_word(m->options.percentiles[i], word);
    snprintf(name, sizeof name, "p%s_%s_ms", word, key);
    set(root, name, real(s->percentiles_ms[i]));
  }
}

// Ours, after all of vLLM's keys.
static void add_extras(json_t *root, const ReportContext *ctx, const BenchMetrics *m) {
  set(root, "dataset_name", ctx->dataset_name ? text(ctx->dataset_name) : json_null());
  set(root, "failed_requests", json_integer((json_int_t)m->num_failed));
  for (int kind = FAILURE_NONE + 1; kind < NUM_FAILURE_KINDS; kind++)
    set(root, FAILURE_INFO[kind].json_key, json_integer((json_int_t)m->num_failed_by_kind[kind]));
  set(root, "max_output_tokens_per_s", real(m->peak_output_tokens_per_s));  // v0.11's name
  set(root, "peak_concurrent_requests", json_integer(m->peak_concurrent_requests));
  set(root, "max_concurrent_requests", json_integer(m->peak_concurrent_requests));  // v0.11's
  set(root, "backend", ctx->backend ? text(ctx->backend) : json_null());  // v0.11's
  set(root, "mean_schedule_lag_ms", real(m->mean_lag_ms));
  set(root, "p99_schedule_lag_ms", real(m->p99_lag_ms));
  set(root, "max_schedule_lag_ms", real(m->max_lag_ms));
  set(root, "client_fell_behind", json_boolean(m->fell_behind));
}

json_t *report_build_json(const ReportContext *ctx, const BenchMetrics *m,
                          const RequestResult *results, size_t num_results, char *err,
                          size_t err_size) {
  if (!report_check_metadata(ctx->metadata, ctx->num_metadata, err, err_size)) return NULL;
  json_t *root = json_object();
  set(root, "date", text(ctx->date));
  set(root, "endpoint_type", text(ctx->endpoint_type));
  set(root, "label", ctx->label ? text(ctx->label) : json_null());
  set(root, "model_id", text(ctx->model_id));
  set(root, "tokenizer_id", text(ctx->tokenizer_id));
  set(root, "num_prompts", json_integer(ctx->num_prompts));
  Buf key = {0}, value = {0};
  for (size_t i = 0; i < ctx->num_metadata; i++) {
    CHECK(split_metadata(ctx->metadata[i], &key, &value));
    set(root, key.data, text(value.data));
  }
  buf_free(&key);
  buf_free(&value);
  set(root, "request_rate",
      ctx->request_rate == INFINITY ? json_string("inf") : real(ctx->request_rate));
  set(root, "burstiness", real(ctx->burstiness));
  set(root, "max_concurrency",
      ctx->max_concurrency > 0 ? json_integer(ctx->max_concurrency) : json_null());
  if (ctx->ramp_up_strategy) {
    set(root, "ramp_up_strategy", text(ctx->ramp_up_strategy));
    set(root, "ramp_up_start_rps", json_integer(ctx->ramp_up_start_rps));
    set(root, "ramp_up_end_rps", json_integer(ctx->ramp_up_end_rps));
  }

  set(root, "duration", real(m->duration_s));
  set(root, "completed", json_integer((json_int_t)m->num_completed));
  set(root, "total_input_tokens", json_integer(m->num_input_tokens));
  set(root, "total_output_tokens", json_integer(m->num_output_tokens));
  set(root, "request_throughput", real(m->request_throughput));
  set(root, "request_goodput", m->options.has_goodput ? real(m->request_goodput) : json_null());
  set(root, "output_throughput", real(m->output_throughput));
  set(root, "total_token_throughput", real(m->total_token_throughput));
  if (ctx->save_detailed) add_detailed(root, results, num_results);
  if (ctx->ramp_up_strategy && ctx->rps_change_events)
    set(root, "rps_change_events", json_deep_copy(ctx->rps_change_events));
  for (int metric = 0; metric < NUM_METRICS; metric++)
    if (m->options.selected[metric]) add_metric(root, m, (Metric)metric);
  add_extras(root, ctx, m);
  return root;
}

bool report_write_json(const char *path, const ReportContext *ctx, const BenchMetrics *m,
                       const RequestResult *results, size_t num_results, char *err,
                       size_t err_size) {
  json_t *root = report_build_json(ctx, m, results, num_results, err, err_size);
  if (!root) return false;
  char *json = json_dumps(root, JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
  json_decref(root);
  CHECK(json);
  Buf content = {0};
  struct stat st;
  bool ok = true;
  if (ctx->append_result && stat(path, &st) == 0) {  // vLLM's "a+": "\n" between runs
    char read_err[512];
    ok = file_read_all(path, &content, read_err, sizeof read_err);
    if (!ok) snprintf(err, err_size, "cannot append to result file: %s", read_err);
    if (content.len > 0) buf_append_str(&content, "\n");
  }
  buf_append_str(&content, json);
  free(json);
  ok = ok && file_write_atomic(path, content.data, content.len, err, err_size);
  buf_free(&content);
  return ok;
}
