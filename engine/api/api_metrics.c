// api_metrics.c: the Prometheus exposition: gauges (running, waiting, KV usage), counters
// (prompt and generation tokens, preemptions, connections cut, client hang-ups) and the engine
// step-time histogram.
#include "api/api_metrics.h"

#include <stddef.h>

enum { NUM_STEP_BUCKETS = sizeof(((EngineStats *)0)->step_time_buckets) / sizeof(uint64_t) };

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

// "# HELP", "# TYPE" and one sample "name{model_name="..."} value".
static void sample(Buf *out, const Buf *label, const char *name, const char *type, const char *help,
                   double value) {
  buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s{%s} %.15g\n", name, help, name, type, name,
             label->data, value);
}

void api_metrics_text(const EngineStats *st, const ApiHttpStats *http, const char *model,
                      Buf *out) {
  Buf label = {0};
  buf_append_str(&label, "model_name=\"");
  label_value(&label, model);
  buf_append_byte(&label, '"');
  sample(out, &label, "vllm:num_requests_running", "gauge",
         "Number of requests in model execution batches.", st->num_running);
  sample(out, &label, "vllm:num_requests_waiting", "gauge",
         "Number of requests waiting to be processed.", st->num_waiting);
  sample(out, &label, "vllm:kv_cache_usage_perc", "gauge",
         "KV-cache usage. 1 means 100 percent usage.",
         st->num_kv_blocks ? (double)st->num_kv_blocks_used / st->num_kv_blocks : 0.0);
  sample(out, &label, "vllm:prompt_tokens_total", "counter",
         "Number of prefill tokens processed (recomputation included).",
         (double)st->num_prompt_tokens);
  sample(out, &label, "vllm:generation_tokens_total", "counter",
         "Number of generation tokens processed.", (double)st->num_generation_tokens);
  sample(out, &label, "vllm:num_preemptions_total", "counter",
         "Cumulative number of preemptions from the engine.", (double)st->num_preemptions);
  sample(out, &label, "gptoss:http_connections_cut_total", "counter",
         "Connections closed because a request did not arrive in time or they stayed idle.",
         (double)http->num_connections_cut);
  sample(out, &label, "gptoss:http_client_hangups_total", "counter",
         "Clients that closed their connection while their answer was pending (aborted).",
         (double)http->num_hangups);
  const char *h = "gptoss:engine_step_seconds";
  buf_printf(out, "# HELP %s Wall time of one engine step.\n# TYPE %s histogram\n", h, h);
  // EngineStats' buckets are bins: bucket 0 counts steps under 100 us, bucket i in [1, 14]
  // those in [2^(i-1), 2^i) * 100 us, bucket 15 every longer one (that one is only in +Inf).
  uint64_t cumulative = 0;
  for (int i = 0; i < NUM_STEP_BUCKETS - 1; i++) {
    cumulative += st->step_time_buckets[i];
    buf_printf(out, "%s_bucket{%s,le=\"%g\"} %llu\n", h, label.data, 1e-4 * (double)(1u << i),
               (unsigned long long)cumulative);
  }
  buf_printf(out, "%s_bucket{%s,le=\"+Inf\"} %llu\n%s_sum{%s} %.15g\n%s_count{%s} %llu\n", h,
             label.data, (unsigned long long)st->num_steps, h, label.data, st->step_time_sum_s, h,
             label.data, (unsigned long long)st->num_steps);
  buf_free(&label);
}
