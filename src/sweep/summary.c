// summary.c: summary.md's tables and summary.csv (see summary.h). Layout follows the study's
// tables in seed-study.md; with repeats a cell reads "median (min-max)".
#include "sweep/summary.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/file.h"
#include "sweep/plot_pareto.h"

// Markdown table text: '|' would end the cell, newlines the row.
static void cell_text(Buf *out, const char *s) {
  for (; s && *s; s++) {
    if (*s == '|') buf_append_str(out, "\\|");
    else buf_append_byte(out, *s == '\n' ? ' ' : (uint8_t)*s);
  }
}

static void cell_stat(Buf *out, RunStat s, double scale) {
  if (s.num_values == 0) {
    buf_append_str(out, " - |");
  } else if (s.num_values == 1) {
    buf_printf(out, " %.2f |", s.median / scale);
  } else {
    buf_printf(out, " %.2f (%.2f-%.2f) |", s.median / scale, s.min / scale, s.max / scale);
  }
}

static void cell_failed(Buf *out, const RunEngine *e) {
  buf_append_str(out, " failed: ");
  cell_text(out, e->error ? e->error : "(no error line recorded)");
  buf_append_str(out, " |");
}

static size_t first_workload(const RunData *run, const char *id) {
  long w = id ? run_data_workload_index(run, id) : 0;
  return w < 0 ? 0 : (size_t)w;
}

static void engine_table(Buf *out, const RunData *run) {
  size_t w = 0;
  static const char *const KEYS[] = {"request_throughput", "output_throughput", "mean_ttft_ms",
                                     "mean_tpot_ms", "mean_itl_ms", "duration"};
  buf_printf(out, "## Engine choice (%s)\n", run->workloads[w].label);
  buf_append_str(out,
                 "| engine | GPUs | total tok/s | per GPU | req/s | output tok/s | mean TTFT ms "
                 "| mean TPOT ms | mean ITL ms | duration s |\n"
                 "|---|---|---|---|---|---|---|---|---|---|\n");
  for (size_t e = 0; e < run->num_engines; e++) {
    const RunEngine *eng = &run->engines[e];
    const RunPair *p = run_data_pair(run, e, w);
    if (!p->given) continue;  // the engine was never to run it
    buf_append_str(out, "| ");
    cell_text(out, eng->label);
    buf_printf(out, " | %d |", eng->gpus);
    if (run_data_engine_failed(eng)) {
      cell_failed(out, eng);
      for (size_t i = 0; i < 7; i++) buf_append_str(out, " - |");
    } else {
      RunStat total = run_data_stat(p, "total_token_throughput");
      cell_stat(out, total, 1);
      cell_stat(out, total, eng->gpus);
      for (size_t i = 0; i < sizeof KEYS / sizeof *KEYS; i++)
        cell_stat(out, run_data_stat(p, KEYS[i]), 1);
    }
    buf_append_str(out, "\n");
  }
}

// A comparison's gain as a fraction (best candidate), or NAN with *failed set to the engine
// whose error explains why nothing could be measured (NULL: no data, no error).
static double comparison_gain(const RunData *run, const RunComparison *c,
                              const RunEngine **failed) {
  size_t w = first_workload(run, c->workload);
  long b = run_data_engine_index(run, c->base);
  const RunEngine *base = &run->engines[b];
  *failed = run_data_engine_failed(base) ? base : NULL;
  RunStat bs = run_data_stat(run_data_pair(run, (size_t)b, w), "total_token_throughput");
  double best = NAN;
  for (size_t i = 0; i < c->num_candidates; i++) {
    long e = run_data_engine_index(run, c->candidates[i]);
    const RunEngine *eng = &run->engines[e];
    if (run_data_engine_failed(eng) && !*failed) *failed = eng;
    RunStat cs = run_data_stat(run_data_pair(run, (size_t)e, w), "total_token_throughput");
    if (cs.num_values == 0 || bs.num_values == 0 || bs.median <= 0) continue;
    double scale = c->per_gpu ? (double)base->gpus / eng->gpus : 1;
    double gain = cs.median * scale / bs.median - 1;
    if (isnan(best) || gain > best) best = gain;
  }
  return best;
}

static void cell_gain(Buf *out, const RunData *run, const RunComparison *c) {
  const RunEngine *failed;
  double gain = comparison_gain(run, c, &failed);
  if (isnan(gain) && failed)
    cell_failed(out, failed);
  else if (isnan(gain) || gain <= 0)
    buf_append_str(out, " - |");
  else
    buf_printf(out, " %+.1f%%%s |", gain * 100, c->per_gpu ? " (per GPU)" : "");
}

static const RunComparison *find_comparison(const RunData *run, const char *name) {
  for (size_t i = 0; run && i < run->num_comparisons; i++)
    if (strcmp(run->comparisons[i].name, name) == 0) return &run->comparisons[i];
  return NULL;
}

static void options_table(Buf *out, const RunData *run, const RunData *compare) {
  if (run->num_comparisons == 0) return;
  buf_append_str(out, "\n## Summary of options\n| option | throughput gain |");
  if (compare) buf_printf(out, " %s |", compare->name);
  buf_append_str(out, compare ? "\n|---|---|---|\n" : "\n|---|---|\n");
  for (size_t i = 0; i < run->num_comparisons; i++) {
    const RunComparison *c = &run->comparisons[i];
    buf_append_str(out, "| ");
    cell_text(out, c->name);
    buf_append_str(out, " |");
    cell_gain(out, run, c);
    if (compare) {
      const RunComparison *other = find_comparison(compare, c->name);
      if (other) cell_gain(out, compare, other);
      else buf_append_str(out, " (not in that run) |");
    }
    buf_append_str(out, "\n");
  }
}

// (optimized / its GPUs) / (baseline / its GPUs) - 1 for one workload id, NAN when missing.
static double change_per_gpu(const RunData *run, const char *workload_id) {
  long w = run_data_workload_index(run, workload_id);
  if (!run->baseline || !run->optimized || w < 0) return NAN;
  long b = run_data_engine_index(run, run->baseline), o = run_data_engine_index(run, run->optimized);
  RunStat bs = run_data_stat(run_data_pair(run, (size_t)b, (size_t)w), "total_token_throughput");
  RunStat os = run_data_stat(run_data_pair(run, (size_t)o, (size_t)w), "total_token_throughput");
  if (bs.num_values == 0 || os.num_values == 0 || bs.median <= 0) return NAN;
  return (os.median / run->engines[o].gpus) / (bs.median / run->engines[b].gpus) - 1;
}

static void cell_change(Buf *out, double change) {
  if (isnan(change)) buf_append_str(out, " - |");
  else buf_printf(out, " %+.1f%% |", change * 100);
}

static void describe_engine(Buf *out, const char *what, const RunEngine *e) {
  buf_printf(out, "%s: %s", what, e->label);
  if (e->command) buf_printf(out, " (`%s`)", run_command_without_folder(e->command));
  buf_printf(out, ", %d GPU%s.\n", e->gpus, e->gpus == 1 ? "" : "s");
}

static void baseline_table(Buf *out, const RunData *run, const RunData *compare) {
  if (!run->baseline || !run->optimized) return;
  size_t b = (size_t)run_data_engine_index(run, run->baseline);
  size_t o = (size_t)run_data_engine_index(run, run->optimized);
  const RunEngine *base = &run->engines[b], *opt = &run->engines[o];
  buf_append_str(out, "\n## Baseline vs optimized, all workloads\n");
  describe_engine(out, "Baseline", base);
  describe_engine(out, "Optimized", opt);
  buf_printf(out,
             "\"change per GPU\" compares per-GPU total throughput: (optimized / %d) / "
             "(baseline / %d) - 1.\n",
             opt->gpus, base->gpus);
  buf_append_str(out, "| workload | baseline total tok/s | baseline mean TPOT ms | optimized "
                      "total tok/s | optimized mean TPOT ms | change per GPU |");
  if (compare) buf_printf(out, " %s change per GPU |", compare->name);
  buf_append_str(out, compare ? "\n|---|---|---|---|---|---|---|\n" : "\n|---|---|---|---|---|---|\n");
  for (size_t w = 0; w < run->num_workloads; w++) {
    const RunPair *bp = run_data_pair(run, b, w), *op = run_data_pair(run, o, w);
    buf_append_str(out, "| ");
    cell_text(out, run->workloads[w].label);
    buf_append_str(out, " |");
    cell_stat(out, run_data_stat(bp, "total_token_throughput"), 1);
    cell_stat(out, run_data_stat(bp, "mean_tpot_ms"), 1);
    cell_stat(out, run_data_stat(op, "total_token_throughput"), 1);
    cell_stat(out, run_data_stat(op, "mean_tpot_ms"), 1);
    cell_change(out, change_per_gpu(run, run->workloads[w].id));
    if (compare) cell_change(out, change_per_gpu(compare, run->workloads[w].id));
    buf_append_str(out, "\n");
  }
}

static void compare_table(Buf *out, const RunData *run, const RunData *compare) {
  static const char *const KEYS[] = {"total_token_throughput", "mean_ttft_ms", "mean_tpot_ms"};
  buf_printf(out, "\n## Compared with %s\n", compare->name);
  buf_printf(out, "Pairs found in both; change = this run / %s - 1 (medians).\n", compare->name);
  buf_printf(out, "| engine | workload | metric | this run | %s | change |\n", compare->name);
  buf_append_str(out, "|---|---|---|---|---|---|\n");
  for (size_t e = 0; e < run->num_engines; e++)
    for (size_t w = 0; w < run->num_workloads; w++) {
      long ce = run_data_engine_index(compare, run->engines[e].id);
      long cw = run_data_workload_index(compare, run->workloads[w].id);
      if (ce < 0 || cw < 0) continue;
      for (size_t k = 0; k < sizeof KEYS / sizeof *KEYS; k++) {
        RunStat mine = run_data_stat(run_data_pair(run, e, w), KEYS[k]);
        RunStat theirs =
            run_data_stat(run_data_pair(compare, (size_t)ce, (size_t)cw), KEYS[k]);
        if (mine.num_values == 0 || theirs.num_values == 0) continue;
        buf_printf(out, "| %s | %s | %s |", run->engines[e].id, run->workloads[w].id, KEYS[k]);
        cell_stat(out, mine, 1);
        cell_stat(out, theirs, 1);
        cell_change(out, theirs.median > 0 ? mine.median / theirs.median - 1 : NAN);
        buf_append_str(out, "\n");
      }
    }
}

// Per workload grid (plot_pareto.c's: two or more charted points): a row per configuration
// given the grid, a column per point, cells "per-GPU total tok/s / mean TPOT ms" (medians).
static void grid_tables(Buf *out, const RunData *run) {
  const char *grids[64];
  size_t num_grids = pareto_grids(run, grids, sizeof grids / sizeof *grids);
  for (size_t g = 0; g < num_grids; g++) {
    buf_printf(out, "\n## Grid %s: per-GPU total tok/s / mean TPOT ms\n| configuration |", grids[g]);
    size_t num_points = 0;
    for (size_t w = 0; w < run->num_workloads; w++)
      if (pareto_in_grid(run, w, grids[g])) {
        buf_append_byte(out, ' ');
        cell_text(out, run->workloads[w].grid_point);
        buf_append_str(out, " |");
        num_points++;
      }
    buf_append_str(out, "\n|---|");
    for (size_t k = 0; k < num_points; k++) buf_append_str(out, "---|");
    buf_append_byte(out, '\n');
    for (size_t e = 0; e < run->num_engines; e++) {
      bool given = false;
      for (size_t w = 0; w < run->num_workloads; w++)
        given |= pareto_in_grid(run, w, grids[g]) && run_data_pair(run, e, w)->given;
      if (!given) continue;
      buf_append_str(out, "| ");
      cell_text(out, run->engines[e].label);
      buf_append_str(out, " |");
      for (size_t w = 0; w < run->num_workloads; w++) {
        if (!pareto_in_grid(run, w, grids[g])) continue;
        double x, y;
        if (pareto_point(run, e, w, &x, &y)) buf_printf(out, " %.2f / %.2f |", x, y);
        else buf_append_str(out, " - |");
      }
      buf_append_byte(out, '\n');
    }
  }
}

static void result_blocks(Buf *out, const RunData *run) {
  buf_append_str(out, "\n## Result blocks\n");
  for (size_t e = 0; e < run->num_engines; e++) {
    const RunEngine *eng = &run->engines[e];
    if (run_data_engine_failed(eng)) {
      buf_printf(out, "\n### %s: failed\n", eng->label);
      buf_printf(out, "```\n%s\n```\n", eng->error ? eng->error : "(no error line recorded)");
      continue;
    }
    for (size_t w = 0; w < run->num_workloads; w++) {
      const RunPair *p = run_data_pair(run, e, w);
      if (p->num_results == 0 && p->given)
        buf_printf(out, "\n### %s / %s\n(no result)\n", eng->label, run->workloads[w].label);
      for (size_t k = 0; k < p->num_results; k++) {
        buf_printf(out, "\n### %s / %s", eng->label, run->workloads[w].label);
        if (p->num_results > 1) buf_printf(out, " (repeat %zu of %zu)", k + 1, p->num_results);
        buf_append_str(out, "\n```\n");
        summary_render_block(out, p->results[k]);
        buf_append_str(out, "```\n");
      }
    }
  }
}

// "Machine: CPU (ISA flags; N usable CPUs), commit C." when the run recorded them: which machine
// made these numbers (throughput is only comparable on the same one).
static void machine_line(Buf *out, const RunData *run) {
  const char *cpu = json_string_value(json_object_get(run->manifest, "cpu"));
  const char *commit = json_string_value(json_object_get(run->manifest, "git_commit"));
  if (!cpu && !commit) return;
  buf_printf(out, "Machine: %s", cpu ? cpu : "CPU not recorded");
  json_t *detail = json_object_get(run->manifest, "cpu_detail");
  if (json_is_object(detail)) {
    size_t i;
    json_t *flag;
    buf_append_str(out, " (");
    json_array_foreach(json_object_get(detail, "isa"), i, flag)
        buf_printf(out, "%s%s", i ? " " : "", json_string_value(flag));
    buf_printf(out, "; %lld usable CPUs)",
               (long long)json_integer_value(json_object_get(detail, "usable_cpus")));
  }
  buf_printf(out, ", commit %.12s.\n\n", commit ? commit : "not recorded");
}

void summary_render_md(Buf *out, const RunData *run, const RunData *compare) {
  buf_printf(out, "# %s\n\n", run->name);
  machine_line(out, run);
  if (run->repeat > 1)
    buf_printf(out, "Each pair ran %d times: cells show the median and (min-max).\n\n",
               run->repeat);
  if (run->num_workloads > 0) engine_table(out, run);
  options_table(out, run, compare);
  baseline_table(out, run, compare);
  if (compare) compare_table(out, run, compare);
  grid_tables(out, run);
  result_blocks(out, run);
}

static void csv_text(Buf *out, const char *s) {
  if (!s) return;
  if (!strpbrk(s, ",\"\n")) {
    buf_append_str(out, s);
    return;
  }
  buf_append_byte(out, '"');
  for (; *s; s++) {
    if (*s == '"') buf_append_byte(out, '"');
    buf_append_byte(out, (uint8_t)*s);
  }
  buf_append_byte(out, '"');
}

static void csv_number(Buf *out, RunStat s, double scale) {
  if (s.num_values > 0) buf_printf(out, ",%.2f", s.median / scale);
  else buf_append_str(out, ",");
}

void summary_render_csv(Buf *out, const RunData *run) {
  static const char *const KEYS[] = {"completed", "duration", "request_throughput",
                                     "output_throughput", "mean_ttft_ms", "mean_tpot_ms",
                                     "mean_itl_ms"};
  buf_append_str(out, "engine,workload,gpus,status,repeats,total_token_throughput,"
                      "total_token_throughput_min,total_token_throughput_max,"
                      "total_token_throughput_per_gpu,completed,duration_s,request_throughput,"
                      "output_throughput,mean_ttft_ms,mean_tpot_ms,mean_itl_ms,error\n");
  for (size_t e = 0; e < run->num_engines; e++)
    for (size_t w = 0; w < run->num_workloads; w++) {
      const RunEngine *eng = &run->engines[e];
      const RunPair *p = run_data_pair(run, e, w);
      csv_text(out, eng->id);
      buf_append_byte(out, ',');
      csv_text(out, run->workloads[w].id);
      buf_printf(out, ",%d,%s,%zu", eng->gpus, eng->status, p->num_results);
      RunStat total = run_data_stat(p, "total_token_throughput");
      csv_number(out, total, 1);
      if (total.num_values > 0) buf_printf(out, ",%.2f,%.2f", total.min, total.max);
      else buf_append_str(out, ",,");
      csv_number(out, total, eng->gpus);
      for (size_t i = 0; i < sizeof KEYS / sizeof *KEYS; i++)
        csv_number(out, run_data_stat(p, KEYS[i]), 1);
      buf_append_byte(out, ',');
      csv_text(out, eng->error);
      buf_append_byte(out, '\n');
    }
}

bool summary_write(const char *run_dir, const char *compare_path, char *err, size_t err_size) {
  RunData run, compare;
  bool have_compare = compare_path != NULL;
  memset(&compare, 0, sizeof compare);
  bool ok = run_data_load(&run, run_dir, err, err_size);
  if (ok && have_compare) ok = run_data_load(&compare, compare_path, err, err_size);
  Buf md = {0}, csv = {0}, path = {0};
  if (ok) {
    summary_render_md(&md, &run, have_compare ? &compare : NULL);
    summary_render_csv(&csv, &run);
    buf_printf(&path, "%s/summary.md", run_dir);
    ok = file_write_atomic(path.data, md.data, md.len, err, err_size);
    buf_clear(&path);
    buf_printf(&path, "%s/summary.csv", run_dir);
    ok = ok && file_write_atomic(path.data, csv.data, csv.len, err, err_size);
  }
  run_data_free(&compare);
  run_data_free(&run);
  buf_free(&md);
  buf_free(&csv);
  buf_free(&path);
  return ok;
}
