// sweep_cmd.c: `gptoss-bench sweep FILE [--name N] [--results-dir DIR] [--only ID[,ID...]]
// [--rounds N] [--dry-run] [--slurm ...] [--into RUN] [--resume RUN]`: reads and checks the
// sweep file (a resumed run's from its manifest), runs it
// here (sweep_run.c) or as Slurm jobs (sweep_slurm.c), then writes the run's summary
// (summary.c); --into (a Slurm job's own run) writes no summary. Dies with a clear message on
// bad input; exits 130 after Ctrl-C.
#include "sweep/sweep_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/file.h"
#include "sweep/plot.h"
#include "sweep/summary.h"
#include "sweep/sweep_file.h"
#include "sweep/sweep_grid.h"
#include "sweep/sweep_run.h"
#include "sweep/sweep_slurm.h"

static const char USAGE[] =
    "usage: gptoss-bench sweep FILE.ini [--name NAME] [--results-dir DIR (results)]\n"
    "                          [--only ENGINE[,ENGINE...]] [--rounds N] [--dry-run]\n"
    "                          [--slurm [--partition P] [--account A] [--time T] [--max-jobs N]]\n"
    "  Starts each engine of FILE in turn, runs its workloads with the load generator and\n"
    "  writes DIR/NAME-<UTC time>/ (manifest.json, <engine>/engine.log, <engine>/<workload>.json,\n"
    "  summary.md). --rounds N overrides [sweep] rounds (e.g. more rounds to record a gate\n"
    "  baseline). --dry-run checks FILE and prints the plan. Ctrl-C stops, exit status 130.\n"
    "  --slurm: each engine is one Slurm job instead (one node, --gres=gpu:N from its gpus,\n"
    "  [slurm] and slurm.OPTION keys as sbatch options), all at once or --max-jobs at a time;\n"
    "  DIR must be on a filesystem every node shares. Ctrl-C cancels every job.\n"
    "  (--into RUN --only ENGINE is what each job runs: that engine, into the run folder RUN.)\n"
    "  --resume RUN [FILE.ini]: continues the interrupted run folder RUN: its result files are\n"
    "  kept, every other point runs (FILE, when given, must be the run's sweep file as it was).\n";

static long parse_count(const char *flag, const char *value, long lo, long hi) {
  char *end;
  long n = strtol(value, &end, 10);
  if (*end || end == value || n < lo || n > hi)
    die("sweep: %s '%s' must be a whole number from %ld to %ld", flag, value, lo, hi);
  return n;
}

static void select_engines(const SweepFile *f, const char *only, bool *selected) {
  for (size_t i = 0; i < f->num_engines; i++) selected[i] = only == NULL;
  if (!only) return;
  char *list = xstrdup(only), *save = NULL;
  for (char *id = strtok_r(list, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
    bool found = false;  // a grid's id selects all its points
    for (size_t i = 0; i < f->num_engines; i++)
      if (sweep_grid_matches(id, f->engines[i].id, &f->engines[i].grid)) selected[i] = found = true;
    if (!found) die("sweep: --only: %s has no [engine.%s]", f->path, id);
  }
  free(list);
}

// RUN/manifest.json of `--resume RUN`, or death with what is wrong.
static json_t *load_resume_manifest(const char *run) {
  char path[1200];
  snprintf(path, sizeof path, "%s/manifest.json", run);
  json_error_t je;
  json_t *m = json_load_file(path, 0, &je);
  if (!m) die("sweep: --resume %s: %s: %s (not a run folder of `gptoss-bench sweep`?)", run, path,
              je.text);
  if (!json_is_string(json_object_get(m, "sweep_text")) || !json_is_array(json_object_get(m, "engines")))
    die("sweep: --resume %s: %s has no sweep_text or engines: not a sweep's manifest", run, path);
  size_t i;
  json_t *engine;
  json_array_foreach(json_object_get(m, "engines"), i, engine) if (json_object_get(engine, "slurm"))
    die("sweep: --resume %s: a `sweep --slurm` run cannot be resumed (not supported yet): start a "
        "new one", run);
  return m;
}

// The sweep file of `--resume RUN [FILE]`: FILE, which must read as the run's own text, or that
// text itself (the manifest keeps it).
static void load_resumed_file(SweepFile *f, const char *path, const json_t *m, const char *run) {
  char err[1024];
  const char *text = json_string_value(json_object_get(m, "sweep_text"));
  const char *old_path = json_string_value(json_object_get(m, "sweep_file"));
  if (path) {
    if (!sweep_file_load(f, path, err, sizeof err)) die("sweep: %s", err);
    if (strcmp(f->text.data ? f->text.data : "", text) != 0)
      die("sweep: --resume %s: %s is not the sweep file the run was made with (its text is in "
          "%s/manifest.json): give the run's own file, or leave FILE out",
          run, path, run);
  } else if (!sweep_file_parse(f, old_path ? old_path : "manifest.json", text, err, sizeof err)) {
    die("sweep: --resume %s: the run's sweep file no longer reads: %s", run, err);
  }
}

// What a resumed run starts: --only's engines, else those the run had not skipped.
static void select_resumed(const SweepFile *f, const json_t *m, bool *selected) {
  for (size_t i = 0; i < f->num_engines; i++) {
    size_t k;
    json_t *item;
    json_array_foreach(json_object_get(m, "engines"), k, item) {
      const char *id = json_string_value(json_object_get(item, "id"));
      const char *status = json_string_value(json_object_get(item, "status"));
      if (id && strcmp(id, f->engines[i].id) == 0)
        selected[i] = !status || strcmp(status, "skipped") != 0;
    }
  }
}

static void print_plan(const SweepFile *f, const bool *selected, const char *engine_bin) {
  printf("sweep %s: %zu engines, %zu workloads, repeat %d\n", f->name, f->num_engines,
         f->num_workloads, f->repeat);
  for (size_t i = 0; i < f->num_engines; i++) {
    const SweepEngine *e = &f->engines[i];
    char **argv = sweep_engine_argv(e, engine_bin, -1);
    printf("engine %s (%s, %d GPU%s)%s:", e->id, e->label, e->gpus, e->gpus > 1 ? "s" : "",
           selected[i] ? "" : " [skipped]");
    for (size_t k = 0; k < e->num_env; k++) printf(" %s", e->env[k]);
    for (char **a = argv; *a; a++) printf(" %s", *a);
    printf("\n  workloads:");
    for (size_t j = 0; j < f->num_workloads; j++)
      if (e->runs[j]) printf(" %s", f->workloads[j].id);
    printf("\n");
    sweep_argv_free(argv);
  }
  for (size_t j = 0; j < f->num_workloads; j++) {
    const SweepWorkload *w = &f->workloads[j];
    printf("workload %s (%s): gptoss-bench", w->id, w->label);
    for (int k = 0; k < w->num_args; k++) printf(" %s", w->args[k]);
    printf("\n");
  }
}

int sweep_cmd_main(int argc, char **argv) {
  const char *path = NULL, *name = NULL, *results_dir = "results", *only = NULL, *rounds = NULL;
  const char *into = NULL, *max_jobs = NULL, *resume = NULL;
  SweepSlurmOptions slurm = {.max_jobs = -1};
  bool dry_run = false, use_slurm = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has_value = i + 1 < argc;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(USAGE, stdout);
      return 0;
    } else if (strcmp(a, "--dry-run") == 0) dry_run = true;
    else if (strcmp(a, "--name") == 0 && has_value) name = argv[++i];
    else if (strcmp(a, "--results-dir") == 0 && has_value) results_dir = argv[++i];
    else if (strcmp(a, "--only") == 0 && has_value) only = argv[++i];
    else if (strcmp(a, "--rounds") == 0 && has_value) rounds = argv[++i];
    else if (strcmp(a, "--slurm") == 0) use_slurm = true;
    else if (strcmp(a, "--partition") == 0 && has_value) slurm.partition = argv[++i];
    else if (strcmp(a, "--account") == 0 && has_value) slurm.account = argv[++i];
    else if (strcmp(a, "--time") == 0 && has_value) slurm.time = argv[++i];
    else if (strcmp(a, "--max-jobs") == 0 && has_value) max_jobs = argv[++i];
    else if (strcmp(a, "--into") == 0 && has_value) into = argv[++i];
    else if (strcmp(a, "--resume") == 0 && has_value) resume = argv[++i];
    else if (a[0] != '-' && !path) path = a;
    else die("sweep: unexpected argument '%s'\n%s", a, USAGE);
  }
  if (!path && !resume) die("sweep: no sweep file given\n%s", USAGE);
  if (resume && (use_slurm || into || name))
    die("sweep: --resume continues a local run in its own folder, under its own name: leave out "
        "--slurm, --into and --name");
  if (!use_slurm && (slurm.partition || slurm.account || slurm.time || max_jobs))
    die("sweep: --partition, --account, --time and --max-jobs go with --slurm");
  if (use_slurm && into) die("sweep: --into is a Slurm job's own flag; give --slurm or --into");
  if (max_jobs) slurm.max_jobs = (int)parse_count("--max-jobs", max_jobs, 0, 100000);

  char err[1024], exe_dir[1024], run_dir[1200];
  SweepFile f;
  json_t *resume_manifest = resume ? load_resume_manifest(resume) : NULL;
  if (resume) load_resumed_file(&f, path, resume_manifest, resume);
  else if (!sweep_file_load(&f, path, err, sizeof err)) die("sweep: %s", err);
  if (rounds) f.rounds = (int)parse_count("--rounds", rounds, 1, 1000);
  else if (resume_manifest && json_is_integer(json_object_get(resume_manifest, "rounds")))
    f.rounds = (int)json_integer_value(json_object_get(resume_manifest, "rounds"));
  if (!file_exe_dir(exe_dir, sizeof exe_dir)) die("sweep: cannot find this program's folder");
  char engine_bin[1100];
  snprintf(engine_bin, sizeof engine_bin, "%s/gptoss-engine", exe_dir);
  bool *selected = xcalloc(f.num_engines, sizeof *selected);
  select_engines(&f, only, selected);
  if (resume && !only) select_resumed(&f, resume_manifest, selected);
  if (dry_run) {
    print_plan(&f, selected, engine_bin);
    free(selected);
    sweep_file_free(&f);
    return 0;
  }
  SweepOutcome outcome;
  if (use_slurm) {
    char bench_bin[1100];
    snprintf(bench_bin, sizeof bench_bin, "%s/gptoss-bench", exe_dir);
    slurm.results_dir = results_dir;
    slurm.name = name;
    slurm.selected = selected;
    slurm.bench_bin = bench_bin;
    slurm.engine_bin = engine_bin;
    outcome = sweep_slurm_run(&f, &slurm, run_dir, sizeof run_dir, err, sizeof err);
  } else {
    SweepRunOptions o = {.results_dir = results_dir, .name = name, .selected = selected,
                         .engine_bin = engine_bin, .into = into, .resume = resume,
                         .resume_manifest = resume_manifest};
    outcome = sweep_run(&f, &o, run_dir, sizeof run_dir, err, sizeof err);
  }
  json_decref(resume_manifest);
  if (outcome == SWEEP_ERROR) die("sweep: %s", err);
  if (into) {  // the Slurm driver writes the summary once every job is done
    free(selected);
    sweep_file_free(&f);
    return outcome == SWEEP_INTERRUPTED ? 130 : 0;
  }
  if (!summary_write(run_dir, NULL, err, sizeof err))
    fprintf(stderr, "sweep: warning: no summary: %s\n", err);
  else fprintf(stderr, "sweep: summary in %s/summary.md\n", run_dir);
  if (!plot_write(run_dir, err, sizeof err)) fprintf(stderr, "sweep: warning: plots: %s\n", err);
  else fprintf(stderr, "sweep: plots in %s/plots/\n", run_dir);
  free(selected);
  sweep_file_free(&f);
  return outcome == SWEEP_INTERRUPTED ? 130 : 0;
}
