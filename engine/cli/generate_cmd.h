// generate_cmd.h: `gptoss-engine generate`: one prompt in, one JSON line out.
#ifndef GE_CLI_GENERATE_CMD_H
#define GE_CLI_GENERATE_CMD_H

int generate_cmd_main(int argc, char **argv);

#endif
