// plot.h: a run's charts: gnuplot data files (.dat) and scripts (.gp), then gnuplot run as a
// process (posix_spawn, no shell) in the plots folder to draw each chart as PNG and SVG:
// per-GPU total tok/s per configuration and workload (grouped bars, baseline and optimized
// marked), mean TTFT and TPOT per configuration, throughput against latency, and a Pareto
// chart per workload grid (plot_pareto.h). Draws nothing
// itself and never exits; the data and scripts are written even when gnuplot is missing. Every
// file appears whole: ours through file_write_atomic, gnuplot's under a temporary name renamed
// once gnuplot succeeded (removed when it fails).
#ifndef GB_SWEEP_PLOT_H
#define GB_SWEEP_PLOT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "sweep/run_data.h"

#define PLOT_GNUPLOT "gnuplot"  // found on PATH
#define PLOT_PACKAGE "gnuplot-nox"

// Writes the .dat and .gp files to plots_dir (created if needed), then runs gnuplot (a program
// name searched on PATH, or a path) on each script. False with err when a file cannot be written,
// gnuplot is missing (the error names the package) or gnuplot fails (the error names the script).
bool plot_write_dir(const RunData *run, const char *plots_dir, const char *gnuplot, char *err,
                    size_t err_size);

// Loads run_dir and draws into run_dir/plots: the call the sweep makes at the end of a run.
bool plot_write(const char *run_dir, char *err, size_t err_size);

// For the charts of plot_pareto.c: s as a gnuplot string; whether the (engine, workload) pair
// has a point (its engine did not fail and it has a throughput); a script's terminal and output
// lines around its body (PNG, then SVG, named out.'chart.ext').
void plot_quoted(Buf *out, const char *s);
bool plot_has_point(const RunData *run, size_t e, size_t w);
void plot_script_outputs(Buf *gp, const char *chart, const char *size, const char *body);

#endif
