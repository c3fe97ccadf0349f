// gate.h: the CI gate: compares a candidate run with a baseline run (or result file) per
// (engine, workload, metric), medians over repeats, and decides pass / regression / unusable.
// Prints its table to the stream it is given; loads nothing and never exits (gate_cmd.c does).
#ifndef GB_SWEEP_GATE_H
#define GB_SWEEP_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "sweep/run_data.h"

#define GATE_DEFAULT_MAX_DROP_PCT 5.0

typedef enum { GATE_PASS = 0, GATE_REGRESSION = 1, GATE_UNUSABLE = 2 } GateResult;

typedef struct {
  const char *const *metrics;  // [num_metrics] result JSON keys, e.g. "total_token_throughput"
  size_t num_metrics;
  double max_drop_pct;  // a metric may get this much worse (percent) and still pass
  bool per_gpu;         // throughput metrics divided by each engine's GPU count
  // NULL: absolute values. An engine id: every value is divided by that engine's value for the
  // same workload and metric in the same run (baseline by the baseline's, candidate by the
  // candidate's), so the gate judges ratios measured on one machine at one time and a run on a
  // slower or busier machine compares with a baseline from a faster one.
  const char *relative_to;
} GateOptions;

// +1 when a higher value is better (throughputs, goodput, completed requests), -1 when lower is
// better (latencies *_ms, duration, failed requests), 0 for a key the gate cannot judge.
int gate_metric_direction(const char *key);

// Judges every pair the baseline has results for. Prints one row per (engine, workload,
// metric) with baseline, candidate, change and verdict, then a verdict line, to out. A pair the
// candidate lacks is named and makes the result GATE_UNUSABLE; a candidate engine that failed
// is a regression. With relative_to, a reference engine missing or failed in either run makes
// the result GATE_UNUSABLE, and the reference's own rows are not judged (they are always 1).
GateResult gate_run(FILE *out, const RunData *baseline, const RunData *candidate,
                    const GateOptions *options);

#endif
