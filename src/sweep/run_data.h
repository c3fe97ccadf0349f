// run_data.h: one sweep's results in memory, loaded from a run folder (manifest.json plus
// <engine>/<workload>[.r<k>].json, the layout in docs/ARCHITECTURE.md) or from a result file
// (results/reference/seed-h100.json, results/baselines/*.json: the manifest's keys plus
// "results": {"<engine>/<workload>": {...} or [{...}, ...]}). Also writes a run as a result
// file. Reads and summarises numbers; prints nothing, decides nothing (summary.c, gate.c do).
#ifndef GB_SWEEP_RUN_DATA_H
#define GB_SWEEP_RUN_DATA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct {
  const char *id;       // "vllm-async-tp2": the run folder's subfolder
  const char *label;    // for tables and plots (the id when the manifest has none)
  int gpus;
  const char *command;  // NULL when not recorded
  const char *status;   // "ok", "failed" or "skipped"
  const char *error;    // the engine's last error line, NULL when none
} RunEngine;

typedef struct {
  const char *id;  // "sharegpt"
  const char *label;
  const char *dataset_name;  // NULL when not recorded
  const char *grid_base;     // a grid point's: the [workload.ID] it came from; NULL: no grid
  const char *grid_point;    //   and its "FLAG=VALUE, ..." (sweep_grid.h)
} RunWorkload;

typedef struct {
  const char *name;  // "async scheduling"
  const char *base;  // engine id
  const char **candidates;  // [num_candidates] engine ids; the best one counts
  size_t num_candidates;
  const char *workload;  // measured on this workload (default: the run's first workload)
  bool per_gpu;          // compare throughput per GPU
} RunComparison;

// One result per repeat of an (engine, workload) pair, in repeat order: results[i] is the vLLM
// result object (borrowed from the loaded JSON) of repeat repeats[i].
typedef struct {
  size_t engine;    // index into RunData.engines
  size_t workload;  // index into RunData.workloads
  json_t **results;  // [num_results]; 0 results: no file was found for the pair
  // [num_results] 1-based repeat numbers: k of <workload>.r<k>.json, or the position in a result
  // file's array (a null item there is a repeat without a result), so a gap keeps the numbering
  int *repeats;
  size_t num_results;
  bool given;        // the engine was to run the workload (its `workloads` in the sweep file)
} RunPair;

// The median and the spread of one metric over a pair's repeats.
typedef struct {
  double median;
  double min;
  double max;
  size_t num_values;  // repeats that carry the metric as a number; 0: the metric is missing
} RunStat;

typedef struct {
  char *path;        // what was loaded (folder or file)
  const char *name;  // the run's name
  RunEngine *engines;
  size_t num_engines;
  RunWorkload *workloads;
  size_t num_workloads;
  const char *baseline;   // engine ids, NULL when the run names none
  const char *optimized;
  RunComparison *comparisons;
  size_t num_comparisons;
  int repeat;
  RunPair *pairs;  // [num_engines * num_workloads], engine-major
  json_t *manifest;  // owns every borrowed string above
  json_t **files;    // [num_files] the per-pair result files a run folder held (owned)
  size_t num_files;
} RunData;

// Loads a run folder or a result file. False with err naming the file, and for bad JSON its line
// and column, or the missing or mistyped key. A pair without a file is not an error (it has 0
// results); a file that exists but is not valid is.
bool run_data_load(RunData *run, const char *path, char *err, size_t err_size);
void run_data_free(RunData *run);

const RunPair *run_data_pair(const RunData *run, size_t engine, size_t workload);
// Index of an engine or workload id, or -1.
long run_data_engine_index(const RunData *run, const char *id);
long run_data_workload_index(const RunData *run, const char *id);
bool run_data_engine_failed(const RunEngine *engine);

// Median, min and max of the numeric key over the pair's repeats (non-numbers are skipped).
RunStat run_data_stat(const RunPair *pair, const char *key);

// The run as a result file (the reference schema), for CI baselines: a new object.
json_t *run_data_export(const RunData *run);

// The command without the folder of its program ("/x/build/bin/gptoss-engine serve ..." ->
// "gptoss-engine serve ..."), a pointer into command: what reports and exported result files
// show, so they read the same on every machine (manifest.json keeps the full command).
const char *run_command_without_folder(const char *command);

#endif
