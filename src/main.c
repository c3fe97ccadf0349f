// main.c: the gptoss-bench command line: picks the subcommand and hands it its arguments.
// Each subcommand lives beside the module it drives; nothing else happens here.
#include <stdio.h>
#include <string.h>

#include "bench/bench_cmd.h"
#include "bench/dataset_cmd.h"
#include "bench/mock_server_cmd.h"
#include "common/check.h"
#include "sweep/sweep_cmd.h"
#include "sweep/gate_cmd.h"
#include "sweep/plot_cmd.h"
#include "sweep/report_cmd.h"
#include "text/tokenize_cmd.h"

typedef struct {
  const char *name;
  int (*run)(int argc, char **argv);  // argv[0] is the subcommand's name
  const char *summary;
} Subcommand;

static const Subcommand SUBCOMMANDS[] = {
    {"bench", bench_cmd_main, "load generator, a drop-in for `vllm bench serve`"},
    {"tokenize", tokenize_cmd_main, "text <-> o200k_base / o200k_harmony token ids"},
    {"dataset", dataset_cmd_main, "dataset files: sharegpt-synth (a ShareGPT stand-in)"},
    {"mock-server", mock_server_cmd_main, "OpenAI-compatible streaming server with set timing"},
    {"sweep", sweep_cmd_main, "run a sweep file: engines x workloads -> a run folder"},
    {"report", report_cmd_main, "a run's summary.md and summary.csv (the study's tables)"},
    {"plot", plot_cmd_main, "a run's charts with gnuplot (PNG and SVG)"},
    {"gate", gate_cmd_main, "CI gate: compare a run with a baseline, exit 1 on regression"},
};

static void usage(FILE *out) {
  fprintf(out, "usage: gptoss-bench <command> [options]   (gptoss-bench <command> --help)\n\n");
  for (size_t i = 0; i < sizeof SUBCOMMANDS / sizeof *SUBCOMMANDS; i++)
    fprintf(out, "  %-12s %s\n", SUBCOMMANDS[i].name, SUBCOMMANDS[i].summary);
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (size_t i = 0; i < sizeof SUBCOMMANDS / sizeof *SUBCOMMANDS; i++)
    if (strcmp(argv[1], SUBCOMMANDS[i].name) == 0) return SUBCOMMANDS[i].run(argc - 1, argv + 1);
  fprintf(stderr, "gptoss-bench: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
