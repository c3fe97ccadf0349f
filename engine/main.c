// main.c: the gptoss-engine command line: picks the subcommand and hands it its arguments.
#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "cli/generate_cmd.h"
#include "cli/serve_cmd.h"

typedef struct {
  const char *name;
  int (*run)(int argc, char **argv);  // argv[0] is the subcommand's name
  const char *summary;
} Subcommand;

static const Subcommand SUBCOMMANDS[] = {
    {"serve", serve_cmd_main, "OpenAI-compatible server (flags compatible with vllm serve)"},
    {"generate", generate_cmd_main, "offline generation of one prompt (JSON line out)"},
};

static void usage(FILE *out) {
  fprintf(out, "usage: gptoss-engine <command> [options]   (gptoss-engine <command> --help)\n\n");
  for (size_t i = 0; i < sizeof SUBCOMMANDS / sizeof *SUBCOMMANDS; i++)
    fprintf(out, "  %-10s %s\n", SUBCOMMANDS[i].name, SUBCOMMANDS[i].summary);
}

int main(int argc, char **argv) {
  check_set_program("gptoss-engine");
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (size_t i = 0; i < sizeof SUBCOMMANDS / sizeof *SUBCOMMANDS; i++)
    if (strcmp(argv[1], SUBCOMMANDS[i].name) == 0) return SUBCOMMANDS[i].run(argc - 1, argv + 1);
  fprintf(stderr, "gptoss-engine: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
