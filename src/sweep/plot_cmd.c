// plot_cmd.c: `gptoss-bench plot RUN_DIR`: flags and messages; the charts are plot.c's. Dies
// with a clear message (naming the gnuplot-nox package when gnuplot is missing).
#include "sweep/plot_cmd.h"

#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "sweep/plot.h"

static const char USAGE[] =
    "usage: gptoss-bench plot RUN_DIR\n"
    "  writes RUN_DIR/plots/: throughput, latency and tradeoff charts as .png and .svg, with\n"
    "  their gnuplot data (.dat) and scripts (.gp); needs gnuplot (Debian: " PLOT_PACKAGE ")\n";

int plot_cmd_main(int argc, char **argv) {
  if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    fputs(USAGE, stdout);
    return 0;
  }
  if (argc != 2 || argv[1][0] == '-') {
    fputs(USAGE, stderr);
    return 2;
  }
  char err[1024];
  if (!plot_write(argv[1], err, sizeof err)) die("plot: %s", err);
  printf("wrote %s/plots/{throughput,latency,tradeoff}.{png,svg}\n", argv[1]);
  return 0;
}
