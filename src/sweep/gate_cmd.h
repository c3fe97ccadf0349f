// gate_cmd.h: the `gptoss-bench gate` subcommand (manual: README.md).
#ifndef GB_SWEEP_GATE_CMD_H
#define GB_SWEEP_GATE_CMD_H

int gate_cmd_main(int argc, char **argv);

#endif
