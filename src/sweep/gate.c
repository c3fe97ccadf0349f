// gate.c: the gate's comparison and table (see gate.h). Medians decide; the min-max spread over
// repeats only adds a note, so a noisy change is visible but judged the same way.
#include "sweep/gate.h"

#include <math.h>
#include <string.h>

#include "common/buf.h"

// Slack so that a drop of exactly --max-drop passes despite rounding in the division.
#define GATE_EPS_PCT 1e-9

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

int gate_metric_direction(const char *key) {
  if (strstr(key, "throughput") || strstr(key, "goodput") || strcmp(key, "completed") == 0 ||
      strcmp(key, "max_output_tokens_per_s") == 0)
    return 1;
  if (ends_with(key, "_ms") || strcmp(key, "duration") == 0 ||
      strcmp(key, "failed_requests") == 0)
    return -1;
  return 0;
}

typedef struct {
  size_t num_rows;
  size_t num_regressions;
  Buf missing;  // "engine/workload, ..." the candidate lacks
} GateTally;

static void print_row(FILE *out, const char *engine, const char *workload, const char *metric,
                      const char *base, const char *cand, const char *change,
                      const char *verdict) {
  fprintf(out, "%-22s %-14s %-30s %14s %14s %9s  %s\n", engine, workload, metric, base, cand,
          change, verdict);
}

// One metric of an (engine, workload) pair as the gate judges it: per GPU when asked, and
// divided by the reference engine's median on the same workload when ref >= 0. num_values 0:
// the metric (or the reference's) is missing or the reference's is 0.
static RunStat judged_stat(const RunData *r, size_t engine, size_t workload, const char *metric,
                           bool per_gpu, long ref) {
  RunStat s = run_data_stat(run_data_pair(r, engine, workload), metric);
  double scale = per_gpu ? r->engines[engine].gpus : 1;
  if (ref >= 0) {
    RunStat rs = run_data_stat(run_data_pair(r, (size_t)ref, workload), metric);
    if (rs.num_values == 0 || rs.median == 0) s.num_values = 0;
    scale *= rs.median / (per_gpu ? r->engines[ref].gpus : 1);
  }
  if (s.num_values > 0) {
    s.median /= scale;
    s.min /= scale;
    s.max /= scale;
  }
  return s;
}

static void judge(FILE *out, GateTally *t, const RunData *b, size_t be, size_t bw,
                  const RunData *c, size_t ce, size_t cw, const char *metric,
                  const GateOptions *o, long bref, long cref) {
  int dir = gate_metric_direction(metric);
  bool per_gpu = o->per_gpu && dir > 0 && strstr(metric, "throughput");
  RunStat bs = judged_stat(b, be, bw, metric, per_gpu, bref);
  RunStat cs = judged_stat(c, ce, cw, metric, per_gpu, cref);
  char name[160], bt[48], ct[48], change[32] = "-", verdict[160];
  snprintf(name, sizeof name, "%s%s%s%s", metric, per_gpu ? "/GPU" : "",
           o->relative_to ? " / " : "", o->relative_to ? o->relative_to : "");
  const char *engine = b->engines[be].id, *workload = b->workloads[bw].id;
  t->num_rows++;
  if (bs.num_values == 0 || cs.num_values == 0) {
    snprintf(verdict, sizeof verdict, "MISSING: no \"%s\" in the %s%s", metric,
             bs.num_values == 0 ? "baseline" : "candidate", o->relative_to ? " or its reference" : "");
    print_row(out, engine, workload, name, bs.num_values ? "" : "-", cs.num_values ? "" : "-",
              change, verdict);
    buf_printf(&t->missing, "%s%s/%s (%s)", t->missing.len ? ", " : "", engine, workload, metric);
    return;
  }
  const char *format = o->relative_to ? "%.3f" : "%.2f";  // ratios near 1 need more digits
  snprintf(bt, sizeof bt, format, bs.median);
  snprintf(ct, sizeof ct, format, cs.median);
  double change_pct = bs.median != 0 ? (cs.median - bs.median) / fabs(bs.median) * 100 : 0;
  if (bs.median != 0) snprintf(change, sizeof change, "%+.1f%%", change_pct);
  double drop_pct = dir > 0 ? -change_pct : change_pct;
  bool regression = drop_pct > o->max_drop_pct + GATE_EPS_PCT;
  const char *word = regression ? "REGRESSION" : drop_pct < -o->max_drop_pct ? "improved" : "ok";
  t->num_regressions += regression;
  bool spread = (bs.num_values > 1 || cs.num_values > 1) && cs.min <= bs.max && bs.min <= cs.max;
  snprintf(verdict, sizeof verdict, "%s%s", word,
           spread ? " (within the measured spread)" : "");
  print_row(out, engine, workload, name, bt, ct, change, verdict);
}

// The reference engine's index in run, or -1 with the reason in why when it cannot serve as one.
static long reference_index(const RunData *run, const char *id, const char *which, Buf *why) {
  long i = run_data_engine_index(run, id);
  if (i < 0) {
    buf_printf(why, "the %s %s has no engine '%s' (engines:", which, run->path, id);
    for (size_t e = 0; e < run->num_engines; e++) buf_printf(why, " %s", run->engines[e].id);
    buf_printf(why, ")");
  } else if (run_data_engine_failed(&run->engines[i])) {
    const char *error = run->engines[i].error;
    buf_printf(why, "the reference engine '%s' failed in the %s: %s", id, which,
               error ? error : "(no error line recorded)");
    i = -1;
  }
  return i;
}

// "baseline: PATH (CPU, commit)": which machine and code made each side.
static void print_machine(FILE *out, const char *which, const RunData *run) {
  const char *cpu = json_string_value(json_object_get(run->manifest, "cpu"));
  const char *commit = json_string_value(json_object_get(run->manifest, "git_commit"));
  fprintf(out, "%s: %s (cpu: %s, commit %.12s)\n", which, run->path, cpu ? cpu : "not recorded",
          commit ? commit : "not recorded");
}

GateResult gate_run(FILE *out, const RunData *baseline, const RunData *candidate,
                    const GateOptions *o) {
  GateTally t = {0};
  long bref = -1, cref = -1;
  if (o->relative_to) {
    Buf why = {0};
    bref = reference_index(baseline, o->relative_to, "baseline", &why);
    if (bref >= 0) cref = reference_index(candidate, o->relative_to, "candidate", &why);
    if (cref < 0) {
      fprintf(out, "gate: UNUSABLE: --relative-to %s: %s\n", o->relative_to, why.data);
      buf_free(&why);
      return GATE_UNUSABLE;
    }
  }
  print_machine(out, "baseline", baseline);
  print_machine(out, "candidate", candidate);
  print_row(out, "engine", "workload", "metric", "baseline", "candidate", "change", "verdict");
  for (size_t e = 0; e < baseline->num_engines; e++)
    for (size_t w = 0; w < baseline->num_workloads; w++) {
      if (run_data_pair(baseline, e, w)->num_results == 0 || (long)e == bref) continue;
      const char *eid = baseline->engines[e].id, *wid = baseline->workloads[w].id;
      long ce = run_data_engine_index(candidate, eid);
      long cw = run_data_workload_index(candidate, wid);
      if (ce >= 0 && run_data_engine_failed(&candidate->engines[ce])) {
        const char *error = candidate->engines[ce].error;
        char verdict[512];
        snprintf(verdict, sizeof verdict, "REGRESSION: the engine failed: %s",
                 error ? error : "(no error line recorded)");
        print_row(out, eid, wid, "-", "", "-", "-", verdict);
        t.num_rows++;
        t.num_regressions++;
        continue;
      }
      if (ce < 0 || cw < 0 || run_data_pair(candidate, (size_t)ce, (size_t)cw)->num_results == 0) {
        print_row(out, eid, wid, "-", "", "-", "-", "MISSING in the candidate");
        buf_printf(&t.missing, "%s%s/%s", t.missing.len ? ", " : "", eid, wid);
        continue;
      }
      for (size_t m = 0; m < o->num_metrics; m++)
        judge(out, &t, baseline, e, w, candidate, (size_t)ce, (size_t)cw, o->metrics[m], o, bref,
              cref);
    }
  char mode[192] = "";
  if (o->relative_to)
    snprintf(mode, sizeof mode, " (ratios to engine '%s' of the same run)", o->relative_to);
  GateResult result = GATE_PASS;
  if (t.missing.len > 0) {
    fprintf(out, "gate: UNUSABLE: missing pairs: %s\n", t.missing.data);
    result = GATE_UNUSABLE;
  } else if (t.num_rows == 0) {
    fprintf(out, "gate: UNUSABLE: the baseline %s has no results\n", baseline->path);
    result = GATE_UNUSABLE;
  } else if (t.num_regressions > 0) {
    fprintf(out, "gate: FAIL: %zu regression%s (more than %.1f%% worse)%s\n", t.num_regressions,
            t.num_regressions == 1 ? "" : "s", o->max_drop_pct, mode);
    result = GATE_REGRESSION;
  } else {
    fprintf(out, "gate: PASS: %zu comparison%s within %.1f%%%s\n", t.num_rows,
            t.num_rows == 1 ? "" : "s", o->max_drop_pct, mode);
  }
  buf_free(&t.missing);
  return result;
}
