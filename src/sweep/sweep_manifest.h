// sweep_manifest.h: a run folder's manifest.json (the sweep file and its text, times, the host,
// each engine's command, pid, status and error), written atomically, whole, each time the sweep
// changes state. Writes that one file only; decides nothing.
#ifndef GB_SWEEP_SWEEP_MANIFEST_H
#define GB_SWEEP_SWEEP_MANIFEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sweep/sweep_file.h"

// An engine's job in a `sweep --slurm` run, as squeue (or sacct) last reported it.
typedef struct {
  long job_id;   // 0 while not submitted
  char *state;   // JobState: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
  char *reason;  // its Reason ("None" when none)
  char *node;    // where it runs or ran; NULL before that is known
  json_t *host;  // the node as the job's own sweep saw it (host, cpu, cpu_detail, gpu); NULL
                 // until the job wrote its manifest
} SweepSlurmJob;

typedef struct {
  const char *status;  // skipped (not selected) | pending (not reached yet; Slurm: queued) |
                       // running | ok | failed | interrupted
  char *error;         // the failure, with the engine's last error line; NULL when none
  char *command;       // its argv joined with blanks (for display; it never goes to a shell)
  long pid;            // also its process group; 0 while never started
  SweepSlurmJob *slurm;  // NULL in a local sweep
  json_t *results;     // the result files written, by name in the engine's folder
                       // ("sharegpt.r2.json"): what `sweep --resume` skips; NULL: not recorded
} SweepEngineState;

typedef struct {
  const SweepFile *f;
  const char *name;     // the run's name
  const char *run_dir;
  const char *path;     // where the manifest goes; NULL: run_dir/manifest.json
  char started[32];     // UTC, ISO 8601
  json_t *resumed;      // [UTC times] each `sweep --resume` of the run; NULL: never resumed
  json_t *host_info;    // sweep_host_info()
  const SweepEngineState *engines;  // [f->num_engines]
  bool interrupted, finished;
} SweepManifest;

// git commit, host, CPU, GPU and driver (nvidia-smi, else null), versions: a new object.
json_t *sweep_host_info(void);

// The time now in UTC, formatted by strftime's fmt.
void sweep_utc_now(char *out, size_t out_size, const char *fmt);

// The closing lines on stderr: "sweep: done|interrupted[ after ELAPSED]: RUN" and each engine's
// status and error (elapsed NULL: no time).
void sweep_print_outcome(const SweepManifest *m, const char *elapsed);

// Writes the manifest (m->path, else run_dir/manifest.json) atomically. False with err when it
// cannot be written.
bool sweep_manifest_write(const SweepManifest *m, char *err, size_t err_size);

#endif
