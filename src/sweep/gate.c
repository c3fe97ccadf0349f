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

static void format_stat(char *out, size_t size, RunStat s, double scale) {
  snprintf(out, size, "%.2f", s.median / scale);
}

static void judge(FILE *out, GateTally *t, const RunData *b, size_t be, size_t bw,
                  const RunData *c, size_t ce, size_t cw, const char *metric,
                  const GateOptions *o) {
  int dir = gate_metric_direction(metric);
  bool per_gpu = o->per_gpu && dir > 0 && strstr(metric, "throughput");
  RunStat bs = run_data_stat(run_data_pair(b, be, bw), metric);
  RunStat cs = run_data_stat(run_data_pair(c, ce, cw), metric);
  double bscale = per_gpu ? b->engines[be].gpus : 1, cscale = per_gpu ? c->engines[ce].gpus : 1;
  char name[96], bt[48], ct[48], change[32] = "-", verdict[160];
  snprintf(name, sizeof name, "%s%s", metric, per_gpu ? "/GPU" : "");
  const char *engine = b->engines[be].id, *workload = b->workloads[bw].id;
  t->num_rows++;
  if (bs.num_values == 0 || cs.num_values == 0) {
    snprintf(verdict, sizeof verdict, "MISSING: no \"%s\" in the %s", metric,
             bs.num_values == 0 ? "baseline" : "candidate");
    print_row(out, engine, workload, name, bs.num_values ? "" : "-", cs.num_values ? "" : "-",
              change, verdict);
    buf_printf(&t->missing, "%s%s/%s (%s)", t->missing.len ? ", " : "", engine, workload, metric);
    return;
  }
  double bv = bs.median / bscale, cv = cs.median / cscale;
  format_stat(bt, sizeof bt, bs, bscale);
  format_stat(ct, sizeof ct, cs, cscale);
  double change_pct = bv != 0 ? (cv - bv) / fabs(bv) * 100 : 0;
  if (bv != 0) snprintf(change, sizeof change, "%+.1f%%", change_pct);
  double drop_pct = dir > 0 ? -change_pct : change_pct;
  bool regression = drop_pct > o->max_drop_pct + GATE_EPS_PCT;
  const char *word = regression ? "REGRESSION" : drop_pct < -o->max_drop_pct ? "improved" : "ok";
  t->num_regressions += regression;
  bool spread = (bs.num_values > 1 || cs.num_values > 1) && cs.min / cscale <= bs.max / bscale &&
                bs.min / bscale <= cs.max / cscale;
  snprintf(verdict, sizeof verdict, "%s%s", word,
           spread ? " (within the measured spread)" : "");
  print_row(out, engine, workload, name, bt, ct, change, verdict);
}

GateResult gate_run(FILE *out, const RunData *baseline, const RunData *candidate,
                    const GateOptions *o) {
  GateTally t = {0};
  print_row(out, "engine", "workload", "metric", "baseline", "candidate", "change", "verdict");
  for (size_t e = 0; e < baseline->num_engines; e++)
    for (size_t w = 0; w < baseline->num_workloads; w++) {
      if (run_data_pair(baseline, e, w)->num_results == 0) continue;
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
        judge(out, &t, baseline, e, w, candidate, (size_t)ce, (size_t)cw, o->metrics[m], o);
    }
  GateResult result = GATE_PASS;
  if (t.missing.len > 0) {
    fprintf(out, "gate: UNUSABLE: missing pairs: %s\n", t.missing.data);
    result = GATE_UNUSABLE;
  } else if (t.num_rows == 0) {
    fprintf(out, "gate: UNUSABLE: the baseline %s has no results\n", baseline->path);
    result = GATE_UNUSABLE;
  } else if (t.num_regressions > 0) {
    fprintf(out, "gate: FAIL: %zu regression%s (more than %.1f%% worse)\n", t.num_regressions,
            t.num_regressions == 1 ? "" : "s", o->max_drop_pct);
    result = GATE_REGRESSION;
  } else {
    fprintf(out, "gate: PASS: %zu comparison%s within %.1f%%\n", t.num_rows,
            t.num_rows == 1 ? "" : "s", o->max_drop_pct);
  }
  buf_free(&t.missing);
  return result;
}
