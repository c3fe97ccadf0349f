// metrics.c: turns a run's RequestResults into vLLM's figures and ours (see metrics.h), and
// parses the flags that choose them. Follows vLLM's calculate_metrics step by step (seconds,
// request order, then x1000) so the numbers match; must not print, exit or touch files.
#include "bench/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/pyfmt.h"
#include "bench/stats.h"
#include "common/check.h"

#define NS_PER_S 1000000000

const MetricInfo METRIC_INFO[NUM_METRICS] = {
    [METRIC_TTFT] = {"ttft", "TTFT", "Time to First Token"},
    [METRIC_TPOT] = {"tpot", "TPOT", "Time per Output Token (excl. 1st token)"},
    [METRIC_ITL] = {"itl", "ITL", "Inter-token Latency"},
    [METRIC_E2EL] = {"e2el", "E2EL", "End-to-end Latency"},
};

// ---------------------------------------------------------------------------------------------
// Flags

void metrics_options_init(MetricsOptions *o) {
  *o = (MetricsOptions){0};
  o->selected[METRIC_TTFT] = o->selected[METRIC_TPOT] = o->selected[METRIC_ITL] = true;
  o->percentiles[0] = 99;
  o->num_percentiles = 1;
}

// The metric whose key is the len bytes at name, or NUM_METRICS.
static Metric metric_by_key(const char *name, size_t len) {
  for (int i = 0; i < NUM_METRICS; i++)
    if (strlen(METRIC_INFO[i].key) == len && memcmp(METRIC_INFO[i].key, name, len) == 0)
      return (Metric)i;
  return NUM_METRICS;
}

bool metrics_parse_percentile_metrics(MetricsOptions *o, const char *arg, char *err,
                                      size_t err_size) {
  bool selected[NUM_METRICS] = {false};
  for (const char *item = arg;; item++) {
    size_t len = strcspn(item, ",");
    Metric metric = metric_by_key(item, len);
    if (metric != NUM_METRICS) {
      selected[metric] = true;
    } else if (len > 0) {
      snprintf(err, err_size,
               "--percentile-metrics: unknown metric '%.*s' in '%s' (choose from ttft, tpot, "
               "itl, e2el, separated by commas without spaces)",
               (int)len, item, arg);
      return false;
    }
    item += len;
    if (*item == '\0') break;
  }
  memcpy(o->selected, selected, sizeof selected);
  return true;
}

bool metrics_parse_metric_percentiles(MetricsOptions *o, const char *arg, char *err,
                                      size_t err_size) {
  size_t num = 0;
  double percentiles[METRICS_MAX_PERCENTILES];
  for (const char *item = arg;; item++) {
    size_t len = strcspn(item, ",");
    char text[64];
    double p;
    snprintf(text, sizeof text, "%.*s", (int)len, item);
    if (len >= sizeof text || !pyfmt_parse_float(text, &p)) {
      snprintf(err, err_size,
               "--metric-percentiles: '%.*s' is not a number (give percentiles separated by "
               "commas, such as 50,90,99.9)",
               (int)len, item);
      return false;
    }
    if (!(p >= 0 && p <= 100)) {
      snprintf(err, err_size, "--metric-percentiles: %s is outside [0, 100]", text);
      return false;
    }
    if (num == METRICS_MAX_PERCENTILES) {
      snprintf(err, err_size, "--metric-percentiles: more than %d percentiles",
               METRICS_MAX_PERCENTILES);
      return false;
    }
    percentiles[num++] = p;
    item += len;
    if (*item == '\0') break;
  }
  memcpy(o->percentiles, percentiles, num * sizeof *percentiles);
  o->num_percentiles = num;
  return true;
}

bool metrics_parse_goodput(MetricsOptions *o, char *const *tokens, size_t num_tokens, char *err,
                           size_t err_size) {
  // vLLM reads every KEY:VALUE into a dict first (any malformed pair fails the flag), then checks
  // the dict in its order: a key's first position, its last value.
  typedef struct {
    const char *name;
    size_t len;
    double ms;
  } Slo;
  Slo *slos = xcalloc(num_tokens ? num_tokens : 1, sizeof *slos);
  size_t num_slos = 0;
  bool ok = true;
  for (size_t i = 0; i < num_tokens && ok; i++) {
    const char *colon = strchr(tokens[i], ':');
    double ms;
    ok = colon && !strchr(colon + 1, ':') && pyfmt_parse_float(colon + 1, &ms);
    if (!ok) {
      snprintf(err, err_size,
               "--goodput: Invalid format found for service level objectives. Specify service "
               "level objectives for goodput as \"KEY:VALUE\" pairs, where the key is a metric "
               "name, and the value is a number in milliseconds.");
      break;
    }
    Slo slo = {tokens[i], (size_t)(colon - tokens[i]), ms};
    size_t k = 0;
    while (k < num_slos && !(slos[k].len == slo.len && !memcmp(slos[k].name, slo.name, slo.len)))
      k++;
    if (k == num_slos) num_slos++;
    slos[k] = slo;
  }
  MetricsOptions parsed = *o;
  parsed.has_goodput = num_slos > 0;
  for (size_t k = 0; k < num_slos && ok; k++) {
    Metric metric = metric_by_key(slos[k].name, slos[k].len);
    char value[PYFMT_FLOAT_LEN];
    pyfmt_float_repr(slos[k].ms, value);
    if (metric == NUM_METRICS || metric == METRIC_ITL) {
      snprintf(err, err_size,
               "--goodput: Invalid metric name found, %.*s: %s. The service level objective "
               "name should be one of ['ttft', 'tpot', 'e2el']. ",
               (int)slos[k].len, slos[k].name, value);
      ok = false;
    } else if (slos[k].ms < 0) {
      snprintf(err, err_size,
               "--goodput: Invalid value found, %.*s: %s. The service level objective value "
               "should be non-negative.",
               (int)slos[k].len, slos[k].name, value);
      ok = false;
    } else {
      parsed.has_slo[metric] = true;
      parsed.slo_ms[metric] = slos[k].ms;
    }
  }
  free(slos);
  if (ok) *o = parsed;
  return ok;
}

// ---------------------------------------------------------------------------------------------
// Figures

static double seconds(int64_t ns) { return (double)ns / 1e9; }

// mean, std, median and the chosen percentiles of values (seconds, request order), in ms.
static void summarize(MetricSummary *s, const double *values, size_t n, const MetricsOptions *o) {
  double *sorted = stats_sorted_copy(values, n);
  s->mean_ms = stats_mean(values, n) * 1000;
  s->std_ms = stats_std(values, n) * 1000;
  s->median_ms = stats_median(sorted, n) * 1000;
  for (size_t i = 0; i < o->num_percentiles; i++)
    s->percentiles_ms[i] = stats_percentile(sorted, n, o->percentiles[i]) * 1000;
  free(sorted);
}

// vLLM's goodput test: within every SLO given, in seconds (an SLO equal to the value passes).
static bool is_good(const MetricsOptions *o, const double value_s[NUM_METRICS]) {
  for (int i = 0; i < NUM_METRICS; i++)
    if (o->has_slo[i] && !(o->slo_ms[i] / 1000 >= value_s[i])) return false;
  return true;
}

static int compare_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

// Peak output throughput: v0.11's per-second buckets over successful requests (output events,
// the first at start+ttft, then one per ITL gap, counted per whole second from the first start).
static void compute_peak_throughput(BenchMetrics *m, const RequestResult *results,
                                    size_t num_results) {
  int64_t min_start = INT64_MAX, max_end = INT64_MIN;
  for (size_t i = 0; i < num_results; i++) {
    const RequestResult *r = &results[i];
    if (!r->success) continue;
    if (r->start_ns < min_start) min_start = r->start_ns;
    if (r->start_ns + r->latency_ns > max_end) max_end = r->start_ns + r->latency_ns;
  }
  if (min_start > max_end) return;  // no successful request
  int64_t num_buckets = (max_end - min_start + NS_PER_S - 1) / NS_PER_S + 1;
  int64_t *events = xcalloc((size_t)num_buckets, sizeof *events);
  for (size_t i = 0; i < num_results; i++) {
    const RequestResult *r = &results[i];
    if (!r->success) continue;
    int64_t t = r->start_ns + r->ttft_ns;
    for (size_t k = 0; k <= r->num_itl; k++) {
      if (k > 0) t += r->itl_ns[k - 1];
      int64_t bucket = (t - min_start) / NS_PER_S;  // truncation, like Python's int()
      if (bucket >= 0 && bucket < num_buckets) events[bucket]++;
    }
  }
  for (int64_t s = 0; s < num_buckets; s++)
    if ((double)events[s] > m->peak_output_tokens_per_s)
      m->peak_output_tokens_per_s = (double)events[s];
  free(events);
}

// Peak concurrency: the most successful requests in flight at one instant, [start, start +
// latency) each (not v0.11's "active during the same second", which counts requests that never
// overlapped).
static void compute_peak_concurrency(BenchMetrics *m, const RequestResult *results,
                                     size_t num_results) {
  int64_t *starts = xmalloc((num_results ? num_results : 1) * sizeof *starts);
  int64_t *ends = xmalloc((num_results ? num_results : 1) * sizeof *ends);
  size_t n = 0;
  for (size_t i = 0; i < num_results; i++) {
    if (!results[i].success) continue;
    starts[n] = results[i].start_ns;
    ends[n++] = results[i].start_ns + results[i].latency_ns;
  }
  qsort(starts, n, sizeof *starts, compare_i64);
  qsort(ends, n, sizeof *ends, compare_i64);
  int64_t in_flight = 0;
  for (size_t s = 0, e = 0; s < n;) {
    if (ends[e] <= starts[s]) {  // an end at the same instant as a start comes first
      in_flight--;
      e++;
    } else {
      in_flight++;
      s++;
      if (in_flight > m->peak_concurrent_requests) m->peak_concurrent_requests = in_flight;
    }
  }
  free(starts);
  free(ends);
}

// Schedule lag (actual send time minus when the request was due and had a concurrency slot)
// over every request, in ms: the client's own lateness, not the wait --max-concurrency imposes.
static void compute_lag(BenchMetrics *m, const RequestResult *results, size_t num_results) {
  double *lags = xmalloc((num_results ? num_results : 1) * sizeof *lags);
  for (size_t i = 0; i < num_results; i++)
    lags[i] = (double)(results[i].start_ns - results[i].ready_ns) / 1e6;
  double *sorted = stats_sorted_copy(lags, num_results);
  m->mean_lag_ms = stats_mean(lags, num_results);
  m->p99_lag_ms = stats_percentile(sorted, num_results, 99);
  m->max_lag_ms = num_results ? sorted[num_results - 1] : 0.0;
  m->fell_behind = m->p99_lag_ms > METRICS_LAG_WARN_NS / 1e6;
  free(sorted);
  free(lags);
}

void metrics_compute(BenchMetrics *m, const RequestResult *results, size_t num_results,
                     int64_t duration_ns, const MetricsOptions *o) {
  *m = (BenchMetrics){.options = *o, .num_requests = num_results};
  size_t num_itls = 0;
  for (size_t i = 0; i < num_results; i++)
    if (results[i].success) num_itls += results[i].num_itl;
  // Per successful request, in seconds: [metric][request], and every ITL gap in one list.
  double *lists[NUM_METRICS];
  size_t lens[NUM_METRICS] = {0};
  for (int k = 0; k < NUM_METRICS; k++)
    lists[k] = xmalloc(((k == METRIC_ITL ? num_itls : num_results) + 1) * sizeof(double));

  for (size_t i = 0; i < num_results; i++) {
    const RequestResult *r = &results[i];
    if (!r->success) {
      CHECK(r->failure > FAILURE_NONE && r->failure < NUM_FAILURE_KINDS);
      m->num_failed++;
      m->num_failed_by_kind[r->failure]++;
      continue;
    }
    m->num_completed++;
    m->num_input_tokens += r->prompt_len;
    m->num_output_tokens += r->output_tokens;
    double value_s[NUM_METRICS] = {
        [METRIC_TTFT] = seconds(r->ttft_ns),
        [METRIC_E2EL] = seconds(r->latency_ns),
    };
    // TPOT needs two tokens; below that it is 0 for goodput and left out of the statistics.
    if (r->output_tokens > 1) {
      value_s[METRIC_TPOT] =
          (value_s[METRIC_E2EL] - value_s[METRIC_TTFT]) / (double)(r->output_tokens - 1);
      lists[METRIC_TPOT][lens[METRIC_TPOT]++] = value_s[METRIC_TPOT];
    }
    lists[METRIC_TTFT][lens[METRIC_TTFT]++] = value_s[METRIC_TTFT];
    lists[METRIC_E2EL][lens[METRIC_E2EL]++] = value_s[METRIC_E2EL];
    for (size_t k = 0; k < r->num_itl; k++)
      lists[METRIC_ITL][lens[METRIC_ITL]++] = seconds(r->itl_ns[k]);
    if (o->has_goodput && is_good(o, value_s)) m->num_good++;
  }

  for (int k = 0; k < NUM_METRICS; k++) {
    summarize(&m->summary[k], lists[k], lens[k], o);
    free(lists[k]);
  }
  m->duration_s = seconds(duration_ns);
  if (duration_ns > 0) {
    m->request_throughput = (double)m->num_completed / m->duration_s;
    m->request_goodput = (double)m->num_good / m->duration_s;
    m->output_throughput = (double)m->num_output_tokens / m->duration_s;
    m->total_token_throughput =
        (double)(m->num_input_tokens + m->num_output_tokens) / m->duration_s;
  }
  compute_peak_throughput(m, results, num_results);
  compute_peak_concurrency(m, results, num_results);
  compute_lag(m, results, num_results);
}
