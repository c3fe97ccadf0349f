// sweep_run.c: the sweep loop. For each round, for each engine: start it in its own process
// group, wait until it is ready, run its workloads through bench_run (results in
// <run>/<engine>/<workload>[.rK].json, K counting on over the rounds), stop it; an engine that
// fails to start, or exits during a workload, is recorded as failed with its last error line,
// is not started again in later rounds, and the loop goes on. SIGINT and SIGTERM set a flag and
// send SIGTERM to the running engine's group, SIGKILL after stop_grace (SIGALRM) or at a second
// signal; the loop then stops the engine, marks the manifest interrupted and returns.
#include "sweep/sweep_run.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_options.h"
#include "bench/bench_run.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/clock.h"
#include "common/file.h"
#include "sweep/engine_process.h"
#include "sweep/sweep_manifest.h"

#define NS_PER_SEC INT64_C(1000000000)
// The sweep has already seen /health answer: the load generator's own test request needs less
// than vLLM's 600 s (a workload's ready-check-timeout-sec overrides this).
#define SWEEP_READY_CHECK "--ready-check-timeout-sec=30"

static volatile sig_atomic_t g_interrupted;
static volatile sig_atomic_t g_engine_pgid;  // the running engine's group; 0 when none
static volatile sig_atomic_t g_grace_sec;    // stop_grace, for the SIGKILL that follows SIGTERM

// Async-signal-safe: SIGTERM to the engine's group and an alarm for the SIGKILL after the grace.
static void interrupt_engine(void) {
  pid_t pgid = g_engine_pgid;
  if (pgid <= 0) return;
  if (g_grace_sec <= 0) {
    kill(-pgid, SIGKILL);
    return;
  }
  kill(-pgid, SIGTERM);
  alarm((unsigned)g_grace_sec);
}

static void on_signal(int sig) {
  pid_t pgid = g_engine_pgid;
  if (sig == SIGALRM || g_interrupted) {  // the grace is over, or a second Ctrl-C
    if (pgid > 0) kill(-pgid, SIGKILL);
    g_interrupted = 1;
    return;
  }
  g_interrupted = 1;
  interrupt_engine();
}

typedef struct {
  const SweepFile *f;
  const SweepRunOptions *o;
  char run_dir[1024];
  SweepManifest manifest;
  SweepEngineState *engines;
  const Tokenizer *tok;
  int64_t start_ns, pair_ns;    // when the sweep started; time spent in workloads so far
  size_t num_pairs_done;        // workload runs done
  size_t num_pairs_left;        // workload runs still to do (failed engines' are dropped)
  int resume_count;             // 0, or how many times the run has been resumed (this one too)
} Sweep;

static bool write_manifest(Sweep *s, char *err, size_t err_size) {
  s->manifest.interrupted = g_interrupted;
  return sweep_manifest_write(&s->manifest, err, err_size);
}

// ---------------------------------------------------------------------------------------------
// progress

static void format_duration(int64_t ns, char *out, size_t out_size) {
  long sec = (long)(ns / NS_PER_SEC);
  if (sec >= 3600) snprintf(out, out_size, "%ldh%02ldm", sec / 3600, sec / 60 % 60);
  else snprintf(out, out_size, "%ldm%02lds", sec / 60, sec % 60);
}

typedef struct {
  size_t config, num_configs;      // i/N among the selected engines
  size_t workload, num_workloads;  // j/M among this engine's workloads
  int round;                       // r/rounds
} Position;

// The k-th (1-based) result of a pair: repeats count on over the rounds.
static int run_index(const SweepFile *f, const Position *at, int rep) {
  return (at->round - 1) * f->repeat + rep;
}

static void progress(const Sweep *s, const Position *at, const SweepEngine *e,
                     const SweepWorkload *w, int rep) {
  char elapsed[32], eta[32] = "unknown";
  format_duration(clock_now_ns() - s->start_ns, elapsed, sizeof elapsed);
  if (s->num_pairs_done)
    format_duration(s->pair_ns / (int64_t)s->num_pairs_done * (int64_t)s->num_pairs_left, eta,
                    sizeof eta);
  fprintf(stderr, "sweep: configuration %zu/%zu %s, workload %zu/%zu %s", at->config,
          at->num_configs, e->id, at->workload, at->num_workloads, w->id);
  int runs = s->f->repeat * s->f->rounds;
  if (runs > 1) fprintf(stderr, " (run %d/%d)", run_index(s->f, at, rep), runs);
  fprintf(stderr, ", elapsed %s, ETA %s\n", elapsed, eta);
}

// ---------------------------------------------------------------------------------------------
// one engine

__attribute__((format(printf, 2, 3))) static void set_failed(SweepEngineState *st,
                                                             const char *fmt, ...) {
  char text[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  st->status = "failed";
  free(st->error);
  st->error = xstrdup(text);
  fprintf(stderr, "sweep: failed: %s\n", text);
}

// The result file's name in the engine's folder: <workload>[.rK].json.
static void result_name(const SweepFile *f, const SweepWorkload *w, int round, int rep, char *out,
                        size_t out_size) {
  if (f->repeat * f->rounds > 1)
    snprintf(out, out_size, "%s.r%d.json", w->id, run_index(f, &(Position){.round = round}, rep));
  else
    snprintf(out, out_size, "%s.json", w->id);
}

// Whether the engine's folder already holds that result (a resumed run's finished point).
static bool result_done(const SweepEngineState *st, const char *name) {
  size_t i;
  json_t *v;
  json_array_foreach(st->results, i, v) if (strcmp(json_string_value(v), name) == 0) return true;
  return false;
}

// Workload runs of engine e in a round that are still to do.
static size_t runs_to_do(const Sweep *s, size_t ei, int round) {
  const SweepFile *f = s->f;
  size_t n = 0;
  for (size_t w = 0; w < f->num_workloads; w++)
    for (int rep = 1; f->engines[ei].runs[w] && rep <= f->repeat; rep++) {
      char name[600];
      result_name(f, &f->workloads[w], round, rep, name, sizeof name);
      n += !result_done(&s->engines[ei], name);
    }
  return n;
}

// One workload run into path; false when the load generator failed (err says why).
static bool run_workload(Sweep *s, const SweepEngine *e, const SweepWorkload *w, int port,
                         const char *path, char *err, size_t err_size) {
  char base_url[64], label[256];
  snprintf(base_url, sizeof base_url, "--base-url=http://127.0.0.1:%d", port);
  snprintf(label, sizeof label, "sweep: %s/%s", e->id, w->id);
  int argc = w->num_args + 2;
  char **argv = xcalloc((size_t)argc + 1, sizeof *argv);
  argv[0] = w->args[0];
  argv[1] = SWEEP_READY_CHECK;
  argv[2] = base_url;
  for (int i = 1; i < w->num_args; i++) argv[i + 2] = w->args[i];
  BenchOptions bo;
  bool ok = bench_options_parse(&bo, argc, argv, err, err_size);
  CHECK(ok);  // the sweep file's check already parsed these flags
  BenchRunIo io = {.out = stdout, .tok = s->tok, .result_path = path, .cancel = &g_interrupted,
                   .progress_label = label};
  int64_t t0 = clock_now_ns();
  ok = bench_run(&bo, &io, err, err_size);
  s->pair_ns += clock_now_ns() - t0;
  s->num_pairs_done++;
  s->num_pairs_left--;
  bench_options_free(&bo);
  free(argv);
  return ok;
}

// Runs the engine's workloads until they are done, it is interrupted, or the engine exits
// during one (st records failures).
static void run_workloads(Sweep *s, const SweepEngine *e, EngineProcess *p, Position *at,
                          SweepEngineState *st) {
  const SweepFile *f = s->f;
  for (size_t wi = 0; wi < f->num_workloads && !g_interrupted; wi++) {
    const SweepWorkload *w = &f->workloads[wi];
    if (!e->runs[wi]) continue;
    at->workload++;
    for (int rep = 1; rep <= f->repeat && !g_interrupted; rep++) {
      char name[600], path[1700], err[1024];
      result_name(f, w, at->round, rep, name, sizeof name);
      if (result_done(st, name)) continue;
      snprintf(path, sizeof path, "%s/%s/%s", s->run_dir, e->id, name);
      progress(s, at, e, w, rep);
      bool ok = run_workload(s, e, w, p->port, path, err, sizeof err);
      if (!g_interrupted && access(path, F_OK) == 0) {  // recorded at once, for --resume
        json_array_append_new(st->results, json_string(name));
        char merr[1024];
        if (!write_manifest(s, merr, sizeof merr)) fprintf(stderr, "sweep: warning: %s\n", merr);
      }
      if (g_interrupted) {
        unlink(path);  // cut short: not a result
      } else if (!eproc_alive(p)) {  // it measured a dying engine: not a result either
        char how[64], line[512];
        unlink(path);
        eproc_describe_exit(p, how, sizeof how);
        eproc_last_error_line(p->log_path, line, sizeof line);
        set_failed(st, "the engine %s during workload %s: %s", how, w->id,
                   line[0] ? line : "(its log is empty)");
        return;
      } else if (!ok) {
        set_failed(st, "workload %s: %s", w->id, err);
      }
    }
  }
}

// engine[.roundR][.resumeK].log: each start of the engine has a log of its own.
static void engine_log_path(const Sweep *s, const char *dir, int round, char *out,
                            size_t out_size) {
  Buf name = {0};
  buf_printf(&name, "%s/engine", dir);
  if (round > 1) buf_printf(&name, ".round%d", round);
  if (s->resume_count) buf_printf(&name, ".resume%d", s->resume_count);
  snprintf(out, out_size, "%s.log", name.data);
  buf_free(&name);
}

static void run_engine(Sweep *s, size_t ei, Position *at) {
  const SweepFile *f = s->f;
  const SweepEngine *e = &f->engines[ei];
  SweepEngineState *st = &s->engines[ei];
  char dir[1200], log_path[1300], err[2048];
  size_t num_runs = runs_to_do(s, ei, at->round);
  size_t left_before = s->num_pairs_left;
  at->workload = 0;
  at->num_workloads = 0;
  for (size_t i = 0; i < f->num_workloads; i++) at->num_workloads += e->runs[i];
  snprintf(dir, sizeof dir, "%s/%s", s->run_dir, e->id);
  engine_log_path(s, dir, at->round, log_path, sizeof log_path);
  int port = f->base_port ? f->base_port : eproc_free_port();
  char **argv = sweep_engine_argv(e, s->o->engine_bin, port);
  free(st->command);
  st->command = sweep_engine_command(e, s->o->engine_bin, port);
  EngineProcess p = {0};
  bool started = false;
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    snprintf(err, sizeof err, "cannot create %s: %s", dir, strerror(errno));
  } else {
    fprintf(stderr, "sweep: configuration %zu/%zu %s", at->config, at->num_configs, e->id);
    if (f->rounds > 1) fprintf(stderr, " (round %d/%d)", at->round, f->rounds);
    fprintf(stderr, ": starting %s\n", st->command);
    started = eproc_start(&p, argv, e->env, e->num_env, port, log_path, err, sizeof err);
  }
  sweep_argv_free(argv);
  if (!started) {
    set_failed(st, "%s", err);
    s->num_pairs_left = left_before - num_runs;
    eproc_free(&p);
    return;
  }
  g_engine_pgid = p.pid;
  if (g_interrupted) interrupt_engine();
  st->status = "running";
  st->pid = p.pid;
  char merr[1024];
  if (!write_manifest(s, merr, sizeof merr))  // the loop writes it again (and fails) after this
    fprintf(stderr, "sweep: warning: %s\n", merr);
  if (!eproc_wait_ready(&p, e->ready_timeout_sec, &g_interrupted, err, sizeof err)) {
    if (!g_interrupted) set_failed(st, "%s", err);
  } else {
    run_workloads(s, e, &p, at, st);
  }
  if (strcmp(st->status, "running") == 0) st->status = g_interrupted ? "interrupted" : "ok";
  s->num_pairs_left = left_before - num_runs;
  g_engine_pgid = 0;  // from here eproc_stop owns the group: no signal may reach a reaped pid
  alarm(0);
  eproc_stop(&p, f->stop_grace_sec);
  eproc_free(&p);
}

// ---------------------------------------------------------------------------------------------

bool sweep_make_run_dir(const char *results_dir, const char *name, char *run_dir,
                        size_t run_dir_size, char *err, size_t err_size) {
  char stamp[32], e[2048];
  sweep_utc_now(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ");
  snprintf(run_dir, run_dir_size, "%s/%s-%s", results_dir, name, stamp);
  bool ok = file_make_dirs(results_dir, e, sizeof e);
  if (ok && mkdir(run_dir, 0755) != 0) {
    snprintf(e, sizeof e, "cannot create %s: %s", run_dir, strerror(errno));
    ok = false;
  }
  if (!ok)
    snprintf(err, err_size,
             "the results folder %s cannot hold the run (%s): make %s a writable folder, or "
             "pass --results-dir DIR",
             results_dir, e, results_dir);
  return ok;
}

// The run folder of a Slurm job's `sweep --into RUN`: RUN as it is, the selected engine's
// folder in it, and that folder's manifest.json as the manifest's path.
static bool use_run_dir(Sweep *s, char *manifest_path, size_t path_size, char *err,
                        size_t err_size) {
  const SweepFile *f = s->f;
  size_t engine = f->num_engines, num_selected = 0;
  for (size_t i = 0; i < f->num_engines; i++)
    if (s->o->selected[i]) num_selected++, engine = i;
  struct stat st;
  if (num_selected != 1) {
    snprintf(err, err_size, "--into runs exactly one engine: give it with --only ID");
    return false;
  }
  const int stat_errno = stat(s->o->into, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  if (stat_errno) {
    snprintf(err, err_size, "--into %s: not a run folder on this node (%s)", s->o->into,
             strerror(stat_errno));
    return false;
  }
  snprintf(s->run_dir, sizeof s->run_dir, "%s", s->o->into);
  char dir[1200];
  snprintf(dir, sizeof dir, "%s/%s", s->run_dir, f->engines[engine].id);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    snprintf(err, err_size, "cannot create %s: %s", dir, strerror(errno));
    return false;
  }
  snprintf(manifest_path, path_size, "%s/manifest.json", dir);
  return true;
}

// A status the manifest recorded, as one of the literals the sweep uses.
static const char *known_status(const char *status) {
  static const char *const known[] = {"ok", "failed", "interrupted", "running", "pending"};
  for (size_t i = 0; status && i < sizeof known / sizeof *known; i++)
    if (strcmp(status, known[i]) == 0) return known[i];
  return "skipped";
}

// Engine i's state in the run being resumed: its failure (it stays failed), its status when it
// is not selected now, and the result files it wrote that are still there.
static void resume_engine(Sweep *s, size_t i) {
  const SweepFile *f = s->f;
  const SweepEngine *e = &f->engines[i];
  SweepEngineState *st = &s->engines[i];
  size_t k;
  json_t *item, *old = NULL;
  json_array_foreach(json_object_get(s->o->resume_manifest, "engines"), k, item) {
    const char *id = json_string_value(json_object_get(item, "id"));
    if (id && strcmp(id, e->id) == 0) old = item;
  }
  if (!old) return;
  const char *status = known_status(json_string_value(json_object_get(old, "status")));
  const char *error = json_string_value(json_object_get(old, "error"));
  if (!s->o->selected[i] || strcmp(status, "failed") == 0) st->status = status;
  if (strcmp(status, "failed") == 0 && error) st->error = xstrdup(error);
  json_t *listed = json_object_get(old, "results");
  for (int round = 1; round <= f->rounds; round++)
    for (size_t w = 0; w < f->num_workloads; w++)
      for (int rep = 1; e->runs[w] && rep <= f->repeat; rep++) {
        char name[600], path[1700];
        result_name(f, &f->workloads[w], round, rep, name, sizeof name);
        bool is_listed = !json_is_array(listed);  // a manifest from before "results": the files
        json_array_foreach(listed, k, item) is_listed |=
            json_is_string(item) && strcmp(json_string_value(item), name) == 0;
        snprintf(path, sizeof path, "%s/%s/%s", s->run_dir, e->id, name);
        if (is_listed && access(path, F_OK) == 0)
          json_array_append_new(st->results, json_string(name));
      }
}

// The run folder and the manifest's name, start and resume times of `--resume RUN`.
static void resume_run(Sweep *s, const char **name) {
  const json_t *m = s->o->resume_manifest;
  snprintf(s->run_dir, sizeof s->run_dir, "%s", s->o->resume);
  const char *old_name = json_string_value(json_object_get(m, "name"));
  const char *started = json_string_value(json_object_get(m, "started"));
  if (old_name) *name = old_name;
  if (started) snprintf(s->manifest.started, sizeof s->manifest.started, "%s", started);
  json_t *resumed = json_object_get(m, "resumed");
  s->manifest.resumed = json_is_array(resumed) ? json_deep_copy(resumed) : json_array();
  char now[32];
  sweep_utc_now(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ");
  json_array_append_new(s->manifest.resumed, json_string(now));
  s->resume_count = (int)json_array_size(s->manifest.resumed);
}

static void print_outcome(const Sweep *s) {
  char elapsed[32];
  format_duration(clock_now_ns() - s->start_ns, elapsed, sizeof elapsed);
  sweep_print_outcome(&s->manifest, elapsed);
}

SweepOutcome sweep_run(const SweepFile *f, const SweepRunOptions *o, char *run_dir,
                       size_t run_dir_size, char *err, size_t err_size) {
  Sweep s = {.f = f, .o = o, .start_ns = clock_now_ns()};
  const char *name = o->name ? o->name : f->name;
  char manifest_path[1300] = "";
  if (o->resume) resume_run(&s, &name);
  else if (o->into ? !use_run_dir(&s, manifest_path, sizeof manifest_path, err, err_size)
                   : !sweep_make_run_dir(o->results_dir, name, s.run_dir, sizeof s.run_dir, err,
                                         err_size))
    return SWEEP_ERROR;
  snprintf(run_dir, run_dir_size, "%s", s.run_dir);
  Tokenizer tok;
  if (!tok_init(&tok, TOK_O200K_HARMONY, NULL, err, err_size)) return SWEEP_ERROR;
  s.tok = &tok;
  s.engines = xcalloc(f->num_engines, sizeof *s.engines);
  SweepManifest resumed = s.manifest;  // resume_run's start time and resume times
  s.manifest = (SweepManifest){.f = f, .name = name, .run_dir = s.run_dir,
                               .path = o->into ? manifest_path : NULL,
                               .host_info = sweep_host_info(), .engines = s.engines,
                               .resumed = resumed.resumed};
  if (o->resume) memcpy(s.manifest.started, resumed.started, sizeof s.manifest.started);
  else sweep_utc_now(s.manifest.started, sizeof s.manifest.started, "%Y-%m-%dT%H:%M:%SZ");
  Position at = {0};
  for (size_t i = 0; i < f->num_engines; i++) {
    s.engines[i].status = "skipped";
    s.engines[i].command = sweep_engine_command(&f->engines[i], o->engine_bin, -1);
    s.engines[i].results = json_array();
    if (o->selected[i]) s.engines[i].status = "pending";  // until reached
    if (o->resume_manifest) resume_engine(&s, i);
    if (!o->selected[i]) continue;
    at.num_configs++;
    for (int round = 1; round <= f->rounds; round++) s.num_pairs_left += runs_to_do(&s, i, round);
  }

  struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term, old_alrm;
  sigemptyset(&sa.sa_mask);
  g_interrupted = 0;
  g_engine_pgid = 0;
  g_grace_sec = f->stop_grace_sec;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGALRM, &sa, &old_alrm);
  bool ok = write_manifest(&s, err, err_size);
  for (at.round = 1; ok && at.round <= f->rounds && !g_interrupted; at.round++) {
    at.config = 0;
    for (size_t i = 0; ok && i < f->num_engines && !g_interrupted; i++) {
      if (!o->selected[i]) continue;
      at.config++;
      size_t to_do = runs_to_do(&s, i, at.round);
      if (strcmp(s.engines[i].status, "failed") == 0) {  // in an earlier round: not again
        s.num_pairs_left -= to_do;
        continue;
      }
      if (to_do == 0) {  // a resumed run's finished points
        s.engines[i].status = "ok";
        continue;
      }
      run_engine(&s, i, &at);
      ok = write_manifest(&s, err, err_size);
    }
  }
  s.manifest.finished = true;
  if (ok) ok = write_manifest(&s, err, err_size);
  alarm(0);
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  sigaction(SIGALRM, &old_alrm, NULL);
  bool interrupted = g_interrupted;

  print_outcome(&s);
  for (size_t i = 0; i < f->num_engines; i++) {
    free(s.engines[i].error);
    free(s.engines[i].command);
    json_decref(s.engines[i].results);
  }
  free(s.engines);
  json_decref(s.manifest.host_info);
  json_decref(s.manifest.resumed);
  tok_free(&tok);
  if (!ok) return SWEEP_ERROR;
  return interrupted ? SWEEP_INTERRUPTED : SWEEP_DONE;
}
