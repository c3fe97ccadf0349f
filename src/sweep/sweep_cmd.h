// sweep_cmd.h: the `gptoss-bench sweep` subcommand.
#ifndef GB_SWEEP_SWEEP_CMD_H
#define GB_SWEEP_SWEEP_CMD_H

int sweep_cmd_main(int argc, char **argv);

#endif
