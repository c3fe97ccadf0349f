// bench_run.h: one load-generator run as a library call: parsed `bench` options -> workload ->
// ready check -> warmups -> the timed run -> vLLM's report and, when asked, the result JSON.
// Used by `gptoss-bench bench` and, in-process, by the sweep. Never exits: every failure comes
// back as a message (the same text the bench command dies with).
#ifndef GB_BENCH_BENCH_RUN_H
#define GB_BENCH_BENCH_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "bench/bench_options.h"
#include "text/tokenizer.h"

typedef struct {
  FILE *out;                // the report and vLLM's progress lines (stdout for the CLI)
  const Tokenizer *tok;     // o200k_harmony, owned by the caller (loaded once per process)
  const char *result_path;  // non-NULL: write the result JSON here, whatever the options say
  const volatile int *cancel;  // if not NULL and set (a signal handler): the run stops early, no
                               // request is sent after it, and bench_run fails ("cancelled")
  const char *progress_label;  // non-NULL (the sweep): the requests' progress bar on stderr with
                               // this label, as plain lines when stderr is not a terminal
                               // (NULL: a bar on a terminal only, as vLLM's tqdm)
} BenchRunIo;

// Runs the benchmark that o describes. o->model may be NULL (the first id of GET /v1/models).
// False with err filled ("bench: ..." or vLLM's "Initial test run failed ..." text).
bool bench_run(const BenchOptions *o, const BenchRunIo *io, char *err, size_t err_size);

#endif
