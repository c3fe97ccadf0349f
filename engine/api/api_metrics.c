// api_metrics.c: the Prometheus exposition: vLLM's gauges (running, waiting, KV usage), counters
// (tokens, preemptions, prefix-cache queries and hits, finished requests by reason) and request
// histograms, then this server's own (connections cut, client hang-ups, the engine step-time
// histogram, under gptoss:). vLLM metrics this server cannot measure honestly are left out:
// queue, prefill and inference time (they need the engine's scheduling time),
// iteration_tokens_total (per step token counts), request_params_n and
// request_max_num_generation_tokens (n > 1 is not counted here).
#include "api/api_metrics.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NUM_STEP_BUCKETS = sizeof(((EngineStats *)0)->step_time_buckets) / sizeof(uint64_t) };

void api_metrics_float(double v, char out[32]) {
  if (isinf(v)) {
    snprintf(out, 32, "%sInf", v > 0 ? "+" : "-");
    return;
  }
  int p = 1;  // the shortest precision that reads back as v (Python's repr)
  char e[40];
  for (; p < 17; p++) {
    snprintf(e, sizeof e, "%.*e", p - 1, v);
    if (strtod(e, NULL) == v) break;
  }
  snprintf(e, sizeof e, "%.*e", p - 1, v);
  int exp10 = atoi(strchr(e, 'e') + 1);
  if (exp10 < -4 || exp10 >= 16) {  // repr's exponent form: "1e-05", "1.5e+16"
    snprintf(out, 32, "%.*e", p - 1, v);
    return;
  }
  if (v > 0 && exp10 >= 6) {  // Go's: "1e+06", "1.234567e+06"
    char *mantissa_end = strchr(e, 'e');
    while (mantissa_end[-1] == '0' || mantissa_end[-1] == '.') mantissa_end--;
    snprintf(out, 32, "%.*se+%02d", (int)(mantissa_end - e), e, exp10);
    return;
  }
  int decimals = p - 1 - exp10 > 0 ? p - 1 - exp10 : 0;
  snprintf(out, 32, "%.*f%s", decimals, v, decimals ? "" : ".0");
}

// A label value with Prometheus's escapes (backslash, double quote, newline).
static void label_value(Buf *out, const char *s) {
  for (; *s; s++) {
    if (*s == '\\' || *s == '"') buf_append_byte(out, '\\');
    if (*s == '\n')
      buf_append_str(out, "\\n");
    else
      buf_append_byte(out, (uint8_t)*s);
  }
}

static void head(Buf *out, const char *name, const char *type, const char *help) {
  buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

// "# HELP", "# TYPE" and one sample "name{labels} value".
static void sample(Buf *out, const char *labels, const char *name, const char *type,
                   const char *help, double value) {
  head(out, name, type, help);
  buf_printf(out, "%s{%s} %.15g\n", name, labels, value);
}

// A histogram from bins (bins[i]: observations in (bounds[i-1], bounds[i]]; bins[n]: above
// every bound), with prometheus_client's order: buckets, _count, _sum.
static void histogram(Buf *out, const char *labels, const char *name, const char *help,
                      const ApiHistogram *h) {
  head(out, name, "histogram", help);
  uint64_t cumulative = 0;
  char le[32];
  for (int i = 0; i < h->num_bounds; i++) {
    cumulative += h->bins[i];
    api_metrics_float(h->bounds[i], le);
    buf_printf(out, "%s_bucket{%s,le=\"%s\"} %llu\n", name, labels, le,
               (unsigned long long)cumulative);
  }
  buf_printf(out, "%s_bucket{%s,le=\"+Inf\"} %llu\n%s_count{%s} %llu\n%s_sum{%s} %.15g\n", name,
             labels, (unsigned long long)h->count, name, labels, (unsigned long long)h->count, name,
             labels, h->sum);
}

static void vllm_gauges_and_counters(Buf *out, const char *labels, const EngineStats *st,
                                     const ApiLatencyStats *lat) {
  double kv = st->num_kv_blocks ? (double)st->num_kv_blocks_used / st->num_kv_blocks : 0.0;
  sample(out, labels, "vllm:num_requests_running", "gauge",
         "Number of requests in model execution batches.", st->num_running);
  sample(out, labels, "vllm:num_requests_waiting", "gauge",
         "Number of requests waiting to be processed.", st->num_waiting);
  sample(out, labels, "vllm:gpu_cache_usage_perc", "gauge",
         "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use vllm:kv_cache_usage_perc "
         "instead.",
         kv);
  sample(out, labels, "vllm:kv_cache_usage_perc", "gauge",
         "KV-cache usage. 1 means 100 percent usage.", kv);
  sample(out, labels, "vllm:prefix_cache_queries_total", "counter",
         "Prefix cache queries, in terms of number of queried tokens.",
         (double)st->prefix_cache_queries);
  sample(out, labels, "vllm:prefix_cache_hits_total", "counter",
         "Prefix cache hits, in terms of number of cached tokens.", (double)st->prefix_cache_hits);
  sample(out, labels, "vllm:num_preemptions_total", "counter",
         "Cumulative number of preemption from the engine.", (double)st->num_preemptions);
  sample(out, labels, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
         (double)st->num_prompt_tokens);
  sample(out, labels, "vllm:generation_tokens_total", "counter",
         "Number of generation tokens processed.", (double)st->num_generation_tokens);
  const char *name = "vllm:request_success_total";
  head(out, name, "counter", "Count of successfully processed requests.");
  static const char *const reasons[] = {"stop", "length", "abort"};
  for (int i = 0; i < 3; i++)
    buf_printf(out, "%s{%s,finished_reason=\"%s\"} %llu\n", name, labels, reasons[i],
               (unsigned long long)lat->num_finished[i]);
}

static void vllm_histograms(Buf *out, const char *labels, const ApiLatencyStats *lat) {
  const ApiHistogram *h = lat->hist;
  histogram(out, labels, "vllm:request_prompt_tokens", "Number of prefill tokens processed.",
            &h[API_LAT_PROMPT_TOKENS]);
  histogram(out, labels, "vllm:request_generation_tokens", "Number of generation tokens processed.",
            &h[API_LAT_GENERATION_TOKENS]);
  histogram(out, labels, "vllm:request_params_max_tokens",
            "Histogram of the max_tokens request parameter.", &h[API_LAT_MAX_TOKENS]);
  histogram(out, labels, "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.", &h[API_LAT_TTFT]);
  histogram(out, labels, "vllm:time_per_output_token_seconds",
            "Histogram of time per output token in seconds.DEPRECATED: Use "
            "vllm:inter_token_latency_seconds instead.",
            &h[API_LAT_ITL]);
  histogram(out, labels, "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.", &h[API_LAT_ITL]);
  histogram(out, labels, "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.", &h[API_LAT_E2E]);
  histogram(out, labels, "vllm:request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.", &h[API_LAT_DECODE]);
}

// gptoss:engine_step_seconds from EngineStats' bins: bin 0 counts steps under 100 us, bin i in
// [1, 14] those in [2^(i-1), 2^i) * 100 us, bin 15 every longer one (only in +Inf).
static void step_histogram(Buf *out, const char *labels, const EngineStats *st) {
  ApiHistogram h = {
      .num_bounds = NUM_STEP_BUCKETS - 1, .count = st->num_steps, .sum = st->step_time_sum_s};
  for (int i = 0; i < NUM_STEP_BUCKETS; i++) {
    if (i < NUM_STEP_BUCKETS - 1) h.bounds[i] = 1e-4 * (double)(1u << i);
    h.bins[i] = st->step_time_buckets[i];
  }
  histogram(out, labels, "gptoss:engine_step_seconds", "Wall time of one engine step.", &h);
}

void api_metrics_text(const EngineStats *st, const ApiLatencyStats *lat, const ApiHttpStats *http,
                      const char *model, Buf *out) {
  Buf labels = {0};
  buf_append_str(&labels, "model_name=\"");
  label_value(&labels, model);
  buf_append_str(&labels, "\",engine=\"0\"");
  vllm_gauges_and_counters(out, labels.data, st, lat);
  vllm_histograms(out, labels.data, lat);
  sample(out, labels.data, "gptoss:http_connections_cut_total", "counter",
         "Connections closed because a request did not arrive in time or they stayed idle.",
         (double)http->num_connections_cut);
  sample(out, labels.data, "gptoss:http_client_hangups_total", "counter",
         "Clients that closed their connection while their answer was pending (aborted).",
         (double)http->num_hangups);
  step_histogram(out, labels.data, st);
  buf_free(&labels);
}
