// export_cmd.h: `gptoss-engine export-checkpoint`: a preset's dummy weights as a checkpoint folder.
#ifndef GE_CLI_EXPORT_CMD_H
#define GE_CLI_EXPORT_CMD_H

int export_cmd_main(int argc, char **argv);

#endif
