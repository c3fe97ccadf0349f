// plot_pareto.h: the throughput-against-latency curves of a grid sweep: for each workload grid
// (a [workload.ID] with a list of request rates or concurrencies, sweep_grid.h), one curve per
// configuration over its points (per-GPU total tok/s against mean TPOT), and the Pareto front
// of all of them marked (no other point is both faster and lower in latency). Writes the data
// and gnuplot script of each chart, pareto-<ID>.{dat,gp}; plot.c runs gnuplot. Decides nothing
// else and draws nothing itself.
#ifndef GB_SWEEP_PLOT_PARETO_H
#define GB_SWEEP_PLOT_PARETO_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "sweep/run_data.h"

// on_front[i] = whether point i (higher x better, lower y better) is not dominated: no j with
// x[j] >= x[i] and y[j] <= y[i], one of them strictly. Equal points are all on the front.
void pareto_front(const double *x, const double *y, size_t n, bool *on_front);

// The chart's point of the (engine e, workload w) pair: per-GPU total tok/s and mean TPOT ms,
// medians over its repeats; false when it has none (a failed engine, a missing metric).
bool pareto_point(const RunData *run, size_t e, size_t w, double *x, double *y);

// Whether workload w is a point of grid base.
bool pareto_in_grid(const RunData *run, size_t w, const char *base);

// The workload grids with at least two charted points: their base ids (borrowed from run), in
// order of first appearance. Returns how many (at most max).
size_t pareto_grids(const RunData *run, const char **bases, size_t max);

// The data (one gnuplot index block per configuration, then one for the front, sorted by
// throughput) and the script of the chart of grid `base`, drawn as pareto-<base>.png/.svg.
void pareto_write(const RunData *run, const char *base, Buf *data, Buf *script);

#endif
