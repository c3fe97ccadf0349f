// dataset_select.h: --dataset-name and its flags -> the workload (dataset.h), with vLLM
// v0.10.2's log lines; and the check of which dataset names and flags gptoss-bench supports.
#ifndef GB_BENCH_DATASET_SELECT_H
#define GB_BENCH_DATASET_SELECT_H

#include <stdbool.h>
#include <stdio.h>

#include "bench/bench_options.h"
#include "bench/dataset.h"

// False with a message naming the flag when --dataset-name (and its path and flags) cannot be
// served: an unknown name, a name gptoss-bench refuses (hf, random-mm, spec_bench), a dataset
// that needs --dataset-path without one, or --random-batch-size above 1.
bool dataset_check_options(const BenchOptions *o, char *err, size_t err_size);

// Builds the workload o asks for, printing vLLM's lines about it to out.
bool dataset_from_options(const BenchOptions *o, const Tokenizer *tok, FILE *out, Dataset *d,
                          char *err, size_t err_size);

#endif
