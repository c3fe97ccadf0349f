// sweep_grid.h: parameter grids in a sweep file, as `vllm bench sweep` offers them. An engine's
// `args.FLAG = V1, V2, ...` and a workload's `KEY = V1, V2, ...` are axes; a section with axes
// of two or more values stands for the product of its values (the first axis varies slowest),
// each point a section of its own named ID.FLAG-VALUE[.FLAG-VALUE...] and labelled
// "LABEL (FLAG=VALUE, ...)". Expands parsed sections in place; reads no file, checks no flag
// (sweep_file.c does both).
#ifndef GB_SWEEP_SWEEP_GRID_H
#define GB_SWEEP_SWEEP_GRID_H

#include <stdbool.h>
#include <stddef.h>

#include "sweep/sweep_file.h"

// Most points one section may expand to.
#define SWEEP_GRID_MAX_POINTS 4096

// "a, b ,c" -> {"a", "b", "c"} (blanks around each value trimmed), appended to axis->values.
// False when a value is empty ("a,,b", a trailing comma).
bool sweep_grid_split(SweepAxis *axis, const char *value);

// The points of every workload with axes replace it, in place, in file order. False with err
// (without the file's name: the caller adds it) when a section has too many points or a point's
// id is another section's.
bool sweep_grid_expand_workloads(SweepFile *f, char *err, size_t err_size);

// The same for engines; a point's command is the engine's words, then per axis `--FLAG VALUE`
// (VALUE true: `--FLAG` alone; false: nothing). An engine without a list keeps its id and gets
// its single-valued args.FLAG words the same way.
bool sweep_grid_expand_engines(SweepFile *f, char *err, size_t err_size);

// Whether id names section `id` itself or is the grid base of `id`'s point.
bool sweep_grid_matches(const char *wanted, const char *id, const SweepGridOrigin *grid);

void sweep_axes_free(SweepAxis *axes, size_t num_axes);
void sweep_grid_origin_free(SweepGridOrigin *g);

#endif
