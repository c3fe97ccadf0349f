// serve_cmd.h: `gptoss-engine serve`: the OpenAI-compatible server.
#ifndef GE_CLI_SERVE_CMD_H
#define GE_CLI_SERVE_CMD_H

int serve_cmd_main(int argc, char **argv);

#endif
