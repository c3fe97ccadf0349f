// gate.c: the gate's comparison and table (see gate.h). A row regresses when the medians'
// change is worse than --max-drop and the Mann-Whitney p < --alpha; where the test cannot decide
// (one sample on a side, or too few on both to ever reach alpha) the medians alone decide and
// the row says so.
#include "sweep/gate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/stats.h"
#include "common/buf.h"
#include "common/check.h"
#include "sweep/rank_test.h"

// Slack so that a drop of exactly --max-drop passes despite rounding in the division.
#define GATE_EPS_PCT 1e-9
// How many candidate samples the closing hint looks through for one that can reach alpha.
#define GATE_MAX_HINT_SAMPLES 1000

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
  size_t num_noise;        // rows worse than --max-drop whose change the test put within noise
  size_t num_median_only;  // rows the rank test could not decide
  Buf median_only_why;     // why, for the first of them, with what would let the test decide
  Buf missing;             // "engine/workload, ..." the candidate lacks
} GateTally;

static void print_row(FILE *out, const char *engine, const char *workload, const char *metric,
                      const char *base, const char *cand, const char *change,
                      const char *samples, const char *p, const char *verdict) {
  fprintf(out, "%-22s %-14s %-30s %14s %14s %9s %7s %7s  %s\n", engine, workload, metric, base,
          cand, change, samples, p, verdict);
}

// The reference's value of the metric in the given repeat; NAN when that repeat has none.
static double repeat_value(const RunPair *pair, int repeat, const char *metric) {
  for (size_t i = 0; i < pair->num_results; i++) {
    json_t *v = json_object_get(pair->results[i], metric);
    if (pair->repeats[i] == repeat && json_is_number(v)) return json_number_value(v);
  }
  return NAN;
}

// One metric of an (engine, workload) pair as the gate judges it, one value per repeat into
// values[pair's num_results]: per GPU when asked, and divided by the reference engine's value of
// the same repeat when ref >= 0 (a repeat the reference lacks, or where its value is 0, is left
// out). Returns the number of values; 0: the metric (or the reference's) is missing.
static size_t judged_values(const RunData *r, size_t engine, size_t workload, const char *metric,
                            bool per_gpu, long ref, double *values) {
  const RunPair *pair = run_data_pair(r, engine, workload);
  const RunPair *ref_pair = ref >= 0 ? run_data_pair(r, (size_t)ref, workload) : NULL;
  double scale = per_gpu ? r->engines[engine].gpus : 1;
  double ref_scale = per_gpu && ref >= 0 ? r->engines[ref].gpus : 1;
  size_t num = 0;
  for (size_t i = 0; i < pair->num_results; i++) {
    json_t *v = json_object_get(pair->results[i], metric);
    if (!json_is_number(v)) continue;
    double x = json_number_value(v) / scale;
    if (ref_pair) {
      double d = repeat_value(ref_pair, pair->repeats[i], metric);
      if (isnan(d) || d == 0) continue;
      x /= d / ref_scale;
    }
    values[num++] = x;
  }
  return num;
}

static double median(const double *values, size_t num) {
  double *sorted = stats_sorted_copy(values, num);
  double m = stats_median(sorted, num);
  free(sorted);
  return m;
}

// Why the rank test cannot decide between nb baseline and nc candidate samples at alpha, into
// why (a row's note); "" when it can. The first such row also fills the tally's closing note.
static void median_only_reason(GateTally *t, size_t nb, size_t nc, double alpha, char *why,
                               size_t why_size) {
  why[0] = 0;
  if (nb < 2 || nc < 2) {
    snprintf(why, why_size, "median only: 1 sample%s",
             nb < 2 && nc < 2 ? " each" : nb < 2 ? " in the baseline" : " in the candidate");
    if (t->num_median_only++ == 0)
      buf_printf(&t->median_only_why, "a side with 1 sample, and the rank test needs 2 or more "
                 "on each: raise [sweep] repeat or rounds (a baseline: record it with --rounds)");
    return;
  }
  double min_p = rank_test_min_p(nb, nc);
  if (min_p < alpha) return;
  snprintf(why, why_size, "median only: %zu+%zu samples never give p < %g", nb, nc, alpha);
  if (t->num_median_only++ > 0) return;
  buf_printf(&t->median_only_why, "with %zu baseline and %zu candidate samples the smallest "
             "two-sided Mann-Whitney p is %.3g, never below --alpha %g; ", nb, nc, min_p, alpha);
  size_t needed = rank_test_samples_needed(nb, alpha, GATE_MAX_HINT_SAMPLES);
  if (needed > 0)
    buf_printf(&t->median_only_why, "with %zu baseline samples the candidate needs %zu (its "
               "[sweep] repeat x rounds)", nb, needed);
  else
    buf_printf(&t->median_only_why, "record the baseline with more rounds");
}

static void judge(FILE *out, GateTally *t, const RunData *b, size_t be, size_t bw,
                  const RunData *c, size_t ce, size_t cw, const char *metric,
                  const GateOptions *o, long bref, long cref) {
  int dir = gate_metric_direction(metric);
  bool per_gpu = o->per_gpu && dir > 0 && strstr(metric, "throughput");
  double *bv = xcalloc(run_data_pair(b, be, bw)->num_results + 1, sizeof *bv);
  double *cv = xcalloc(run_data_pair(c, ce, cw)->num_results + 1, sizeof *cv);
  size_t nb = judged_values(b, be, bw, metric, per_gpu, bref, bv);
  size_t nc = judged_values(c, ce, cw, metric, per_gpu, cref, cv);
  char name[160], bt[48], ct[48], change[32] = "-", samples[48], pt[32] = "-", why[160];
  char verdict[256];
  snprintf(name, sizeof name, "%s%s%s%s", metric, per_gpu ? "/GPU" : "",
           o->relative_to ? " / " : "", o->relative_to ? o->relative_to : "");
  snprintf(samples, sizeof samples, "%zu:%zu", nb, nc);
  const char *engine = b->engines[be].id, *workload = b->workloads[bw].id;
  t->num_rows++;
  if (nb == 0 || nc == 0) {
    snprintf(verdict, sizeof verdict, "MISSING: no \"%s\" in the %s%s", metric,
             nb == 0 ? "baseline" : "candidate", o->relative_to ? " or its reference" : "");
    print_row(out, engine, workload, name, nb ? "" : "-", nc ? "" : "-", change, samples, pt,
              verdict);
    buf_printf(&t->missing, "%s%s/%s (%s)", t->missing.len ? ", " : "", engine, workload, metric);
    free(bv);
    free(cv);
    return;
  }
  double bmed = median(bv, nb), cmed = median(cv, nc);
  const char *format = o->relative_to ? "%.3f" : "%.2f";  // ratios near 1 need more digits
  snprintf(bt, sizeof bt, format, bmed);
  snprintf(ct, sizeof ct, format, cmed);
  double change_pct = bmed != 0 ? (cmed - bmed) / fabs(bmed) * 100 : 0;
  if (bmed != 0) snprintf(change, sizeof change, "%+.1f%%", change_pct);
  double drop_pct = dir > 0 ? -change_pct : change_pct;
  bool worse = drop_pct > o->max_drop_pct + GATE_EPS_PCT, better = drop_pct < -o->max_drop_pct;
  median_only_reason(t, nb, nc, o->alpha, why, sizeof why);
  bool significant = true;  // the median rule alone where the test cannot decide
  if (!why[0]) {
    double p = rank_test_mann_whitney(cv, nc, bv, nb).p;
    snprintf(pt, sizeof pt, "%.2g", p);
    significant = p < o->alpha;
  }
  bool regression = worse && significant;
  const char *word = regression                ? "REGRESSION"
                     : better && significant   ? "improved"
                     : worse || better         ? "ok: within noise"
                                               : "ok";
  t->num_regressions += regression;
  t->num_noise += worse && !significant;
  snprintf(verdict, sizeof verdict, "%s%s%s%s", word, why[0] ? " (" : "", why, why[0] ? ")" : "");
  print_row(out, engine, workload, name, bt, ct, change, samples, pt, verdict);
  free(bv);
  free(cv);
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
  CHECK(o->alpha > 0 && o->alpha < 1);
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
  print_row(out, "engine", "workload", "metric", "baseline", "candidate", "change", "n b:c", "p",
            "verdict");
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
        print_row(out, eid, wid, "-", "", "-", "-", "-", "-", verdict);
        t.num_rows++;
        t.num_regressions++;
        continue;
      }
      if (ce < 0 || cw < 0 || run_data_pair(candidate, (size_t)ce, (size_t)cw)->num_results == 0) {
        print_row(out, eid, wid, "-", "", "-", "-", "-", "-", "MISSING in the candidate");
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
  if (t.num_median_only > 0)
    fprintf(out, "gate: note: %zu of %zu comparison%s judged on medians only: %s\n",
            t.num_median_only, t.num_rows, t.num_rows == 1 ? "" : "s", t.median_only_why.data);
  GateResult result = GATE_PASS;
  if (t.missing.len > 0) {
    fprintf(out, "gate: UNUSABLE: missing pairs: %s\n", t.missing.data);
    result = GATE_UNUSABLE;
  } else if (t.num_rows == 0) {
    fprintf(out, "gate: UNUSABLE: the baseline %s has no results\n", baseline->path);
    result = GATE_UNUSABLE;
  } else if (t.num_regressions > 0) {
    fprintf(out, "gate: FAIL: %zu regression%s (more than %.1f%% worse, and Mann-Whitney p < %g "
            "where the test can decide)%s\n", t.num_regressions,
            t.num_regressions == 1 ? "" : "s", o->max_drop_pct, o->alpha, mode);
    result = GATE_REGRESSION;
  } else {
    fprintf(out, "gate: PASS: %zu comparison%s within %.1f%%", t.num_rows - t.num_noise,
            t.num_rows - t.num_noise == 1 ? "" : "s", o->max_drop_pct);
    if (t.num_noise > 0)
      fprintf(out, ", %zu worse but within noise (p >= %g)", t.num_noise, o->alpha);
    fprintf(out, "%s\n", mode);
  }
  buf_free(&t.missing);
  buf_free(&t.median_only_why);
  return result;
}
