// bench_cmd.h: the `gptoss-bench bench` subcommand (a drop-in for `vllm bench serve`).
#ifndef GB_BENCH_BENCH_CMD_H
#define GB_BENCH_BENCH_CMD_H

int bench_cmd_main(int argc, char **argv);

#endif
