// metrics.h: vLLM's calculate_metrics (spec vllm-bench.md section 2) over one run's results, our
// extra figures (schedule lag, failures by kind, v0.11's peak output throughput and peak
// concurrency, section 9), and the parsers of the flags that shape them (--percentile-metrics,
// --metric-percentiles, --goodput). Numbers only: printing and JSON belong to report.c. Parsers
// return error text; nothing here exits.
//
// Input contract: RequestResult.output_tokens is already resolved. When the server sent no usage
// (0), the caller has counted generated_text with the tokenizer before calling metrics_compute,
// as vLLM does; a failed request counts 0 output tokens whatever it holds, and must carry its
// FailureKind (a failed request with FAILURE_NONE is a bug: CHECK).
#ifndef GB_BENCH_METRICS_H
#define GB_BENCH_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/bench_types.h"

// The four latency metrics, in vLLM's report order.
typedef enum { METRIC_TTFT, METRIC_TPOT, METRIC_ITL, METRIC_E2EL, NUM_METRICS } Metric;

typedef struct {
  const char *key;     // "ttft": the --percentile-metrics name and the JSON key part
  const char *name;    // "TTFT": in report labels
  const char *header;  // "Time to First Token": the section header
} MetricInfo;

extern const MetricInfo METRIC_INFO[NUM_METRICS];

#define METRICS_MAX_PERCENTILES 32
// A run whose p99 schedule lag (actual minus intended send time) passes this is flagged: the
// client fell behind its arrival schedule, so the load it offered was not the one asked for.
#define METRICS_LAG_WARN_NS 10000000  // 10 ms

typedef struct {
  bool selected[NUM_METRICS];                   // --percentile-metrics: sections shown and saved
  double percentiles[METRICS_MAX_PERCENTILES];  // --metric-percentiles, in the order given
  size_t num_percentiles;
  bool has_goodput;           // --goodput was given
  bool has_slo[NUM_METRICS];  // which SLOs it set (never ITL)
  double slo_ms[NUM_METRICS];
} MetricsOptions;

// vLLM's defaults: --percentile-metrics ttft,tpot,itl, --metric-percentiles 99, no --goodput.
void metrics_options_init(MetricsOptions *o);

// --percentile-metrics "ttft,tpot,itl,e2el": comma-separated, names matched exactly. Empty items
// are skipped (vLLM ignores them too); an unknown name is an error (vLLM silently drops it).
bool metrics_parse_percentile_metrics(MetricsOptions *o, const char *arg, char *err,
                                      size_t err_size);

// --metric-percentiles "50,90,99.9": Python floats in [0, 100], at most METRICS_MAX_PERCENTILES.
bool metrics_parse_metric_percentiles(MetricsOptions *o, const char *arg, char *err,
                                      size_t err_size);

// --goodput KEY:VALUE ... (milliseconds; keys ttft, tpot, e2el; a later key overrides an
// earlier one). Errors carry vLLM's own text after "--goodput: ".
bool metrics_parse_goodput(MetricsOptions *o, char *const *tokens, size_t num_tokens, char *err,
                           size_t err_size);

typedef struct {
  double mean_ms;
  double median_ms;
  double std_ms;
  double percentiles_ms[METRICS_MAX_PERCENTILES];  // [options.num_percentiles]
} MetricSummary;

typedef struct {
  MetricsOptions options;  // what these were computed with
  // vLLM's BenchmarkMetrics: counts and statistics over successful requests only.
  size_t num_completed;
  int64_t num_input_tokens;   // total_input: client prompt_len of successful requests
  int64_t num_output_tokens;  // total_output
  size_t num_good;            // successful requests within every SLO (0 without --goodput)
  double duration_s;          // benchmark_duration
  double request_throughput;  // num_completed / duration_s
  double request_goodput;     // num_good / duration_s
  double output_throughput;   // num_output_tokens / duration_s
  double total_token_throughput;
  MetricSummary summary[NUM_METRICS];  // computed for every metric, shown per options.selected
  // Ours.
  size_t num_requests;  // successful + failed
  size_t num_failed;
  size_t num_failed_by_kind[NUM_FAILURE_KINDS];  // [FAILURE_NONE] is always 0
  double peak_output_tokens_per_s;               // v0.11 max_output_tokens_per_s
  int64_t peak_concurrent_requests;              // most successful requests in flight at once
  double mean_lag_ms;  // schedule lag (start_ns - intended_ns) over every request sent
  double p99_lag_ms;
  double max_lag_ms;
  bool fell_behind;  // p99 lag > METRICS_LAG_WARN_NS
} BenchMetrics;

// Computes everything from results[num_results] (request order) and the benchmark's duration.
// A duration <= 0 gives zero throughputs instead of a division by zero.
void metrics_compute(BenchMetrics *m, const RequestResult *results, size_t num_results,
                     int64_t duration_ns, const MetricsOptions *o);

#endif
