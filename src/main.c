// main.c: the gptoss-bench command line: picks the subcommand and hands it its arguments.
// Each subcommand lives beside the module it drives; nothing else happens here.
#include "bench/bench_cmd.h"
#include "bench/dataset_cmd.h"
#include "bench/mock_server_cmd.h"
#include "common/check.h"
#include "common/subcommand.h"
#include "sweep/sweep_cmd.h"
#include "sweep/gate_cmd.h"
#include "sweep/plot_cmd.h"
#include "sweep/report_cmd.h"
#include "text/tokenize_cmd.h"

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

int main(int argc, char **argv) {
  return subcommand_dispatch("gptoss-bench", SUBCOMMANDS, sizeof SUBCOMMANDS / sizeof *SUBCOMMANDS,
                             argc, argv);
}
