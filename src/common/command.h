// command.h: runs a program by argv (no shell) and collects what it prints, for the few tools
// the harness drives by command (Slurm's sbatch, squeue, scancel). Knows nothing of them.
#ifndef GB_COMMON_COMMAND_H
#define GB_COMMON_COMMAND_H

#include <stdbool.h>

#include "common/buf.h"

// True when name (no '/') is an executable file in one of PATH's folders.
bool command_on_path(const char *name);

// Runs argv[0] (looked up in PATH) with argv, stdin from /dev/null, and appends its stdout and
// stderr, interleaved as written, to out. Returns its exit status (0-255), 127 when it could not
// be started (out says why), 128 + N when signal N killed it.
int command_run(char *const *argv, Buf *out);

#endif
