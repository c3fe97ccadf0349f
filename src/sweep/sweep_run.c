// sweep_run.c: the sweep loop. For each engine: start it in its own process group, wait until it
// is ready, run its workloads through bench_run (results in <run>/<engine>/<workload>[.rK].json),
// stop it; a failed engine is recorded with its last error line and the loop goes on. SIGINT and
// SIGTERM set a flag and send SIGTERM to the running engine's group; the loop then stops the
// engine, marks the manifest interrupted and returns.
#include "sweep/sweep_run.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_options.h"
#include "bench/bench_run.h"
#include "common/buf.h"
#include "common/file.h"
#include "common/check.h"
#include "common/clock.h"
#include "sweep/engine_process.h"

#define NS_PER_SEC INT64_C(1000000000)
// The sweep has already seen /health answer: the load generator's own test request needs less
// than vLLM's 600 s (a workload's ready-check-timeout-sec overrides this).
#define SWEEP_READY_CHECK "--ready-check-timeout-sec=30"

static volatile sig_atomic_t g_interrupted;
static volatile sig_atomic_t g_engine_pgid;

static void on_signal(int sig) {
  (void)sig;
  g_interrupted = 1;
  if (g_engine_pgid > 0) kill(-g_engine_pgid, SIGTERM);
}

typedef struct {
  const char *status;  // ok | failed | skipped
  char *error;
  char *command;
} EngineState;

typedef struct {
  const SweepFile *f;
  const SweepRunOptions *o;
  char run_dir[1024];
  char started[32];
  json_t *host_info;   // git_commit, host, cpu, gpu, versions
  EngineState *engines;
  bool interrupted, finished;
  int64_t start_ns, pair_ns;  // when the sweep started; time spent in workloads so far
  size_t num_pairs, num_pairs_done;
} Sweep;

// ---------------------------------------------------------------------------------------------
// the manifest

static void utc_now(char *out, size_t out_size, const char *fmt) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(out, out_size, fmt, &tm);
}

// First line of a constant command's output (no sweep-file text ever reaches a shell); NULL when
// the command fails or prints nothing.
static json_t *command_line(const char *cmd) {
  FILE *p = popen(cmd, "r");
  if (!p) return json_null();
  char line[512] = "";
  bool got = fgets(line, sizeof line, p) != NULL;
  int rc = pclose(p);
  line[strcspn(line, "\n")] = '\0';
  return got && rc == 0 && line[0] ? json_string(line) : json_null();
}

static json_t *cpu_name(void) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  json_t *name = json_null();
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
      char *v = strchr(line, ':') + 1;
      while (*v == ' ') v++;
      v[strcspn(v, "\n")] = '\0';
      json_decref(name);
      name = json_string(v);
      break;
    }
  if (f) fclose(f);
  return name;
}

static json_t *host_info(void) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  json_t *git = command_line("git rev-parse HEAD 2>/dev/null");
  json_t *versions = json_pack("{s:O, s:s, s:s}", "gptoss-bench", git, "jansson", JANSSON_VERSION,
                               "libcurl", curl_version_info(CURLVERSION_NOW)->version);
  return json_pack("{s:o, s:s, s:o, s:o, s:o}", "git_commit", git, "host", host, "cpu", cpu_name(),
                   "gpu",
                   command_line("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader "
                                "2>/dev/null"),
                   "versions", versions);
}

static json_t *engine_ref(const SweepFile *f, long i) {
  return i < 0 ? json_null() : json_string(f->engines[i].id);
}

static bool write_manifest(const Sweep *s, char *err, size_t err_size) {
  const SweepFile *f = s->f;
  char finished[32] = "";
  if (s->finished) utc_now(finished, sizeof finished, "%Y-%m-%dT%H:%M:%SZ");
  json_t *m = json_pack("{s:s, s:s, s:s, s:s, s:o, s:b}", "name",
                        s->o->name ? s->o->name : f->name, "sweep_file", f->path, "sweep_text",
                        f->text.data ? f->text.data : "", "started", s->started, "finished",
                        s->finished ? json_string(finished) : json_null(), "interrupted",
                        s->interrupted);
  json_object_update(m, s->host_info);
  json_t *engines = json_array();
  for (size_t i = 0; i < f->num_engines; i++) {
    const SweepEngine *e = &f->engines[i];
    const EngineState *st = &s->engines[i];
    json_array_append_new(
        engines, json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:o}", "id", e->id, "label", e->label,
                           "gpus", e->gpus, "kind", e->model ? "builtin" : "command", "command",
                           st->command, "status", st->status, "error",
                           st->error ? json_string(st->error) : json_null()));
  }
  json_t *workloads = json_array();
  for (size_t i = 0; i < f->num_workloads; i++)
    json_array_append_new(workloads,
                          json_pack("{s:s, s:s, s:s}", "id", f->workloads[i].id, "label",
                                    f->workloads[i].label, "dataset_name",
                                    f->workloads[i].dataset_name));
  json_t *comparisons = json_array();
  for (size_t i = 0; i < f->num_comparisons; i++) {
    const SweepComparison *c = &f->comparisons[i];
    json_array_append_new(comparisons,
                          json_pack("{s:s, s:s, s:s, s:b}", "name", c->label, "base",
                                    f->engines[c->base].id, "candidate",
                                    f->engines[c->candidate].id, "per_gpu", c->per_gpu));
  }
  json_object_set_new(m, "engines", engines);
  json_object_set_new(m, "workloads", workloads);
  json_object_set_new(m, "baseline", engine_ref(f, f->baseline));
  json_object_set_new(m, "optimized", engine_ref(f, f->optimized));
  json_object_set_new(m, "comparisons", comparisons);
  json_object_set_new(m, "repeat", json_integer(f->repeat));
  char *text = json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  char path[1200];
  snprintf(path, sizeof path, "%s/manifest.json", s->run_dir);
  bool ok = file_write_atomic(path, text, strlen(text), err, err_size);
  free(text);
  json_decref(m);
  return ok;
}

// ---------------------------------------------------------------------------------------------
// progress

static void format_duration(int64_t ns, char *out, size_t out_size) {
  long sec = (long)(ns / NS_PER_SEC);
  if (sec >= 3600) snprintf(out, out_size, "%ldh%02ldm", sec / 3600, sec / 60 % 60);
  else snprintf(out, out_size, "%ldm%02lds", sec / 60, sec % 60);
}

static void progress(const Sweep *s, size_t ei, size_t num_sel, size_t sel_i, size_t wi, size_t wj,
                     size_t num_w, int rep) {
  char elapsed[32], eta[32] = "unknown";
  format_duration(clock_now_ns() - s->start_ns, elapsed, sizeof elapsed);
  if (s->num_pairs_done)
    format_duration(s->pair_ns / (int64_t)s->num_pairs_done *
                        (int64_t)(s->num_pairs - s->num_pairs_done),
                    eta, sizeof eta);
  const SweepFile *f = s->f;
  fprintf(stderr, "sweep: configuration %zu/%zu %s, workload %zu/%zu %s", sel_i, num_sel,
          f->engines[ei].id, wj, num_w, f->workloads[wi].id);
  if (f->repeat > 1) fprintf(stderr, " (run %d/%d)", rep, f->repeat);
  fprintf(stderr, ", elapsed %s, ETA %s\n", elapsed, eta);
}

// ---------------------------------------------------------------------------------------------
// one engine

static char *join_words(char *const *argv) {
  Buf b = {0};
  buf_append_str(&b, "");
  for (size_t i = 0; argv[i]; i++) buf_printf(&b, "%s%s", i ? " " : "", argv[i]);
  return b.data;
}

static void set_failed(EngineState *st, const char *fmt, const char *a, const char *b) {
  Buf msg = {0};
  buf_printf(&msg, fmt, a, b);
  st->status = "failed";
  free(st->error);
  st->error = msg.data;
  fprintf(stderr, "sweep: failed: %s\n", msg.data);
}

// One workload run; false when the load generator failed (st records it).
static bool run_workload(Sweep *s, const SweepEngine *e, const SweepWorkload *w, int port, int rep,
                         const Tokenizer *tok, EngineState *st) {
  char base_url[64], path[1400], err[1024];
  snprintf(base_url, sizeof base_url, "--base-url=http://127.0.0.1:%d", port);
  if (s->f->repeat > 1) snprintf(path, sizeof path, "%s/%s/%s.r%d.json", s->run_dir, e->id, w->id, rep);
  else snprintf(path, sizeof path, "%s/%s/%s.json", s->run_dir, e->id, w->id);
  int argc = w->num_args + 2;
  char **argv = xcalloc((size_t)argc + 1, sizeof *argv);
  argv[0] = w->args[0];
  argv[1] = SWEEP_READY_CHECK;
  argv[2] = base_url;
  for (int i = 1; i < w->num_args; i++) argv[i + 2] = w->args[i];
  BenchOptions bo;
  bool ok = bench_options_parse(&bo, argc, argv, err, sizeof err);
  CHECK(ok);  // the sweep file's check already parsed these flags
  BenchRunIo io = {.out = stdout, .tok = tok, .result_path = path};
  int64_t t0 = clock_now_ns();
  ok = bench_run(&bo, &io, err, sizeof err);
  s->pair_ns += clock_now_ns() - t0;
  s->num_pairs_done++;
  if (g_interrupted) unlink(path);  // cut short: not a result
  else if (!ok) set_failed(st, "workload %s: %s", w->id, err);
  bench_options_free(&bo);
  free(argv);
  return ok;
}

static void run_engine(Sweep *s, size_t ei, size_t num_sel, size_t sel_i, const Tokenizer *tok) {
  const SweepFile *f = s->f;
  const SweepEngine *e = &f->engines[ei];
  EngineState *st = &s->engines[ei];
  char dir[1200], log_path[1300], err[1024];
  snprintf(dir, sizeof dir, "%s/%s", s->run_dir, e->id);
  snprintf(log_path, sizeof log_path, "%s/engine.log", dir);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    set_failed(st, "cannot create %s: %s", dir, strerror(errno));
    return;
  }
  int port = f->base_port ? f->base_port : eproc_free_port();
  char **argv = sweep_engine_argv(e, s->o->engine_bin, port);
  free(st->command);
  st->command = join_words(argv);
  fprintf(stderr, "sweep: configuration %zu/%zu %s: starting %s\n", sel_i, num_sel, e->id,
          st->command);
  EngineProcess p;
  bool started = eproc_start(&p, argv, e->env, e->num_env, port, log_path, err, sizeof err);
  sweep_argv_free(argv);
  if (!started) {
    set_failed(st, "%s%s", err, "");
    eproc_free(&p);
    return;
  }
  g_engine_pgid = p.pid;
  if (g_interrupted) kill(-p.pid, SIGTERM);
  size_t num_w = 0, wj = 0;
  for (size_t i = 0; i < f->num_workloads; i++) num_w += e->runs[i];
  if (!eproc_wait_ready(&p, e->ready_timeout_sec, &g_interrupted, err, sizeof err)) {
    if (!g_interrupted) set_failed(st, "%s%s", err, "");
    s->num_pairs -= num_w * (size_t)f->repeat;
  } else {
    st->status = "ok";
    for (size_t wi = 0; wi < f->num_workloads && !g_interrupted; wi++) {
      if (!e->runs[wi]) continue;
      wj++;
      for (int rep = 1; rep <= f->repeat && !g_interrupted; rep++) {
        if (!eproc_alive(&p)) {
          char line[512];
          eproc_last_error_line(p.log_path, line, sizeof line);
          set_failed(st, "the engine exited during the workloads: %s%s", line, "");
          break;
        }
        progress(s, ei, num_sel, sel_i, wi, wj, num_w, rep);
        run_workload(s, e, &f->workloads[wi], port, rep, tok, st);
      }
    }
  }
  eproc_stop(&p, f->stop_grace_sec);
  g_engine_pgid = 0;
  eproc_free(&p);
}

// ---------------------------------------------------------------------------------------------

SweepOutcome sweep_run(const SweepFile *f, const SweepRunOptions *o, char *run_dir,
                       size_t run_dir_size, char *err, size_t err_size) {
  Sweep s = {.f = f, .o = o, .start_ns = clock_now_ns()};
  char stamp[32];
  utc_now(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ");
  utc_now(s.started, sizeof s.started, "%Y-%m-%dT%H:%M:%SZ");
  snprintf(s.run_dir, sizeof s.run_dir, "%s/%s-%s", o->results_dir, o->name ? o->name : f->name,
           stamp);
  snprintf(run_dir, run_dir_size, "%s", s.run_dir);
  mkdir(o->results_dir, 0755);
  if (mkdir(s.run_dir, 0755) != 0) {
    snprintf(err, err_size, "cannot create the run folder %s: %s", s.run_dir, strerror(errno));
    return SWEEP_ERROR;
  }
  Tokenizer tok;
  if (!tok_init(&tok, TOK_O200K_HARMONY, NULL, err, err_size)) return SWEEP_ERROR;
  s.host_info = host_info();
  s.engines = xcalloc(f->num_engines, sizeof *s.engines);
  size_t num_sel = 0;
  for (size_t i = 0; i < f->num_engines; i++) {
    s.engines[i].status = "skipped";
    char **argv = sweep_engine_argv(&f->engines[i], o->engine_bin, -1);
    s.engines[i].command = join_words(argv);
    sweep_argv_free(argv);
    if (!o->selected[i]) continue;
    num_sel++;
    for (size_t j = 0; j < f->num_workloads; j++) s.num_pairs += f->engines[i].runs[j] * (size_t)f->repeat;
  }

  struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
  sigemptyset(&sa.sa_mask);
  g_interrupted = 0;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  bool ok = write_manifest(&s, err, err_size);
  for (size_t i = 0, sel_i = 0; ok && i < f->num_engines && !g_interrupted; i++) {
    if (!o->selected[i]) continue;
    run_engine(&s, i, num_sel, ++sel_i, &tok);
    ok = write_manifest(&s, err, err_size);
  }
  s.interrupted = g_interrupted;
  s.finished = true;
  if (ok) ok = write_manifest(&s, err, err_size);
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);

  char elapsed[32];
  format_duration(clock_now_ns() - s.start_ns, elapsed, sizeof elapsed);
  fprintf(stderr, "sweep: %s after %s: %s\n", s.interrupted ? "interrupted" : "done", elapsed,
          s.run_dir);
  for (size_t i = 0; i < f->num_engines; i++) {
    free(s.engines[i].error);
    free(s.engines[i].command);
  }
  free(s.engines);
  json_decref(s.host_info);
  tok_free(&tok);
  if (!ok) return SWEEP_ERROR;
  return s.interrupted ? SWEEP_INTERRUPTED : SWEEP_DONE;
}
