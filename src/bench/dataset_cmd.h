// dataset_cmd.h: the `gptoss-bench dataset` subcommand (dataset files for the benchmark).
#ifndef GB_BENCH_DATASET_CMD_H
#define GB_BENCH_DATASET_CMD_H

int dataset_cmd_main(int argc, char **argv);

#endif
