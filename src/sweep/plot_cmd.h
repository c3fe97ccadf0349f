// plot_cmd.h: the `gptoss-bench plot` subcommand (manual: README.md).
#ifndef GB_SWEEP_PLOT_CMD_H
#define GB_SWEEP_PLOT_CMD_H

int plot_cmd_main(int argc, char **argv);

#endif
