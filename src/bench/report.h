// report.h: what a benchmark run shows and saves. vLLM's result block byte for byte (spec
// vllm-bench.md section 1.2), then our extras block after its closing "=====" line; warnings;
// the --save-result JSON with vLLM's keys in vLLM's order (section 6) and ours after them,
// written atomically. Formats figures computed by metrics.c; computes nothing itself.
#ifndef GB_BENCH_REPORT_H
#define GB_BENCH_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "bench/bench_types.h"
#include "bench/metrics.h"

// The run's settings that the report and the JSON header show (vLLM's result_json setup keys).
typedef struct {
  const char *date;           // datetime.now().strftime("%Y%m%d-%H%M%S"), taken after the run
  const char *endpoint_type;  // --endpoint-type ("openai")
  const char *label;          // --label; NULL when not given (JSON null; file name: endpoint_type)
  const char *model_id;       // --model
  const char *tokenizer_id;   // --tokenizer, else the model
  int num_prompts;
  char *const *metadata;  // [num_metadata] --metadata "KEY=VALUE" items, in the order given
  size_t num_metadata;
  double request_rate;  // INFINITY: all at once
  double burstiness;
  int max_concurrency;  // 0: no cap (vLLM's None)
  const char *ramp_up_strategy;  // NULL: no ramp-up; else linear | exponential, with
  int ramp_up_start_rps, ramp_up_end_rps;
  json_t *rps_change_events;     // [{"rps": k, "timestamp": ISO}] (borrowed; NULL: no ramp-up)
  const char *backend;           // --backend, also written under v0.11's key "backend"
  const char *dataset_name;  // "sharegpt", "sharegpt-synth", "random": our extra key, so results
                             // on synthetic data say so (NULL: null)
  bool save_detailed;   // --save-detailed: add the six per-request arrays
  bool append_result;   // --append-result: keep the file's content, add "\n" and this run
} ReportContext;

// vLLM's result block, then ours ("gptoss-bench extras": failures by kind, peak output
// throughput, peak concurrency, schedule lag), to out (stdout).
void report_print(FILE *out, const ReportContext *ctx, const BenchMetrics *m);

// The run's warnings, one line each, to err (stderr): every request failed; the client fell
// behind its arrival schedule.
void report_print_warnings(FILE *err, const BenchMetrics *m);

// Checks --metadata items as vLLM does (each needs a '='), so a bad one fails before the run.
bool report_check_metadata(char *const *items, size_t num_items, char *err, size_t err_size);

// vLLM's default result file name: "{label}-{rate}qps[-concurrency{N}]-{model base}-{date}.json",
// with ramp-up "{label}-ramp-up-{strategy}-{start}qps-{end}qps[-concurrency{N}]-...".
void report_result_filename(const ReportContext *ctx, char *out, size_t out_size);

// The result object (keys in order; non-finite numbers become null). NULL with err filled when
// a --metadata item is malformed. results[num_results] are used only with save_detailed.
json_t *report_build_json(const ReportContext *ctx, const BenchMetrics *m,
                          const RequestResult *results, size_t num_results, char *err,
                          size_t err_size);

// Writes report_build_json's object to path as vLLM does (one line, ", " and ": ", ASCII, no
// final newline), atomically: a temporary file in the same directory, fsync, rename. The file's
// directory must exist. False with err naming the path on failure (no temporary file is left).
bool report_write_json(const char *path, const ReportContext *ctx, const BenchMetrics *m,
                       const RequestResult *results, size_t num_results, char *err,
                       size_t err_size);

#endif
