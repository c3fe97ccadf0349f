// sweep_slurm.c: the Slurm driver. It makes the run folder (absolute: jobs run elsewhere),
// copies the sweep file into it (queued jobs read that copy, not a file edited meanwhile), and
// first submits a probe job that writes a file there: when the driver cannot see the file, the
// folder is not shared with the nodes and the sweep stops before any engine is queued. Then one
// job per selected engine (at most max_jobs queued or running at once): a script that execs
// `gptoss-bench sweep RUN/sweep.ini --only ID --into RUN --rounds R`, submitted with one node,
// --gres=gpu:N, no requeue, its output in RUN/ID/slurm-JOBID.out, and the sweep's and the
// engine's sbatch options. Every poll_interval seconds (asleep in between) one squeue call
// refreshes all jobs; each change is printed, and a finished job's engine state comes from its
// own manifest (RUN/ID/manifest.json) when Slurm says COMPLETED, else it failed with Slurm's
// state and reason. RUN/manifest.json is rewritten after every change. SIGINT and SIGTERM
// cancel every job still queued or running (scancel), wait up to a minute for Slurm to say so,
// and mark the run interrupted.
#include "sweep/sweep_slurm.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/clock.h"
#include "common/file.h"
#include "sweep/slurm.h"
#include "sweep/sweep_manifest.h"

#define CANCEL_WAIT_NS (60 * INT64_C(1000000000))

static volatile sig_atomic_t g_interrupted;

static void on_signal(int sig) {
  (void)sig;
  g_interrupted = 1;
}

typedef struct {
  size_t engine;       // index into the sweep file's engines
  SweepSlurmJob job;   // the manifest's view of it (SweepEngineState.slurm points here)
  bool finished;       // submitted and in a final state, or never submitted (sbatch failed)
} Job;

typedef struct {
  const SweepFile *f;
  const SweepSlurmOptions *o;
  char run_dir[PATH_MAX];
  char cwd[PATH_MAX];
  const char *name;
  SweepEngineState *engines;  // [f->num_engines]
  SweepManifest manifest;
  Job *jobs;                  // [num_jobs] the selected engines, in file order
  size_t num_jobs;
  bool cancelled;             // scancel sent for the sweep's Ctrl-C
  bool node_reported;         // host_info is the first finished job's node's (driver_host: here)
} Driver;

// ---------------------------------------------------------------------------------------------
// sbatch's command line

typedef struct {
  char **items;
  size_t len;
} Words;

__attribute__((format(printf, 2, 3))) static void words_add(Words *w, const char *fmt, ...) {
  char text[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  w->items = xrealloc(w->items, (w->len + 1) * sizeof *w->items);
  w->items[w->len++] = xstrdup(text);
}

static const SweepSlurmOption *find_option(const SweepSlurmOption *options, size_t n,
                                           const char *key) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(options[i].key, key) == 0) return &options[i];
  return NULL;
}

static void add_option(Words *w, const char *key, const char *value) {
  if (strcmp(value, "false") == 0) return;
  if (strcmp(value, "true") == 0) words_add(w, "--%s", key);
  else words_add(w, "--%s=%s", key, value);
}

// The command-line flags, then [slurm]'s options they do not override, then the engine's
// (NULL for the probe job), which override both. gres is the engine's business alone.
static void add_options(const SweepFile *f, const SweepSlurmOptions *o, const SweepEngine *e,
                        Words *w) {
  const SweepSlurm *s = &f->slurm;
  const char *const cli[][2] = {
      {"partition", o->partition}, {"account", o->account}, {"time", o->time}};
  const SweepSlurmOption *own = e ? e->slurm : NULL;
  const size_t num_own = e ? e->num_slurm : 0;
  for (size_t i = 0; i < sizeof cli / sizeof *cli; i++)
    if (cli[i][1] && !find_option(own, num_own, cli[i][0])) add_option(w, cli[i][0], cli[i][1]);
  for (size_t i = 0; i < s->num_options; i++) {
    const char *key = s->options[i].key;
    bool given = find_option(own, num_own, key);
    for (size_t k = 0; k < sizeof cli / sizeof *cli; k++)
      given |= cli[k][1] && strcmp(cli[k][0], key) == 0;
    if (!given) add_option(w, key, s->options[i].value);
  }
  for (size_t i = 0; i < num_own; i++)
    if (strcmp(own[i].key, "gres") != 0) add_option(w, own[i].key, own[i].value);
}

char **sweep_slurm_sbatch_flags(const SweepFile *f, const SweepSlurmOptions *o,
                                const SweepEngine *e, const char *run_dir, const char *cwd,
                                const char *name) {
  Words w = {0};
  words_add(&w, "--job-name=gptoss-%s-%s", name, e ? e->id : "probe");
  if (e) words_add(&w, "--output=%s/%s/slurm-%%j.out", run_dir, e->id);
  else words_add(&w, "--output=%s/slurm-probe-%%j.out", run_dir);
  words_add(&w, "--chdir=%s", cwd);
  words_add(&w, "--nodes=1");
  words_add(&w, "--no-requeue");  // a rerun would write over a half-written engine folder
  if (e) {
    const SweepSlurmOption *own = find_option(e->slurm, e->num_slurm, "gres");
    const char *gres = own ? own->value : f->slurm.gres;
    if (strcmp(gres, "gpu") == 0) words_add(&w, "--gres=gpu:%d", e->gpus);
    else if (strcmp(gres, "none") != 0) words_add(&w, "--gres=%s", gres);
  }
  add_options(f, o, e, &w);
  w.items = xrealloc(w.items, (w.len + 1) * sizeof *w.items);
  w.items[w.len] = NULL;
  return w.items;
}

static char **sbatch_flags(const Driver *d, const SweepEngine *e) {
  return sweep_slurm_sbatch_flags(d->f, d->o, e, d->run_dir, d->cwd, d->name);
}

static size_t count_words(char *const *words) {
  size_t n = 0;
  while (words[n]) n++;
  return n;
}

// s in single quotes for sh ('\'' for each quote inside).
static void shell_quote(Buf *b, const char *s) {
  buf_append_str(b, "'");
  for (; *s; s++) buf_append_str(b, *s == '\'' ? "'\\''" : (char[]){*s, 0});
  buf_append_str(b, "'");
}

static bool write_script(const char *path, const Buf *body, char *err, size_t err_size) {
  if (!file_write_atomic(path, body->data, body->len, err, err_size)) return false;
  if (chmod(path, 0755) == 0) return true;
  snprintf(err, err_size, "cannot make %s executable: %s", path, strerror(errno));
  return false;
}

// ---------------------------------------------------------------------------------------------
// job states

static void sleep_interruptible(int seconds) {
  struct timespec ts = {seconds, 0};
  nanosleep(&ts, NULL);  // a signal ends it early: the loop looks at the flag at once
}

static void show_state(const Driver *d, const Job *j) {
  const SweepEngine *e = &d->f->engines[j->engine];
  fprintf(stderr, "sweep: slurm job %ld (%s): %s", j->job.job_id, e->id,
          j->job.state ? j->job.state : "submitted");
  if (j->job.reason && strcmp(j->job.reason, "None") != 0) fprintf(stderr, " (%s)", j->job.reason);
  if (j->job.node) fprintf(stderr, " on %s", j->job.node);
  size_t waiting = 0, running = 0, done = 0;
  for (size_t i = 0; i < d->num_jobs; i++) {
    const char *state = d->jobs[i].job.state;
    if (d->jobs[i].finished) done++;
    else if (state && strcmp(state, "RUNNING") == 0) running++;
    else waiting++;
  }
  fprintf(stderr, "; %zu waiting, %zu running, %zu done of %zu\n", waiting, running, done,
          d->num_jobs);
}

static void replace_text(char **field, const char *value) {
  free(*field);
  *field = value ? xstrdup(value) : NULL;
}

// The engine's state as its job's own sweep recorded it, from RUN/ID/manifest.json; false when
// the job wrote none.
static bool read_job_manifest(const Driver *d, const SweepEngine *e, SweepEngineState *st) {
  char path[PATH_MAX + 300];
  snprintf(path, sizeof path, "%s/%s/manifest.json", d->run_dir, e->id);
  json_t *m = json_load_file(path, 0, NULL);
  json_t *engines = json_object_get(m, "engines"), *mine = NULL, *item;
  size_t i;
  json_array_foreach(engines, i, item)
    if (json_is_string(json_object_get(item, "id")) &&
        strcmp(json_string_value(json_object_get(item, "id")), e->id) == 0)
      mine = item;
  if (m && !st->slurm->host) {
    st->slurm->host = json_object();
    static const char *const keys[] = {"host", "cpu", "cpu_detail", "gpu"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
      json_object_set(st->slurm->host, keys[k], json_object_get(m, keys[k]));
  }
  const char *status = json_string_value(json_object_get(mine, "status"));
  static const char *const statuses[] = {"ok", "failed", "interrupted", "running", "skipped"};
  bool known = false;
  for (size_t k = 0; status && k < sizeof statuses / sizeof *statuses; k++)
    if (strcmp(status, statuses[k]) == 0) st->status = statuses[k], known = true;
  if (known) {
    replace_text(&st->error, json_string_value(json_object_get(mine, "error")));
    replace_text(&st->command, json_string_value(json_object_get(mine, "command")));
    st->pid = (long)json_integer_value(json_object_get(mine, "pid"));
  }
  json_decref(m);
  return known;
}

// A job in a final state: its engine's outcome.
static void finish_job(Driver *d, Job *j) {
  const SweepEngine *e = &d->f->engines[j->engine];
  SweepEngineState *st = &d->engines[j->engine];
  j->finished = true;
  const SweepSlurmJob *job = &j->job;
  bool completed = strcmp(job->state, "COMPLETED") == 0;
  bool have_manifest = read_job_manifest(d, e, st);
  if (job->host && !d->node_reported) {  // the run's machine is where the engines ran
    d->node_reported = true;
    json_object_set_new(d->manifest.host_info, "driver_host",
                        json_incref(json_object_get(d->manifest.host_info, "host")));
    json_object_update(d->manifest.host_info, job->host);
  }
  if (completed && have_manifest && strcmp(st->status, "running") != 0) return;
  char error[4096];
  if (d->cancelled && strcmp(job->state, "CANCELLED") == 0) {
    st->status = "interrupted";
    snprintf(error, sizeof error, "Slurm job %ld cancelled with the sweep", job->job_id);
  } else {
    st->status = "failed";
    snprintf(error, sizeof error,
             "Slurm job %ld %s (reason %s%s%s)%s%s; its output: %s/slurm-%ld.out", job->job_id, job->state, job->reason ? job->reason : "unknown",
             job->node ? ", on " : "", job->node ? job->node : "",
             have_manifest && st->error ? ": " : "", have_manifest && st->error ? st->error : "",
             e->id, job->job_id);
  }
  replace_text(&st->error, error);
  fprintf(stderr, "sweep: %s: %s: %s\n", e->id, st->status, error);
}

// One squeue call for every job queued or running; true when any changed.
static bool poll_jobs(Driver *d) {
  SweepSlurmJob **active = xcalloc(d->num_jobs + 1, sizeof *active);
  Job **owners = xcalloc(d->num_jobs + 1, sizeof *owners);
  char **before = xcalloc(d->num_jobs + 1, sizeof *before);
  size_t n = 0;
  for (size_t i = 0; i < d->num_jobs; i++) {
    Job *j = &d->jobs[i];
    if (j->finished || !j->job.job_id) continue;
    Buf b = {0};
    buf_printf(&b, "%s|%s|%s", j->job.state ? j->job.state : "", j->job.reason ? j->job.reason : "",
               j->job.node ? j->job.node : "");
    before[n] = b.data;
    owners[n] = j;
    active[n++] = &j->job;
  }
  char err[1024];
  if (!slurm_poll(active, n, err, sizeof err)) fprintf(stderr, "sweep: warning: %s\n", err);
  bool *moved = xcalloc(n + 1, sizeof *moved), changed = false;
  for (size_t k = 0; k < n; k++) {
    Job *j = owners[k];
    char now[1024];
    snprintf(now, sizeof now, "%s|%s|%s", j->job.state ? j->job.state : "",
             j->job.reason ? j->job.reason : "", j->job.node ? j->job.node : "");
    moved[k] = strcmp(now, before[k]) != 0;
    changed |= moved[k];
    if (!moved[k]) continue;
    if (j->job.state && strcmp(j->job.state, "RUNNING") == 0)
      d->engines[j->engine].status = "running";
    if (slurm_state_is_final(j->job.state)) finish_job(d, j);
  }
  for (size_t k = 0; k < n; k++) {  // after every update, so the counts are this poll's
    if (moved[k]) show_state(d, owners[k]);
    free(before[k]);
  }
  free(moved);
  free(active);
  free(owners);
  free(before);
  return changed;
}

static size_t num_active(const Driver *d) {
  size_t n = 0;
  for (size_t i = 0; i < d->num_jobs; i++) n += d->jobs[i].job.job_id && !d->jobs[i].finished;
  return n;
}

static void cancel_all(Driver *d) {
  long *ids = xcalloc(d->num_jobs + 1, sizeof *ids);
  size_t n = 0;
  for (size_t i = 0; i < d->num_jobs; i++)
    if (d->jobs[i].job.job_id && !d->jobs[i].finished) ids[n++] = d->jobs[i].job.job_id;
  fprintf(stderr, "sweep: interrupted: cancelling %zu Slurm job%s\n", n, n == 1 ? "" : "s");
  slurm_cancel(ids, n);
  free(ids);
  d->cancelled = true;
}

static bool write_manifest(Driver *d, char *err, size_t err_size) {
  d->manifest.interrupted = g_interrupted;
  return sweep_manifest_write(&d->manifest, err, err_size);
}

// ---------------------------------------------------------------------------------------------
// the run

// The probe: a job that writes RUN/slurm-probe.ok; false (err says why) when the driver cannot
// see that file afterwards, or the job could not be run.
static bool probe_shared_folder(Driver *d, char *err, size_t err_size) {
  char script[PATH_MAX + 64], marker[PATH_MAX + 64];
  snprintf(script, sizeof script, "%s/slurm-probe.sh", d->run_dir);
  snprintf(marker, sizeof marker, "%s/slurm-probe.ok", d->run_dir);
  Buf body = {0};
  buf_append_str(&body, "#!/bin/sh\n# gptoss-bench sweep --slurm: can a job write the run folder?\n"
                        "hostname > ");
  shell_quote(&body, marker);
  buf_append_str(&body, "\n");
  bool ok = write_script(script, &body, err, err_size);
  buf_free(&body);
  if (!ok) return false;
  char **flags = sbatch_flags(d, NULL);
  Job probe = {0};
  ok = slurm_submit(flags, count_words(flags), script, &probe.job.job_id, err, err_size);
  sweep_argv_free(flags);
  if (!ok) return false;
  fprintf(stderr, "sweep: slurm job %ld: probing that jobs can write %s\n", probe.job.job_id,
          d->run_dir);
  SweepSlurmJob *jobs[] = {&probe.job};
  while (!slurm_state_is_final(probe.job.state) && !g_interrupted) {
    sleep_interruptible(d->f->slurm.poll_interval_sec);
    char poll_err[1024];
    if (!slurm_poll(jobs, 1, poll_err, sizeof poll_err))
      fprintf(stderr, "sweep: warning: %s\n", poll_err);
  }
  bool shared = false;
  if (g_interrupted) {
    slurm_cancel(&probe.job.job_id, 1);
    snprintf(err, err_size, "interrupted while the probe job %ld waited", probe.job.job_id);
  } else if (access(marker, F_OK) != 0) {
    snprintf(err, err_size,
             "Slurm job %ld (%s%s%s) could not write into the run folder %s: the results folder "
             "must be on a filesystem every node shares; pass --results-dir on one",
             probe.job.job_id, probe.job.state, probe.job.node ? " on " : "",
             probe.job.node ? probe.job.node : "", d->run_dir);
  } else {
    char out[PATH_MAX + 64];
    snprintf(out, sizeof out, "%s/slurm-probe-%ld.out", d->run_dir, probe.job.job_id);
    unlink(out);
    unlink(marker);
    unlink(script);
    shared = true;
  }
  free(probe.job.state);
  free(probe.job.reason);
  free(probe.job.node);
  return shared;
}

// RUN/ID/job.sh for each selected engine.
static bool write_job_scripts(Driver *d, char *err, size_t err_size) {
  for (size_t i = 0; i < d->num_jobs; i++) {
    const SweepEngine *e = &d->f->engines[d->jobs[i].engine];
    char dir[PATH_MAX + 200], path[PATH_MAX + 300], ini[PATH_MAX + 32], rounds[16];
    snprintf(dir, sizeof dir, "%s/%s", d->run_dir, e->id);
    snprintf(path, sizeof path, "%s/job.sh", dir);
    snprintf(ini, sizeof ini, "%s/sweep.ini", d->run_dir);
    snprintf(rounds, sizeof rounds, "%d", d->f->rounds);
    if (!file_make_dirs(dir, err, err_size)) return false;
    Buf body = {0};
    buf_printf(&body, "#!/bin/sh\n# gptoss-bench sweep --slurm: engine %s of %s, as a local "
               "sweep of that engine would run it\nexec ", e->id, d->run_dir);
    const char *const words[] = {d->o->bench_bin, "sweep", ini, "--only", e->id, "--into",
                                 d->run_dir, "--rounds", rounds};
    for (size_t k = 0; k < sizeof words / sizeof *words; k++) {
      if (k) buf_append_str(&body, " ");
      shell_quote(&body, words[k]);
    }
    buf_append_str(&body, "\n");
    bool ok = write_script(path, &body, err, err_size);
    buf_free(&body);
    if (!ok) return false;
  }
  return true;
}

// Submits jobs not yet submitted while fewer than max_jobs are queued or running.
static bool submit_more(Driver *d, int max_jobs) {
  bool changed = false;
  for (size_t i = 0; i < d->num_jobs && !g_interrupted; i++) {
    Job *j = &d->jobs[i];
    if (j->job.job_id || j->finished) continue;
    if (max_jobs > 0 && num_active(d) >= (size_t)max_jobs) break;
    const SweepEngine *e = &d->f->engines[j->engine];
    char script[PATH_MAX + 300], err[2048];
    snprintf(script, sizeof script, "%s/%s/job.sh", d->run_dir, e->id);
    char **flags = sbatch_flags(d, e);
    bool ok = slurm_submit(flags, count_words(flags), script, &j->job.job_id, err, sizeof err);
    sweep_argv_free(flags);
    changed = true;
    if (!ok) {
      j->finished = true;
      SweepEngineState *st = &d->engines[j->engine];
      st->status = "failed";
      replace_text(&st->error, err);
      fprintf(stderr, "sweep: %s: failed: %s\n", e->id, err);
      continue;
    }
    replace_text(&j->job.state, "PENDING");
    replace_text(&j->job.reason, "None");
    show_state(d, j);
  }
  return changed;
}

static bool all_finished(const Driver *d) {
  for (size_t i = 0; i < d->num_jobs; i++)
    if (!d->jobs[i].finished) return false;
  return true;
}

// Submits, polls and records until every job is finished (or, after Ctrl-C, cancelled).
static bool drive(Driver *d, char *err, size_t err_size) {
  int max_jobs = d->o->max_jobs >= 0 ? d->o->max_jobs : d->f->slurm.max_jobs;
  int64_t cancel_deadline = 0;
  bool ok = true;
  while (ok && !all_finished(d)) {
    bool changed = g_interrupted ? false : submit_more(d, max_jobs);
    if (g_interrupted && !d->cancelled) {
      cancel_all(d);
      cancel_deadline = clock_now_ns() + CANCEL_WAIT_NS;
    }
    if (d->cancelled && clock_now_ns() > cancel_deadline) break;
    if (changed) ok = write_manifest(d, err, err_size);
    if (all_finished(d)) break;
    sleep_interruptible(d->f->slurm.poll_interval_sec);
    if (poll_jobs(d) && ok) ok = write_manifest(d, err, err_size);
    for (size_t i = 0; g_interrupted && i < d->num_jobs; i++)
      if (!d->jobs[i].job.job_id && !d->jobs[i].finished) {  // never submitted: never ran
        d->jobs[i].finished = true;
        d->engines[d->jobs[i].engine].status = "skipped";
      }
  }
  for (size_t i = 0; i < d->num_jobs; i++) {  // Slurm did not confirm the cancel in time
    SweepEngineState *st = &d->engines[d->jobs[i].engine];
    if (!d->jobs[i].finished && d->jobs[i].job.job_id) st->status = "interrupted";
  }
  return ok;
}

SweepOutcome sweep_slurm_run(const SweepFile *f, const SweepSlurmOptions *o, char *run_dir,
                             size_t run_dir_size, char *err, size_t err_size) {
  const char *missing = slurm_missing_command();
  if (missing) {
    snprintf(err, err_size,
             "--slurm: %s is not on PATH: install Slurm's client commands (sbatch, squeue, "
             "scancel; Debian: slurm-client) where the sweep runs, or run it without --slurm",
             missing);
    return SWEEP_ERROR;
  }
  Driver d = {.f = f, .o = o, .name = o->name ? o->name : f->name};
  char made[PATH_MAX];
  if (!getcwd(d.cwd, sizeof d.cwd)) {
    snprintf(err, err_size, "cannot read the current folder: %s", strerror(errno));
    return SWEEP_ERROR;
  }
  if (!sweep_make_run_dir(o->results_dir, d.name, made, sizeof made, err, err_size))
    return SWEEP_ERROR;
  if (!realpath(made, d.run_dir)) snprintf(d.run_dir, sizeof d.run_dir, "%s", made);
  snprintf(run_dir, run_dir_size, "%s", d.run_dir);
  char ini[PATH_MAX + 32];
  snprintf(ini, sizeof ini, "%s/sweep.ini", d.run_dir);
  if (!file_write_atomic(ini, f->text.data ? f->text.data : "", f->text.len, err, err_size))
    return SWEEP_ERROR;

  d.engines = xcalloc(f->num_engines, sizeof *d.engines);
  d.jobs = xcalloc(f->num_engines, sizeof *d.jobs);
  for (size_t i = 0; i < f->num_engines; i++) {
    d.engines[i] = (SweepEngineState){
        .status = "skipped", .command = sweep_engine_command(&f->engines[i], o->engine_bin, -1)};
    if (!o->selected[i]) continue;
    d.jobs[d.num_jobs] = (Job){.engine = i};
    d.engines[i].status = "pending";
    d.num_jobs++;
  }
  for (size_t i = 0; i < d.num_jobs; i++) d.engines[d.jobs[i].engine].slurm = &d.jobs[i].job;
  d.manifest = (SweepManifest){.f = f, .name = d.name, .run_dir = d.run_dir,
                               .host_info = sweep_host_info(), .engines = d.engines};
  sweep_utc_now(d.manifest.started, sizeof d.manifest.started, "%Y-%m-%dT%H:%M:%SZ");

  struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
  sigemptyset(&sa.sa_mask);
  g_interrupted = 0;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  bool ok = write_job_scripts(&d, err, err_size) && write_manifest(&d, err, err_size);
  bool probed = ok && probe_shared_folder(&d, err, err_size);
  if (probed) {
    ok = drive(&d, err, err_size);
  } else {  // no engine was submitted; only Ctrl-C during the probe is not an error
    for (size_t i = 0; i < d.num_jobs; i++) d.engines[d.jobs[i].engine].status = "skipped";
    ok = ok && g_interrupted;
  }
  d.manifest.finished = true;
  char merr[1024];
  if (!write_manifest(&d, merr, sizeof merr) && ok) {
    snprintf(err, err_size, "%s", merr);
    ok = false;
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  if (probed) sweep_print_outcome(&d.manifest, NULL);
  bool interrupted = g_interrupted;
  for (size_t i = 0; i < f->num_engines; i++) {
    free(d.engines[i].error);
    free(d.engines[i].command);
  }
  for (size_t i = 0; i < d.num_jobs; i++) {
    free(d.jobs[i].job.state);
    free(d.jobs[i].job.reason);
    free(d.jobs[i].job.node);
    json_decref(d.jobs[i].job.host);
  }
  free(d.engines);
  free(d.jobs);
  json_decref(d.manifest.host_info);
  if (!ok) return SWEEP_ERROR;
  return interrupted ? SWEEP_INTERRUPTED : SWEEP_DONE;
}
