// slurm.h: Slurm's client commands as the sweep drives them: sbatch submits a batch script,
// squeue reports job states (sacct once squeue has forgotten a job), scancel cancels. Argv
// only, never a shell; knows nothing of sweeps beyond the job record it fills.
#ifndef GB_SWEEP_SLURM_H
#define GB_SWEEP_SLURM_H

#include <stdbool.h>
#include <stddef.h>

#include "sweep/sweep_manifest.h"

// The first of sbatch, squeue and scancel that is not on PATH; NULL when all are.
const char *slurm_missing_command(void);

// sbatch --parsable OPTIONS... SCRIPT; *job_id gets the new job's id. False with sbatch's own
// message in err.
bool slurm_submit(char *const *options, size_t num_options, const char *script, long *job_id,
                  char *err, size_t err_size);

// Refreshes the state, reason and node of jobs[0 .. n) (submitted ones) from one squeue call;
// a job squeue no longer lists is asked of sacct, and is UNKNOWN (finished) when neither knows
// it. False with the message when squeue itself cannot answer (the caller tries again later).
bool slurm_poll(SweepSlurmJob *const *jobs, size_t n, char *err, size_t err_size);

// A state a job does not leave: COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, ...
bool slurm_state_is_final(const char *state);

// scancel for every id (errors are the caller's next poll's to see).
void slurm_cancel(const long *ids, size_t n);

#endif
