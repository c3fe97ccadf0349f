// plot_pareto.c: the data and scripts of the Pareto charts of workload grids (plot_pareto.h).
// A point is one (configuration, grid point) pair's medians over its repeats: x = per-GPU total
// token throughput, y = mean TPOT.
#include "sweep/plot_pareto.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "sweep/plot.h"

void pareto_front(const double *x, const double *y, size_t n, bool *on_front) {
  for (size_t i = 0; i < n; i++) {
    on_front[i] = true;
    for (size_t j = 0; j < n && on_front[i]; j++)
      if (x[j] >= x[i] && y[j] <= y[i] && (x[j] > x[i] || y[j] < y[i])) on_front[i] = false;
  }
}

typedef struct {
  double x, y;     // per-GPU tok/s, mean TPOT ms
  size_t engine, workload;
} Point;

bool pareto_point(const RunData *run, size_t e, size_t w, double *x, double *y) {
  if (!plot_has_point(run, e, w)) return false;
  const RunPair *pair = run_data_pair(run, e, w);
  RunStat tput = run_data_stat(pair, "total_token_throughput");
  RunStat tpot = run_data_stat(pair, "mean_tpot_ms");
  if (tput.num_values == 0 || tpot.num_values == 0) return false;
  *x = tput.median / run->engines[e].gpus;
  *y = tpot.median;
  return true;
}

static bool point_of(const RunData *run, size_t e, size_t w, Point *p) {
  *p = (Point){.engine = e, .workload = w};
  return pareto_point(run, e, w, &p->x, &p->y);
}

bool pareto_in_grid(const RunData *run, size_t w, const char *base) {
  return run->workloads[w].grid_base && strcmp(run->workloads[w].grid_base, base) == 0;
}

// Every charted point of the grid, engine-major in the run's order; *n gets the count.
static Point *grid_points(const RunData *run, const char *base, size_t *n) {
  Point *points = xcalloc(run->num_engines * run->num_workloads + 1, sizeof *points);
  *n = 0;
  for (size_t e = 0; e < run->num_engines; e++)
    for (size_t w = 0; w < run->num_workloads; w++)
      if (pareto_in_grid(run, w, base) && point_of(run, e, w, &points[*n])) ++*n;
  return points;
}

size_t pareto_grids(const RunData *run, const char **bases, size_t max) {
  size_t num = 0;
  for (size_t w = 0; w < run->num_workloads && num < max; w++) {
    const char *base = run->workloads[w].grid_base;
    bool seen = false;
    for (size_t k = 0; base && k < num; k++) seen |= strcmp(bases[k], base) == 0;
    if (!base || seen) continue;
    size_t n;
    free(grid_points(run, base, &n));
    if (n >= 2) bases[num++] = base;
  }
  return num;
}

static int by_throughput(const void *a, const void *b) {
  const Point *p = a, *q = b;
  return (p->x > q->x) - (p->x < q->x);
}

void pareto_write(const RunData *run, const char *base, Buf *data, Buf *script) {
  size_t n;
  Point *points = grid_points(run, base, &n);
  double *x = xcalloc(n + 1, sizeof *x), *y = xcalloc(n + 1, sizeof *y);
  bool *on_front = xcalloc(n + 1, sizeof *on_front);
  for (size_t i = 0; i < n; i++) x[i] = points[i].x, y[i] = points[i].y;
  pareto_front(x, y, n, &on_front[0]);
  Buf body = {0}, chart = {0};
  buf_printf(&chart, "pareto-%s", base);
  buf_printf(&body,
             "set title 'Throughput against latency over the points of workload grid %s "
             "(Pareto front dashed)' noenhanced\n"
             "set xlabel 'total tok/s per GPU'\nset ylabel 'mean TPOT (ms)'\n"
             "set xrange [0:*]\nset yrange [0:*]\nset offsets 0, graph 0.15, graph 0.1, 0\n"
             "set grid\nset key outside right top noenhanced\nplot ",
             base);
  size_t num_blocks = 0;
  for (size_t i = 0; i < n; i++) {  // one index block per engine: its points in workload order
    if (i == 0 || points[i].engine != points[i - 1].engine) {
      if (i) buf_append_str(data, "\n\n");
      buf_printf(data, "# %s: per-GPU total tok/s, mean TPOT ms, point\n",
                 run->engines[points[i].engine].id);
      buf_printf(&body, "'%s.dat' index %zu using 1:2 with linespoints pt 7 ps 1.3 title ",
                 chart.data, num_blocks);
      plot_quoted(&body, run->engines[points[i].engine].label);
      buf_printf(&body, ", \\\n     '' index %zu using 1:2:3 with labels offset 0.6,0.6 left "
                        "font 'sans,8' noenhanced notitle, \\\n     ", num_blocks++);
    }
    buf_printf(data, "%.2f %.2f ", points[i].x, points[i].y);
    plot_quoted(data, run->workloads[points[i].workload].grid_point);
    buf_append_byte(data, '\n');
  }
  Point *front = xcalloc(n + 1, sizeof *front);
  size_t num_front = 0;
  for (size_t i = 0; i < n; i++)
    if (on_front[i]) front[num_front++] = points[i];
  qsort(front, num_front, sizeof *front, by_throughput);
  buf_append_str(data, "\n\n# Pareto front: per-GPU total tok/s, mean TPOT ms, configuration\n");
  for (size_t i = 0; i < num_front; i++) {
    buf_printf(data, "%.2f %.2f ", front[i].x, front[i].y);
    plot_quoted(data, run->engines[front[i].engine].label);
    buf_append_byte(data, '\n');
  }

  buf_printf(&body, "'%s.dat' index %zu using 1:2 with linespoints dt 2 lw 2 pt 6 ps 2.4 lc 'black' "
                    "title 'Pareto front'\n", chart.data, num_blocks);
  plot_script_outputs(script, chart.data, "1400,800", body.data);
  buf_free(&body);
  buf_free(&chart);
  free(front);
  free(on_front);
  free(x);
  free(y);
  free(points);
}
