// sweep_file.h: sweep files (INI, read with inih): the schema, its defaults and its validation.
// Every error names the file, the line, the section and the key. Owns the parsed description
// only; it starts nothing and knows nothing of processes or HTTP.
//
// Schema (README.md "gptoss-bench sweep" has the long form):
//   [sweep]          name, repeat (1), rounds (1), baseline, optimized (engine ids), base_port
//                    (0: a free port per engine), stop_grace (10 s)
//   [engine.ID]      label, gpus (1), ready_timeout (600 s), workloads (ids; default all),
//                    env.NAME = value (added to the environment, no shell), and either
//                    model + args (the built-in gptoss-engine: `serve MODEL --port {port} ARGS`)
//                    or command (an external server; must contain {port}); args.FLAG = V1, V2
//                    (--FLAG V appended; a list makes the engine a grid, sweep_grid.h)
//   [workload.ID]    label; every other key is a `gptoss-bench bench` flag without "--"
//                    (KEY = true for a switch; KEY = V1, V2 a grid); host, port, base-url and
//                    result flags are the sweep's
//   [compare.ID]     label, base, candidate (engine ids), per_gpu (false)
//   [slurm]          for `sweep --slurm`: max_jobs (0: no limit), poll_interval (5 s), gres
//                    (gpu: --gres=gpu:N for an engine of N gpus; none; or a literal GRES), and
//                    any other key an sbatch option; [engine.ID] slurm.KEY = VALUE likewise
#ifndef GB_SWEEP_SWEEP_FILE_H
#define GB_SWEEP_SWEEP_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

// One sbatch option: [slurm] KEY = VALUE or [engine.ID] slurm.KEY = VALUE, passed as
// --KEY=VALUE (true: --KEY; false: not passed, also where [slurm] gave it). KEY is as sbatch
// spells it ('_' read as '-').
typedef struct {
  char *key, *value;
} SweepSlurmOption;

// One grid axis: a flag and its values, in the file's order (one value: no grid, just a flag).
typedef struct {
  char *flag;                // without "--", e.g. "max-num-batched-tokens"
  char **values;             // [num_values] "2048", "true", "false", "inf", ...
  size_t num_values;
  int line;
} SweepAxis;

// Where a grid point came from: the section's id and "FLAG=VALUE" per axis of 2+ values.
typedef struct {
  char *base;                // NULL: not a grid point
  char *point;               // "max-num-batched-tokens=2048, async-scheduling=true"
} SweepGridOrigin;

typedef struct {
  char *id;                  // from [engine.ID]; a grid point's: ID.FLAG-VALUE...
  char *label;               // default: the id
  int line;                  // of the section's first key
  int gpus;                  // for per-GPU figures
  int ready_timeout_sec;
  char *model;               // built-in engine: the model; NULL for a command
  char **words;              // [num_words] the command, or the built-in engine's extra args
  size_t num_words;          //   ({port} not yet substituted)
  char **env;                // [num_env] "NAME=value"
  size_t num_env;
  bool *runs;                // [num_workloads of the file] which workloads this engine runs
  SweepSlurmOption *slurm;   // [num_slurm] its sbatch options, over [slurm]'s
  size_t num_slurm;
  SweepAxis *axes;           // [num_axes] its args.FLAG keys (expanded: one value each)
  size_t num_axes;
  SweepGridOrigin grid;
} SweepEngine;

typedef struct {
  char *id;                  // from [workload.ID]
  char *label;
  int line;
  char *dataset_name;        // random | sharegpt (bench's default: random)
  char **args;               // [num_args] "bench" then the flags; bench_options_parse reads it
  int num_args;
  SweepAxis *axes;           // [num_axes] its keys with a list of values (expanded: none)
  size_t num_axes;
  SweepGridOrigin grid;
} SweepWorkload;

typedef struct {
  char *id;
  char *label;               // e.g. "async scheduling"
  int line;                  // of the section's first key
  size_t base, candidate;    // engine indexes
  bool per_gpu;
} SweepComparison;

typedef struct {
  SweepSlurmOption *options;  // [num_options] sbatch options for every engine's job
  size_t num_options;
  int max_jobs;               // jobs queued or running at once; 0: no limit
  int poll_interval_sec;      // between two squeue calls
  char *gres;                 // "gpu" (--gres=gpu:N from the engine's gpus), "none", or a GRES
} SweepSlurm;

typedef struct {
  char *path;
  Buf text;                  // the file as read (for the run's manifest)
  char *name;                // default: the file's base name without ".ini"
  int repeat;                // runs of each workload in a row, per engine start
  int rounds;                // passes over the engine list (each starts every engine again), so
                             // a drift in the machine's speed hits every engine alike
  int base_port;             // 0: pick a free port per engine
  int stop_grace_sec;
  long baseline, optimized;  // engine indexes, -1 when not given
  SweepEngine *engines;
  size_t num_engines;
  SweepWorkload *workloads;
  size_t num_workloads;
  SweepComparison *comparisons;
  size_t num_comparisons;
  SweepSlurm slurm;          // used by `sweep --slurm` only
} SweepFile;

// Reads and validates path. False with "FILE:LINE: [SECTION] KEY: what is wrong" in err.
bool sweep_file_load(SweepFile *f, const char *path, char *err, size_t err_size);
// The same for text already in memory (path only names it in errors).
bool sweep_file_parse(SweepFile *f, const char *path, const char *text, char *err, size_t err_size);
void sweep_file_free(SweepFile *f);
// One section's memory (sweep_file_free calls these; so does the grid expansion).
void sweep_engine_free(SweepEngine *e);
void sweep_workload_free(SweepWorkload *w);

// s with every "{port}" replaced by port (malloc'd); port < 0 leaves "{port}" in place.
char *sweep_subst_port(const char *s, int port);

// The argv (NULL-terminated, malloc'd strings) that starts engine e on port: the command's words,
// or engine_bin, "serve", the model, "--port", port, then the args (port < 0: "{port}", for
// display). Free with sweep_argv_free.
char **sweep_engine_argv(const SweepEngine *e, const char *engine_bin, int port);
void sweep_argv_free(char **argv);
// That argv joined with blanks (malloc'd): the command as the manifest and the plan show it.
char *sweep_engine_command(const SweepEngine *e, const char *engine_bin, int port);

#endif
