// gate_cmd.c: `gptoss-bench gate BASELINE CANDIDATE [--metric K,...] [--max-drop PCT]
// [--alpha P] [--per-gpu] [--relative-to ENGINE]`: flags and loading; the judging is gate.c's.
// Exit 0 pass, 1 regression, 2 unusable input (bad flags, unreadable files, missing pairs).
#include "sweep/gate_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "sweep/gate.h"

#define GATE_MAX_METRICS 32

static const char USAGE[] =
    "usage: gptoss-bench gate BASELINE CANDIDATE [--metric K,...] [--max-drop PCT] [--alpha P]\n"
    "                         [--per-gpu] [--relative-to ENGINE]\n"
    "  BASELINE, CANDIDATE  run folders or result files (results/baselines/*.json)\n"
    "  --metric K,...       result keys to judge (default total_token_throughput); throughputs\n"
    "                       must not fall, latencies (*_ms) must not rise\n"
    "  --max-drop PCT       how much worse a metric's median may get, in percent (default 5)\n"
    "  --alpha P            a change past --max-drop is a regression only when the two-sided\n"
    "                       Mann-Whitney test of the repeats gives p < P (default 0.05); with\n"
    "                       1 sample on a side, or too few to ever reach P, the median decides\n"
    "  --per-gpu            throughputs divided by each engine's GPU count\n"
    "  --relative-to ENGINE judge each engine's value divided by ENGINE's on the same workload\n"
    "                       in the same run: ratios measured on one machine, so a baseline\n"
    "                       recorded on another CPU still applies (ENGINE itself is not judged);\n"
    "                       one ratio per repeat, repeat k over ENGINE's repeat k\n"
    "exit status: 0 pass, 1 regression, 2 unusable input\n";

static int usage_error(const char *what, const char *arg) {
  fprintf(stderr, "gate: %s '%s'\n%s", what, arg, USAGE);
  return GATE_UNUSABLE;
}

int gate_cmd_main(int argc, char **argv) {
  const char *paths[2] = {NULL, NULL};
  size_t num_paths = 0;
  char metric_list[1024] = "total_token_throughput";
  const char *metrics[GATE_MAX_METRICS];
  GateOptions o = {.metrics = metrics, .max_drop_pct = GATE_DEFAULT_MAX_DROP_PCT,
                   .alpha = GATE_DEFAULT_ALPHA};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(USAGE, stdout);
      return 0;
    } else if (strcmp(a, "--per-gpu") == 0) {
      o.per_gpu = true;
    } else if (strcmp(a, "--relative-to") == 0 && i + 1 < argc) {
      o.relative_to = argv[++i];
    } else if (strcmp(a, "--metric") == 0 && i + 1 < argc) {
      if (strlen(argv[++i]) >= sizeof metric_list)
        return usage_error("--metric: the list is too long (judge fewer keys per call):", argv[i]);
      strcpy(metric_list, argv[i]);
    } else if (strcmp(a, "--max-drop") == 0 && i + 1 < argc) {
      char *end;
      o.max_drop_pct = strtod(argv[++i], &end);
      if (*end || end == argv[i] || o.max_drop_pct < 0)
        return usage_error("--max-drop needs a percentage >= 0, not", argv[i]);
    } else if (strcmp(a, "--alpha") == 0 && i + 1 < argc) {
      char *end;
      o.alpha = strtod(argv[++i], &end);
      if (*end || end == argv[i] || !(o.alpha > 0 && o.alpha < 1))
        return usage_error("--alpha needs a p-value threshold between 0 and 1 (e.g. 0.05), not",
                           argv[i]);
    } else if (a[0] != '-' && num_paths < 2) {
      paths[num_paths++] = a;
    } else {
      return usage_error("unexpected argument", a);
    }
  }
  if (num_paths != 2) {
    fputs(USAGE, stderr);
    return GATE_UNUSABLE;
  }
  for (char *save = NULL, *m = strtok_r(metric_list, ",", &save); m;
       m = strtok_r(NULL, ",", &save)) {
    if (gate_metric_direction(m) == 0)
      return usage_error("--metric: cannot tell whether higher or lower is better for", m);
    if (o.num_metrics == GATE_MAX_METRICS) return usage_error("--metric: too many in", m);
    metrics[o.num_metrics++] = m;
  }
  if (o.num_metrics == 0) return usage_error("--metric: no metric in", metric_list);
  RunData runs[2];
  char err[1024];
  for (size_t i = 0; i < 2; i++)
    if (!run_data_load(&runs[i], paths[i], err, sizeof err)) {
      fprintf(stderr, "gate: unusable %s: %s\n", i == 0 ? "baseline" : "candidate", err);
      if (i == 1) run_data_free(&runs[0]);
      run_data_free(&runs[i]);
      return GATE_UNUSABLE;
    }
  GateResult result = gate_run(stdout, &runs[0], &runs[1], &o);
  run_data_free(&runs[0]);
  run_data_free(&runs[1]);
  return (int)result;
}
