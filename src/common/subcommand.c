// subcommand.c: subcommand lookup and the usage listing.
#include "common/subcommand.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *out, const char *program, const Subcommand *commands, size_t n) {
  fprintf(out, "usage: %s <command> [options]   (%s <command> --help)\n\n", program, program);
  for (size_t i = 0; i < n; i++)
    fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
}

int subcommand_dispatch(const char *program, const Subcommand *commands, size_t num_commands,
                        int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout, program, commands, num_commands);
    return argc < 2 ? 2 : 0;
  }
  for (size_t i = 0; i < num_commands; i++)
    if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "%s: unknown command '%s'\n", program, argv[1]);
  usage(stderr, program, commands, num_commands);
  return 2;
}
