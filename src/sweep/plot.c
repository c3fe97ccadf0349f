// plot.c: the data files and gnuplot scripts of a run's charts, and the gnuplot runs (see
// plot.h). Scripts name their files relative to the plots folder, so `cd plots && gnuplot
// throughput.gp` redraws a chart by hand.
#include "sweep/plot.h"

#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/file.h"
#include "sweep/plot_pareto.h"

extern char **environ;

static const char *const CHARTS[] = {"throughput", "latency", "tradeoff"};
#define PLOT_MAX_GRIDS 64  // Pareto charts (pareto-<grid>) at most

// A quoted gnuplot string (labels may hold spaces; double quotes become single ones).
void plot_quoted(Buf *out, const char *s) {
  buf_append_byte(out, '"');
  for (; *s; s++) buf_append_byte(out, *s == '"' ? '\'' : (uint8_t)*s);
  buf_append_byte(out, '"');
}

static void engine_label(Buf *out, const RunData *run, size_t e) {
  const RunEngine *eng = &run->engines[e];
  Buf label = {0};
  buf_append_str(&label, eng->label);
  if (run->baseline && strcmp(run->baseline, eng->id) == 0) buf_append_str(&label, " [baseline]");
  if (run->optimized && strcmp(run->optimized, eng->id) == 0)
    buf_append_str(&label, " [optimized]");
  plot_quoted(out, label.data);
  buf_free(&label);
}

// A chart shows a pair when its engine did not fail and it has a throughput: gnuplot refuses a
// column or index block without one valid point (an interrupted run, a failed engine).
bool plot_has_point(const RunData *run, size_t e, size_t w) {
  return !run_data_engine_failed(&run->engines[e]) &&
         run_data_stat(run_data_pair(run, e, w), "total_token_throughput").num_values > 0;
}

static bool engine_charted(const RunData *run, size_t e) {
  for (size_t w = 0; w < run->num_workloads; w++)
    if (plot_has_point(run, e, w)) return true;
  return false;
}

static bool workload_charted(const RunData *run, size_t w) {
  for (size_t e = 0; e < run->num_engines; e++)
    if (plot_has_point(run, e, w)) return true;
  return false;
}

static size_t num_charted_workloads(const RunData *run) {
  size_t n = 0;
  for (size_t w = 0; w < run->num_workloads; w++) n += workload_charted(run, w);
  return n;
}

// One row per engine with a point, one column per workload with one: the median of key / scale.
static void write_matrix(Buf *out, const RunData *run, const char *key, bool per_gpu) {
  buf_append_str(out, "engine");
  for (size_t w = 0; w < run->num_workloads; w++) {
    if (!workload_charted(run, w)) continue;
    buf_append_byte(out, ' ');
    plot_quoted(out, run->workloads[w].label);
  }
  buf_append_byte(out, '\n');
  for (size_t e = 0; e < run->num_engines; e++) {
    if (!engine_charted(run, e)) continue;
    engine_label(out, run, e);
    for (size_t w = 0; w < run->num_workloads; w++) {
      if (!workload_charted(run, w)) continue;
      RunStat s = run_data_stat(run_data_pair(run, e, w), key);
      double scale = per_gpu ? run->engines[e].gpus : 1;
      if (s.num_values > 0) buf_printf(out, " %.2f", s.median / scale);
      else buf_append_str(out, " NaN");
    }
    buf_append_byte(out, '\n');
  }
}

// Per workload (a gnuplot index block): per-GPU total tok/s, mean TPOT ms, engine label.
static void write_tradeoff(Buf *out, const RunData *run) {
  for (size_t w = 0; w < run->num_workloads; w++) {
    if (!workload_charted(run, w)) continue;
    buf_append_str(out, "# ");
    buf_append_str(out, run->workloads[w].id);
    buf_append_str(out, ": per-GPU total tok/s, mean TPOT ms, engine\n");
    for (size_t e = 0; e < run->num_engines; e++) {
      const RunPair *p = run_data_pair(run, e, w);
      RunStat x = run_data_stat(p, "total_token_throughput"), y = run_data_stat(p, "mean_tpot_ms");
      if (x.num_values == 0 || y.num_values == 0) continue;
      buf_printf(out, "%.2f %.2f ", x.median / run->engines[e].gpus, y.median);
      plot_quoted(out, run->engines[e].label);
      buf_append_byte(out, '\n');
    }
    buf_append_str(out, "\n\n");
  }
}

// The script draws once per terminal: PNG, then SVG. Output names start with the variable
// `out` (run_gnuplot sets a temporary prefix, then renames: no chart is ever seen half
// written; by hand it is empty).
void plot_script_outputs(Buf *gp, const char *chart, const char *size, const char *body) {
  buf_append_str(gp, "if (!exists(\"out\")) out = ''\n");
  buf_printf(gp, "set terminal pngcairo size %s enhanced font 'sans,11'\n", size);
  buf_printf(gp, "set output out.'%s.png'\n%s", chart, body);
  buf_printf(gp, "set terminal svg size %s dynamic enhanced font 'sans,11'\n", size);
  buf_printf(gp, "set output out.'%s.svg'\n%sunset output\n", chart, body);
}

static const char HISTOGRAM_STYLE[] =
    "set style data histogram\n"
    "set style histogram clustered gap 1\n"
    "set style fill solid 0.85 border -1\n"
    "set boxwidth 0.9\n"
    "set key outside right top noenhanced\n"
    "set xtics rotate by 15 right noenhanced\n"
    "set grid ytics\n"
    "set yrange [0:*]\n"
    "set offsets 0, 0, graph 0.08, 0\n"
    "set bmargin 10\n";

static void write_scripts(Buf *gp, const RunData *run, const char *chart) {
  Buf body = {0};
  size_t n = num_charted_workloads(run);
  if (strcmp(chart, "throughput") == 0) {
    buf_printf(&body, "%sset title 'Total token throughput per GPU (tok/s), by configuration "
                      "and workload' noenhanced\nset ylabel 'tok/s per GPU'\n", HISTOGRAM_STYLE);
    buf_printf(&body, "plot for [i=2:%zu] 'throughput.dat' using i:xtic(1) title columnhead(i)\n",
               n + 1);
    plot_script_outputs(gp, chart, "1400,720", body.data);
  } else if (strcmp(chart, "latency") == 0) {
    buf_printf(&body, "set multiplot layout 2,1\n%s", HISTOGRAM_STYLE);
    buf_printf(&body, "set title 'Mean time to first token (ms)'\nset ylabel 'ms'\n"
                      "plot for [i=2:%zu] 'ttft.dat' using i:xtic(1) title columnhead(i)\n",
               n + 1);
    buf_printf(&body, "set title 'Mean time per output token (ms)'\n"
                      "plot for [i=2:%zu] 'tpot.dat' using i:xtic(1) title columnhead(i)\n"
                      "unset multiplot\n",
               n + 1);
    plot_script_outputs(gp, chart, "1400,1100", body.data);
  } else {
    buf_append_str(&body, "set title 'Throughput against latency (one point per configuration "
                          "and workload)' noenhanced\n"
                          "set xlabel 'total tok/s per GPU'\nset ylabel 'mean TPOT (ms)'\n"
                          "set xrange [0:*]\nset yrange [0:*]\n"
                          "set grid\nset key outside right top noenhanced\n"
                          "set offsets graph 0.05, graph 0.2, graph 0.08, graph 0.05\n");
    buf_append_str(&body, "names = \"");
    for (size_t w = 0, k = 0; w < run->num_workloads; w++)
      if (workload_charted(run, w)) buf_printf(&body, "%s%s", k++ ? " " : "", run->workloads[w].id);
    buf_printf(&body, "\"\nplot for [i=1:%zu] 'tradeoff.dat' index (i-1) using 1:2 with points "
                      "pt 7 ps 1.6 title word(names, i), \\\n"
                      "     for [i=1:%zu] 'tradeoff.dat' index (i-1) using 1:2:3 with labels "
                      "offset 0.8,0.6 left font 'sans,9' noenhanced notitle\n",
               n, n);
    plot_script_outputs(gp, chart, "1400,800", body.data);
  }
  buf_free(&body);
}

static bool write_file(const char *dir, const char *name, const Buf *b, char *err,
                       size_t err_size) {
  Buf path = {0};
  buf_printf(&path, "%s/%s", dir, name);
  bool ok = file_write_atomic(path.data, b->data ? b->data : "", b->len, err, err_size);
  buf_free(&path);
  return ok;
}

// The data and scripts of the fixed charts, then of the Pareto chart of each of grids[num_grids].
static bool write_inputs(const RunData *run, const char *dir, const char *const *grids,
                         size_t num_grids, char *err, size_t err_size) {
  Buf data[4] = {{0}};
  static const char *const NAMES[] = {"throughput.dat", "ttft.dat", "tpot.dat", "tradeoff.dat"};
  write_matrix(&data[0], run, "total_token_throughput", true);
  write_matrix(&data[1], run, "mean_ttft_ms", false);
  write_matrix(&data[2], run, "mean_tpot_ms", false);
  write_tradeoff(&data[3], run);
  bool ok = true;
  for (size_t i = 0; i < 4; i++) {
    ok = ok && write_file(dir, NAMES[i], &data[i], err, err_size);
    buf_free(&data[i]);
  }
  for (size_t i = 0; ok && i < sizeof CHARTS / sizeof *CHARTS; i++) {
    Buf gp = {0}, name = {0};
    buf_printf(&name, "%s.gp", CHARTS[i]);
    write_scripts(&gp, run, CHARTS[i]);
    ok = write_file(dir, name.data, &gp, err, err_size);
    buf_free(&gp);
    buf_free(&name);
  }
  for (size_t i = 0; ok && i < num_grids; i++) {
    Buf dat = {0}, gp = {0}, dat_name = {0}, gp_name = {0};
    pareto_write(run, grids[i], &dat, &gp);
    buf_printf(&dat_name, "pareto-%s.dat", grids[i]);
    buf_printf(&gp_name, "pareto-%s.gp", grids[i]);
    ok = write_file(dir, dat_name.data, &dat, err, err_size) &&
         write_file(dir, gp_name.data, &gp, err, err_size);
    buf_free(&dat);
    buf_free(&gp);
    buf_free(&dat_name);
    buf_free(&gp_name);
  }
  return ok;
}

#define PARTIAL_PREFIX ".partial-"

// dir/<PARTIAL_PREFIX>chart.ext -> dir/chart.ext for both outputs; with keep false, removes them.
static bool finish_outputs(const char *dir, const char *chart, bool keep, char *err,
                           size_t err_size) {
  bool ok = true;
  for (int i = 0; i < 2; i++) {
    const char *ext = i ? "svg" : "png";
    Buf from = {0}, to = {0};
    buf_printf(&from, "%s/%s%s.%s", dir, PARTIAL_PREFIX, chart, ext);
    buf_printf(&to, "%s/%s.%s", dir, chart, ext);
    if (!keep) unlink(from.data);
    else if (ok && rename(from.data, to.data) != 0) {
      snprintf(err, err_size, "cannot write %s: %s", to.data, strerror(errno));
      ok = false;
    }
    buf_free(&from);
    buf_free(&to);
  }
  return ok;
}

static bool run_gnuplot(const char *dir, const char *gnuplot, const char *chart, char *err,
                        size_t err_size) {
  char script[320];
  snprintf(script, sizeof script, "%s.gp", chart);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addchdir_np(&actions, dir);
  char *argv[] = {(char *)gnuplot, "-e", "out='" PARTIAL_PREFIX "'", script, NULL};
  pid_t pid;
  int rc = posix_spawnp(&pid, gnuplot, &actions, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == ENOENT) {
    snprintf(err, err_size,
             "%s not found: install the Debian package %s (apt-get install %s, or make deps); "
             "the data and .gp files are in %s",
             gnuplot, PLOT_PACKAGE, PLOT_PACKAGE, dir);
    return false;
  }
  int status = 0;
  if (rc != 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    snprintf(err, err_size, "%s failed on %s/%s (%s); its message is above", gnuplot, dir, script,
             rc != 0 ? strerror(rc) : "non-zero exit");
    finish_outputs(dir, chart, false, err, err_size);
    return false;
  }
  return finish_outputs(dir, chart, true, err, err_size);
}

bool plot_write_dir(const RunData *run, const char *plots_dir, const char *gnuplot, char *err,
                    size_t err_size) {
  if (mkdir(plots_dir, 0755) != 0 && errno != EEXIST) {
    snprintf(err, err_size, "%s: cannot create: %s", plots_dir, strerror(errno));
    return false;
  }
  const char *grids[PLOT_MAX_GRIDS];
  size_t num_grids = pareto_grids(run, grids, PLOT_MAX_GRIDS);
  if (!write_inputs(run, plots_dir, grids, num_grids, err, err_size)) return false;
  if (num_charted_workloads(run) == 0) {
    snprintf(err, err_size, "nothing to chart: no engine that did not fail has a result");
    return false;
  }
  for (size_t i = 0; i < sizeof CHARTS / sizeof *CHARTS; i++)
    if (!run_gnuplot(plots_dir, gnuplot, CHARTS[i], err, err_size)) return false;
  for (size_t i = 0; i < num_grids; i++) {
    char chart[300];
    snprintf(chart, sizeof chart, "pareto-%s", grids[i]);
    if (!run_gnuplot(plots_dir, gnuplot, chart, err, err_size)) return false;
  }
  return true;
}

bool plot_write(const char *run_dir, char *err, size_t err_size) {
  RunData run;
  bool ok = run_data_load(&run, run_dir, err, err_size);
  if (ok) {
    Buf dir = {0};
    buf_printf(&dir, "%s/plots", run_dir);
    ok = plot_write_dir(&run, dir.data, PLOT_GNUPLOT, err, err_size);
    buf_free(&dir);
  }
  run_data_free(&run);
  return ok;
}
