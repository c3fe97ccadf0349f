// mock_server_cmd.h: the `gptoss-bench mock-server` subcommand.
#ifndef GB_BENCH_MOCK_SERVER_CMD_H
#define GB_BENCH_MOCK_SERVER_CMD_H

int mock_server_cmd_main(int argc, char **argv);

#endif
