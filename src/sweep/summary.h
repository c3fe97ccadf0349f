// summary.h: a run's summary.md (the study's tables, spec seed-study.md: engine choice, each
// option's gain, baseline vs optimized per workload, then every vLLM result block re-rendered
// from the JSON) and summary.csv (one row per engine and workload). Renders from RunData only:
// never runs anything, never changes the result files.
#ifndef GB_SWEEP_SUMMARY_H
#define GB_SWEEP_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "sweep/run_data.h"

// summary.md's text; compare (NULL: none) is another run or a result file put beside this one.
void summary_render_md(Buf *out, const RunData *run, const RunData *compare);
// summary.csv's text (medians, with min and max of total throughput over repeats).
void summary_render_csv(Buf *out, const RunData *run);

// One vLLM result block (and our extras block when the JSON has our keys) rebuilt from a result
// object, exactly as `gptoss-bench bench` printed it.
void summary_render_block(Buf *out, json_t *result);

// Loads run_dir (and compare_path unless NULL) and writes run_dir/summary.md and summary.csv
// atomically. The call the sweep makes at the end of a run. False with err on failure.
bool summary_write(const char *run_dir, const char *compare_path, char *err, size_t err_size);

#endif
