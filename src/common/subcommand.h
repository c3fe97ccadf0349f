// subcommand.h: the `program <command> [options]` dispatch both binaries share: usage text,
// --help, unknown commands. Knows nothing of any command.
#ifndef GB_COMMON_SUBCOMMAND_H
#define GB_COMMON_SUBCOMMAND_H

#include <stddef.h>

typedef struct {
  const char *name;
  int (*run)(int argc, char **argv);  // argv[0] is the subcommand's name
  const char *summary;
} Subcommand;

// Runs the command argv[1] names with argv[1..]; prints usage for none/--help (exit 0 for
// --help, 2 for none) and for an unknown command (2).
int subcommand_dispatch(const char *program, const Subcommand *commands, size_t num_commands,
                        int argc, char **argv);

#endif
