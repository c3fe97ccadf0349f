// report_cmd.h: the `gptoss-bench report` subcommand (manual: README.md).
#ifndef GB_SWEEP_REPORT_CMD_H
#define GB_SWEEP_REPORT_CMD_H

int report_cmd_main(int argc, char **argv);

#endif
