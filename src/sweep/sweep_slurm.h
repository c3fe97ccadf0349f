// sweep_slurm.h: `gptoss-bench sweep FILE --slurm`: every selected engine of the sweep as one
// Slurm job on one node, run by this program's own local sweep for that engine
// (`sweep RUN/sweep.ini --only ID --into RUN`), so a job writes just what a local sweep would;
// the driver submits, reports, waits, cancels on Ctrl-C, and keeps RUN/manifest.json whole.
// Writes no summary (summary.c does, from the folder, as after a local sweep).
#ifndef GB_SWEEP_SWEEP_SLURM_H
#define GB_SWEEP_SWEEP_SLURM_H

#include <stdbool.h>
#include <stddef.h>

#include "sweep/sweep_file.h"
#include "sweep/sweep_run.h"

typedef struct {
  const char *results_dir;  // the run folder goes in here; every node must see it
  const char *name;         // NULL: the sweep file's name
  const bool *selected;     // [num_engines] engines to submit (the others are "skipped")
  const char *bench_bin;    // this program, as the jobs run it
  const char *engine_bin;   // the built-in engine's binary (for the commands in the manifest)
  const char *partition, *account, *time;  // sbatch's, over [slurm]'s; NULL: not given
  int max_jobs;             // jobs queued or running at once, over [slurm]'s; < 0: not given
} SweepSlurmOptions;

// sbatch's flags for engine e's job (e NULL: the probe job), NULL-terminated (free with
// sweep_argv_free): job name, output file in the engine's folder, --chdir=cwd, one node, no
// requeue, --gres from gres (gpu: gpu:N with the engine's gpus), then the sbatch options: o's
// partition/account/time over [slurm]'s, the engine's slurm.KEY over both (false: left out).
char **sweep_slurm_sbatch_flags(const SweepFile *f, const SweepSlurmOptions *o,
                                const SweepEngine *e, const char *run_dir, const char *cwd,
                                const char *name);

// Runs the sweep on Slurm; run_dir gets the run folder's path. SWEEP_ERROR (err filled) when
// Slurm's commands are missing, the run folder cannot be made, or a probe job shows that jobs
// cannot write into it; a job that fails, is cancelled or times out is that engine's failure.
SweepOutcome sweep_slurm_run(const SweepFile *f, const SweepSlurmOptions *o, char *run_dir,
                             size_t run_dir_size, char *err, size_t err_size);

#endif
