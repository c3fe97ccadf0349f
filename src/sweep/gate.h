// gate.h: the CI gate: compares a candidate run with a baseline run (or result file) per
// (engine, workload, metric): the change of the medians over repeats, and with repeats on both
// sides a two-sided Mann-Whitney U test (rank_test.h) of whether it is beyond the noise; decides
// pass / regression / unusable. Prints its table to the stream it is given; loads nothing and
// never exits (gate_cmd.c does).
#ifndef GB_SWEEP_GATE_H
#define GB_SWEEP_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "sweep/run_data.h"

#define GATE_DEFAULT_MAX_DROP_PCT 5.0
#define GATE_DEFAULT_ALPHA 0.05

typedef enum { GATE_PASS = 0, GATE_REGRESSION = 1, GATE_UNUSABLE = 2 } GateResult;

typedef struct {
  const char *const *metrics;  // [num_metrics] result JSON keys, e.g. "total_token_throughput"
  size_t num_metrics;
  double max_drop_pct;  // a metric may get this much worse (percent) and still pass
  // A change past max_drop_pct is a regression only when the rank test's p < alpha (in (0, 1)).
  // With one sample on a side, or too few on both to ever reach alpha, the median alone decides
  // and the verdict says so.
  double alpha;
  bool per_gpu;         // throughput metrics divided by each engine's GPU count
  // NULL: absolute values. An engine id: every value is divided by that engine's value for the
  // same workload, metric and repeat number in the same run (baseline by the baseline's,
  // candidate by the candidate's; a repeat only one of the two has is left out), so the gate
  // judges ratios measured on one machine at one time, one sample per repeat, and a run on a
  // slower or busier machine compares with a baseline from a faster one.
  const char *relative_to;
} GateOptions;

// +1 when a higher value is better (throughputs, goodput, completed requests), -1 when lower is
// better (latencies *_ms, duration, failed requests), 0 for a key the gate cannot judge.
int gate_metric_direction(const char *key);

// Judges every pair the baseline has results for. Prints one row per (engine, workload,
// metric) with baseline and candidate medians, change, sample counts, p-value and verdict, then
// a verdict line (and a note when some rows were judged on medians only), to out. A pair the
// candidate lacks is named and makes the result GATE_UNUSABLE; a candidate engine that failed
// is a regression. With relative_to, a reference engine missing or failed in either run makes
// the result GATE_UNUSABLE, and the reference's own rows are not judged (they are always 1).
GateResult gate_run(FILE *out, const RunData *baseline, const RunData *candidate,
                    const GateOptions *options);

#endif
