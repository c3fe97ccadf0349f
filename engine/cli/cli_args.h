// cli_args.h: number flags for the engine's subcommands: parsed whole and range-checked, or the
// command dies with a message naming the subcommand, the flag and the allowed range.
#ifndef GE_CLI_CLI_ARGS_H
#define GE_CLI_CLI_ARGS_H

long cli_parse_long(const char *command, const char *flag, const char *value, long lo, long hi);
double cli_parse_double(const char *command, const char *flag, const char *value, double lo,
                        double hi);

#endif
