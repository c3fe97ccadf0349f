// sweep_run.h: one sweep: the run folder, each engine started, checked and stopped in turn, each
// of its workloads run `repeat` times by the in-process load generator (all of it `rounds`
// times over), the manifest rewritten atomically after every step, progress with an ETA on
// stderr, Ctrl-C handled. Leaves no process behind. Writes no summary (summary.c does, from the
// folder).
#ifndef GB_SWEEP_SWEEP_RUN_H
#define GB_SWEEP_SWEEP_RUN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sweep/sweep_file.h"

typedef struct {
  const char *results_dir;   // the run folder goes in here ("results")
  const char *name;          // NULL: the sweep file's name
  const bool *selected;      // [num_engines] engines to run (the others are "skipped")
  const char *engine_bin;    // the built-in engine's binary
  const char *into;          // NULL, or an existing run folder to write into (a Slurm job's,
                             // `sweep --into RUN`): results as usual, the manifest in
                             // into/<engine>/manifest.json; exactly one engine selected
  const char *resume;        // NULL, or an interrupted run folder to continue (`--resume RUN`)
  const json_t *resume_manifest;  // and its manifest.json: the result files it lists are kept
                             // and not run again; failed engines stay failed; the rest runs
} SweepRunOptions;

typedef enum { SWEEP_DONE, SWEEP_INTERRUPTED, SWEEP_ERROR } SweepOutcome;

// Makes results_dir (and its parents) and a new run folder NAME-<UTC time> in it, whose path
// run_dir gets. False with err saying what to change.
bool sweep_make_run_dir(const char *results_dir, const char *name, char *run_dir,
                        size_t run_dir_size, char *err, size_t err_size);

// Runs the sweep; run_dir gets the run folder's path. SWEEP_ERROR (err filled) only when the run
// folder or the manifest cannot be written; failed engines are recorded, not errors.
SweepOutcome sweep_run(const SweepFile *f, const SweepRunOptions *o, char *run_dir,
                       size_t run_dir_size, char *err, size_t err_size);

#endif
