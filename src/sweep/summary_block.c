// summary_block.c: rebuilds BenchMetrics and ReportContext from a saved result object so that
// report.c prints the block; the figures are the saved ones, nothing is recomputed.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/pyfmt.h"
#include "bench/report.h"
#include "common/check.h"
#include "sweep/summary.h"

// Our JSON keys for the failure kinds, in FailureKind order (report.c's add_extras).
static const char *const FAILURE_KEYS[NUM_FAILURE_KINDS] = {
    [FAILURE_HTTP_STATUS] = "failed_http_status",
    [FAILURE_TIMEOUT] = "failed_timeout",
    [FAILURE_CONNECTION] = "failed_connection",
    [FAILURE_STREAM] = "failed_stream_error",
};

static double num(json_t *r, const char *key) {
  json_t *v = json_object_get(r, key);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static long long whole(json_t *r, const char *key) {
  json_t *v = json_object_get(r, key);
  return json_is_number(v) ? (long long)json_number_value(v) : 0;
}

// The --metric-percentiles of the run, read off the "p<word>_<metric>_ms" keys in saved order.
static void read_percentiles(MetricsOptions *o, char words[][PYFMT_FLOAT_LEN], json_t *r,
                             const char *metric_key) {
  char suffix[32];
  snprintf(suffix, sizeof suffix, "_%s_ms", metric_key);
  const char *key;
  json_t *value;
  json_object_foreach(r, key, value) {
    size_t len = strlen(key), slen = strlen(suffix);
    if (key[0] != 'p' || len <= slen + 1 || strcmp(key + len - slen, suffix) != 0) continue;
    char *word = words[o->num_percentiles];
    if (len - slen - 1 >= PYFMT_FLOAT_LEN || o->num_percentiles == METRICS_MAX_PERCENTILES)
      continue;
    memcpy(word, key + 1, len - slen - 1);
    word[len - slen - 1] = '\0';
    if (pyfmt_parse_float(word, &o->percentiles[o->num_percentiles])) o->num_percentiles++;
  }
}

static void read_metrics(BenchMetrics *m, json_t *r) {
  memset(m, 0, sizeof *m);
  MetricsOptions *o = &m->options;
  char words[METRICS_MAX_PERCENTILES][PYFMT_FLOAT_LEN];
  const char *first = NULL;
  for (int i = 0; i < NUM_METRICS; i++) {
    char key[64];
    snprintf(key, sizeof key, "mean_%s_ms", METRIC_INFO[i].key);
    o->selected[i] = json_object_get(r, key) != NULL;
    if (o->selected[i] && !first) first = METRIC_INFO[i].key;
  }
  if (first) read_percentiles(o, words, r, first);
  o->has_goodput = json_is_number(json_object_get(r, "request_goodput"));
  m->num_completed = (size_t)whole(r, "completed");
  m->num_input_tokens = whole(r, "total_input_tokens");
  m->num_output_tokens = whole(r, "total_output_tokens");
  m->duration_s = num(r, "duration");
  m->request_throughput = num(r, "request_throughput");
  m->request_goodput = num(r, "request_goodput");
  m->output_throughput = num(r, "output_throughput");
  m->total_token_throughput = num(r, "total_token_throughput");
  for (int i = 0; i < NUM_METRICS; i++) {
    char key[64];
    const char *k = METRIC_INFO[i].key;
    snprintf(key, sizeof key, "mean_%s_ms", k);
    m->summary[i].mean_ms = num(r, key);
    snprintf(key, sizeof key, "median_%s_ms", k);
    m->summary[i].median_ms = num(r, key);
    snprintf(key, sizeof key, "std_%s_ms", k);
    m->summary[i].std_ms = num(r, key);
    for (size_t p = 0; p < o->num_percentiles; p++) {
      snprintf(key, sizeof key, "p%s_%s_ms", words[p], k);
      m->summary[i].percentiles_ms[p] = num(r, key);
    }
  }
  m->num_failed = (size_t)whole(r, "failed_requests");
  for (int kind = FAILURE_NONE + 1; kind < NUM_FAILURE_KINDS; kind++)
    m->num_failed_by_kind[kind] = (size_t)whole(r, FAILURE_KEYS[kind]);
  m->peak_output_tokens_per_s = num(r, "max_output_tokens_per_s");
  m->peak_concurrent_requests = whole(r, "peak_concurrent_requests");
  m->mean_lag_ms = num(r, "mean_schedule_lag_ms");
  m->p99_lag_ms = num(r, "p99_schedule_lag_ms");
  m->max_lag_ms = num(r, "max_schedule_lag_ms");
}

void summary_render_block(Buf *out, json_t *r) {
  BenchMetrics m;
  read_metrics(&m, r);
  json_t *rate = json_object_get(r, "request_rate");
  ReportContext ctx = {
      .request_rate = json_is_number(rate) ? json_number_value(rate) : INFINITY,
      .max_concurrency = (int)whole(r, "max_concurrency"),
  };
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  CHECK(f);
  report_print(f, &ctx, &m);
  CHECK(fclose(f) == 0);
  // A file without our keys (vLLM's own, the study's numbers) gets vLLM's block only.
  if (!json_object_get(r, "failed_requests")) {
    char *extras = strstr(text, "= gptoss-bench extras =");
    while (extras && extras > text && extras[-1] != '\n') extras--;
    if (extras) len = (size_t)(extras - text);
  }
  buf_append(out, text, len);
  free(text);
}
