// sweep_manifest.c: the manifest's JSON (Jansson, keys in a fixed order) and the host facts it
// records. Runs only constant commands (git, nvidia-smi) through popen: no sweep-file text ever
// reaches a shell.
#include "sweep/sweep_manifest.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cpu_cores.h"
#include "common/file.h"

// First line of a constant command's output; null when the command fails or prints nothing.
static json_t *command_line(const char *cmd) {
  FILE *p = popen(cmd, "r");
  if (!p) return json_null();
  char line[512] = "";
  bool got = fgets(line, sizeof line, p) != NULL;
  int rc = pclose(p);
  line[strcspn(line, "\n")] = '\0';
  return got && rc == 0 && line[0] ? json_string(line) : json_null();
}

// The value of the first "KEY<blanks>: value" line of cpuinfo (malloc'd), NULL when absent.
static char *cpuinfo_value(const char *cpuinfo, const char *key) {
  size_t key_len = strlen(key);
  for (const char *line = cpuinfo; *line;) {
    const char *v = line + key_len + strspn(line + key_len, " \t");
    if (strncmp(line, key, key_len) == 0 && *v == ':') {
      v += 1 + strspn(v + 1, " ");
      Buf value = {0};
      buf_append(&value, v, strcspn(v, "\n"));
      return value.data;
    }
    const char *next = strchr(line, '\n');
    if (!next) break;
    line = next + 1;
  }
  return NULL;
}

// The CPU as a reader of a baseline needs it: /proc/cpuinfo's model name (a VM may show only
// "AMD EPYC"), vendor, family/model/stepping, the kernel-relevant ISA flags it has (the engine
// picks its kernels by them), and how many CPUs this process may use (affinity and cgroup quota).
static json_t *cpu_info(char **model_name) {
  static const char *const NOTABLE[] = {"avx2",        "fma",          "avx512f",
                                        "avx512bw",    "avx512vl",     "avx512_vnni",
                                        "avx512_bf16", "avx_vnni",     "amx_tile",
                                        "amx_bf16",    "amx_int8",     "avx512_fp16"};
  Buf text = {0};
  char ignored[256];  // no /proc/cpuinfo: every field is null
  file_read_all("/proc/cpuinfo", &text, ignored, sizeof ignored);
  const char *info = text.data ? text.data : "";
  char *vendor = cpuinfo_value(info, "vendor_id"), *family = cpuinfo_value(info, "cpu family");
  char *model = cpuinfo_value(info, "model"), *stepping = cpuinfo_value(info, "stepping");
  char *flags = cpuinfo_value(info, "flags");
  *model_name = cpuinfo_value(info, "model name");
  buf_free(&text);
  json_t *isa = json_array();
  Buf padded = {0};  // " flag flag ... ": each flag found as " NAME "
  buf_printf(&padded, " %s ", flags ? flags : "");
  for (size_t i = 0; i < sizeof NOTABLE / sizeof *NOTABLE; i++) {
    char word[32];
    snprintf(word, sizeof word, " %s ", NOTABLE[i]);
    if (strstr(padded.data, word)) json_array_append_new(isa, json_string(NOTABLE[i]));
  }
  buf_free(&padded);
  const int usable = cpu_cores_usable();
  json_t *j = json_pack("{s:s?, s:s?, s:s?, s:s?, s:o, s:i}", "vendor", vendor, "family", family,
                        "model", model, "stepping", stepping, "isa", isa, "usable_cpus", usable);
  free(vendor);
  free(family);
  free(model);
  free(stepping);
  free(flags);
  return j;
}

json_t *sweep_host_info(void) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  json_t *git = command_line("git rev-parse HEAD 2>/dev/null");
  json_t *versions = json_pack("{s:O, s:s, s:s}", "gptoss-bench", git, "jansson", JANSSON_VERSION,
                               "libcurl", curl_version_info(CURLVERSION_NOW)->version);
  char *model_name;
  json_t *cpu_detail = cpu_info(&model_name);
  json_t *cpu = model_name ? json_string(model_name) : json_null();
  free(model_name);
  return json_pack("{s:o, s:s, s:o, s:o, s:o, s:o}", "git_commit", git, "host", host, "cpu", cpu,
                   "cpu_detail", cpu_detail, "gpu",
                   command_line("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader "
                                "2>/dev/null"),
                   "versions", versions);
}

static json_t *engine_ref(const SweepFile *f, long i) {
  return i < 0 ? json_null() : json_string(f->engines[i].id);
}

// {"base": ID, "point": "FLAG=VALUE, ..."} for a grid point, else null.
static json_t *grid_json(const SweepGridOrigin *g) {
  return g->base ? json_pack("{s:s, s:s}", "base", g->base, "point", g->point) : json_null();
}

static json_t *engines_json(const SweepManifest *m) {
  json_t *engines = json_array();
  for (size_t i = 0; i < m->f->num_engines; i++) {
    const SweepEngine *e = &m->f->engines[i];
    const SweepEngineState *st = &m->engines[i];
    json_t *engine =
        json_pack("{s:s, s:s, s:i, s:s, s:s, s:o, s:s, s:o}", "id", e->id, "label", e->label,
                  "gpus", e->gpus, "kind", e->model ? "builtin" : "command", "command",
                  st->command, "pid", st->pid ? json_integer(st->pid) : json_null(), "status",
                  st->status, "error", st->error ? json_string(st->error) : json_null());
    json_t *workloads = json_array();
    for (size_t w = 0; w < m->f->num_workloads; w++)
      if (e->runs[w]) json_array_append_new(workloads, json_string(m->f->workloads[w].id));
    json_object_set_new(engine, "workloads", workloads);
    json_object_set_new(engine, "grid", grid_json(&e->grid));
    if (st->results) json_object_set(engine, "results", st->results);
    const SweepSlurmJob *job = st->slurm;
    if (job)
      json_object_set_new(engine, "slurm",
                          json_pack("{s:o, s:s?, s:s?, s:s?, s:O?}", "job_id",
                                    job->job_id ? json_integer(job->job_id) : json_null(),
                                    "state", job->state, "reason", job->reason, "node",
                                    job->node, "host", job->host));
    json_array_append_new(engines, engine);
  }
  return engines;
}

void sweep_utc_now(char *out, size_t out_size, const char *fmt) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(out, out_size, fmt, &tm);
}

void sweep_print_outcome(const SweepManifest *m, const char *elapsed) {
  fprintf(stderr, "sweep: %s%s%s: %s\n", m->interrupted ? "interrupted" : "done",
          elapsed ? " after " : "", elapsed ? elapsed : "", m->run_dir);
  for (size_t i = 0; i < m->f->num_engines; i++) {
    const SweepEngineState *st = &m->engines[i];
    fprintf(stderr, "sweep:   %s: %s%s%s\n", m->f->engines[i].id, st->status,
            st->error ? ": " : "", st->error ? st->error : "");
  }
}

static json_t *manifest_json(const SweepManifest *m) {
  const SweepFile *f = m->f;
  char finished[32] = "";
  if (m->finished) sweep_utc_now(finished, sizeof finished, "%Y-%m-%dT%H:%M:%SZ");
  json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:o, s:b}", "name", m->name, "sweep_file", f->path,
                        "sweep_text", f->text.data ? f->text.data : "", "started", m->started,
                        "finished", m->finished ? json_string(finished) : json_null(),
                        "interrupted", m->interrupted);
  if (m->resumed) json_object_set(j, "resumed", m->resumed);
  json_object_update(j, m->host_info);
  json_t *workloads = json_array();
  for (size_t i = 0; i < f->num_workloads; i++)
    json_array_append_new(workloads,
                          json_pack("{s:s, s:s, s:s, s:o}", "id", f->workloads[i].id, "label",
                                    f->workloads[i].label, "dataset_name",
                                    f->workloads[i].dataset_name, "grid",
                                    grid_json(&f->workloads[i].grid)));
  json_t *comparisons = json_array();
  for (size_t i = 0; i < f->num_comparisons; i++) {
    const SweepComparison *c = &f->comparisons[i];
    json_array_append_new(comparisons,
                          json_pack("{s:s, s:s, s:s, s:b}", "name", c->label, "base",
                                    f->engines[c->base].id, "candidate",
                                    f->engines[c->candidate].id, "per_gpu", c->per_gpu));
  }
  json_object_set_new(j, "engines", engines_json(m));
  json_object_set_new(j, "workloads", workloads);
  json_object_set_new(j, "baseline", engine_ref(f, f->baseline));
  json_object_set_new(j, "optimized", engine_ref(f, f->optimized));
  json_object_set_new(j, "comparisons", comparisons);
  // "repeat": results per (engine, workload) pair, over all rounds (what run_data loads).
  json_object_set_new(j, "repeat", json_integer((json_int_t)f->repeat * f->rounds));
  json_object_set_new(j, "rounds", json_integer(f->rounds));
  return j;
}

bool sweep_manifest_write(const SweepManifest *m, char *err, size_t err_size) {
  json_t *j = manifest_json(m);
  char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(j);
  char path[1200];
  if (m->path) snprintf(path, sizeof path, "%s", m->path);
  else snprintf(path, sizeof path, "%s/manifest.json", m->run_dir);
  bool ok = file_write_atomic(path, text, strlen(text), err, err_size);
  free(text);
  return ok;
}
