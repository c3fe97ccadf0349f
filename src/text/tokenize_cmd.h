// tokenize_cmd.h: the `gptoss-bench tokenize` subcommand.
#ifndef GB_TEXT_TOKENIZE_CMD_H
#define GB_TEXT_TOKENIZE_CMD_H

int tokenize_cmd_main(int argc, char **argv);

#endif
