// run_data.c: loads run folders and result files into RunData (see run_data.h). Every error
// names the file; JSON syntax errors add Jansson's line and column, schema errors the key.
#include "sweep/run_data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/check.h"

static json_t *load_json(const char *path, char *err, size_t err_size) {
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  if (!root) {
    if (jerr.line < 1)
      snprintf(err, err_size, "%s: %s", path, jerr.text);
    else
      snprintf(err, err_size, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
    return NULL;
  }
  if (!json_is_object(root)) {
    snprintf(err, err_size, "%s: expected a JSON object at the top", path);
    json_decref(root);
    return NULL;
  }
  return root;
}

// A string member: required ones must exist; optional ones may be absent or null (NULL).
static bool get_string(json_t *obj, const char *key, bool required, const char **out,
                       const char *file, const char *where, char *err, size_t err_size) {
  json_t *v = json_object_get(obj, key);
  *out = json_is_string(v) ? json_string_value(v) : NULL;
  if (json_is_string(v) || (!required && (!v || json_is_null(v)))) return true;
  snprintf(err, err_size, "%s: %s\"%s\" must be a string%s", file, where, key,
           v ? "" : " (missing)");
  return false;
}

static bool parse_engine(RunEngine *e, json_t *obj, const char *file, char *err,
                         size_t err_size) {
  if (!json_is_object(obj)) {
    snprintf(err, err_size, "%s: \"engines\" items must be objects", file);
    return false;
  }
  const char *w = "engines[]: ";
  if (!get_string(obj, "id", true, &e->id, file, w, err, err_size) ||
      !get_string(obj, "label", false, &e->label, file, w, err, err_size) ||
      !get_string(obj, "command", false, &e->command, file, w, err, err_size) ||
      !get_string(obj, "status", false, &e->status, file, w, err, err_size) ||
      !get_string(obj, "error", false, &e->error, file, w, err, err_size))
    return false;
  if (!e->label) e->label = e->id;
  if (!e->status) e->status = "ok";
  json_t *gpus = json_object_get(obj, "gpus");
  e->gpus = json_is_integer(gpus) ? (int)json_integer_value(gpus) : 1;
  if ((gpus && !json_is_integer(gpus)) || e->gpus < 1) {
    snprintf(err, err_size, "%s: engine \"%s\": \"gpus\" must be an integer >= 1", file, e->id);
    return false;
  }
  return true;
}

static bool parse_workload(RunWorkload *wl, json_t *obj, const char *file, char *err,
                           size_t err_size) {
  if (!json_is_object(obj)) {
    snprintf(err, err_size, "%s: \"workloads\" items must be objects", file);
    return false;
  }
  const char *w = "workloads[]: ";
  if (!get_string(obj, "id", true, &wl->id, file, w, err, err_size) ||
      !get_string(obj, "label", false, &wl->label, file, w, err, err_size) ||
      !get_string(obj, "dataset_name", false, &wl->dataset_name, file, w, err, err_size))
    return false;
  if (!wl->label) wl->label = wl->id;
  json_t *grid = json_object_get(obj, "grid");
  if (json_is_object(grid) &&
      (!get_string(grid, "base", true, &wl->grid_base, file, "workloads[].grid: ", err, err_size) ||
       !get_string(grid, "point", true, &wl->grid_point, file, "workloads[].grid: ", err,
                   err_size)))
    return false;
  return true;
}

static bool parse_comparison(RunComparison *c, json_t *obj, const RunData *run, const char *file,
                             char *err, size_t err_size) {
  const char *w = "comparisons[]: ";
  if (!json_is_object(obj)) {
    snprintf(err, err_size, "%s: \"comparisons\" items must be objects", file);
    return false;
  }
  if (!get_string(obj, "name", true, &c->name, file, w, err, err_size) ||
      !get_string(obj, "base", true, &c->base, file, w, err, err_size) ||
      !get_string(obj, "workload", false, &c->workload, file, w, err, err_size))
    return false;
  json_t *cand = json_object_get(obj, "candidate");
  json_t *list = json_is_string(cand) ? NULL : cand;
  c->num_candidates = list && json_is_array(list) ? json_array_size(list) : 1;
  c->candidates = xcalloc(c->num_candidates, sizeof *c->candidates);
  for (size_t i = 0; i < c->num_candidates; i++) {
    json_t *item = list ? json_array_get(list, i) : cand;
    c->candidates[i] = json_string_value(item);
    if (!c->candidates[i] || run_data_engine_index(run, c->candidates[i]) < 0) {
      snprintf(err, err_size,
               "%s: comparison \"%s\": \"candidate\" must name engines of the run (a string or "
               "an array of them)", file, c->name);
      return false;
    }
  }
  if (run_data_engine_index(run, c->base) < 0 ||
      (c->workload && run_data_workload_index(run, c->workload) < 0)) {
    snprintf(err, err_size, "%s: comparison \"%s\" names an unknown engine or workload", file,
             c->name);
    return false;
  }
  c->per_gpu = json_is_true(json_object_get(obj, "per_gpu"));
  return true;
}

// Whether the engine was given the workload: in its "workloads" list, or every workload when
// the manifest has no list (result files, runs from before the list).
static bool engine_given(const json_t *engine, const char *workload) {
  const json_t *list = json_object_get(engine, "workloads");
  if (!json_is_array(list)) return true;
  size_t i;
  const json_t *id;
  json_array_foreach(list, i, id) if (json_is_string(id) && strcmp(json_string_value(id), workload) == 0)
    return true;
  return false;
}

static bool parse_manifest(RunData *run, const char *file, char *err, size_t err_size) {
  json_t *m = run->manifest;
  if (!get_string(m, "name", true, &run->name, file, "", err, err_size) ||
      !get_string(m, "baseline", false, &run->baseline, file, "", err, err_size) ||
      !get_string(m, "optimized", false, &run->optimized, file, "", err, err_size))
    return false;
  json_t *engines = json_object_get(m, "engines"), *workloads = json_object_get(m, "workloads");
  if (!json_is_array(engines) || !json_is_array(workloads)) {
    snprintf(err, err_size, "%s: \"engines\" and \"workloads\" must be arrays", file);
    return false;
  }
  run->num_engines = json_array_size(engines);
  run->num_workloads = json_array_size(workloads);
  run->engines = xcalloc(run->num_engines + 1, sizeof *run->engines);
  run->workloads = xcalloc(run->num_workloads + 1, sizeof *run->workloads);
  for (size_t i = 0; i < run->num_engines; i++)
    if (!parse_engine(&run->engines[i], json_array_get(engines, i), file, err, err_size))
      return false;
  for (size_t i = 0; i < run->num_workloads; i++)
    if (!parse_workload(&run->workloads[i], json_array_get(workloads, i), file, err, err_size))
      return false;
  json_t *repeat = json_object_get(m, "repeat");
  run->repeat = json_is_integer(repeat) ? (int)json_integer_value(repeat) : 1;
  if (run->repeat < 1) {
    snprintf(err, err_size, "%s: \"repeat\" must be an integer >= 1", file);
    return false;
  }
  if ((run->baseline && run_data_engine_index(run, run->baseline) < 0) ||
      (run->optimized && run_data_engine_index(run, run->optimized) < 0)) {
    snprintf(err, err_size, "%s: \"baseline\" or \"optimized\" names an unknown engine", file);
    return false;
  }
  json_t *comparisons = json_object_get(m, "comparisons");
  run->num_comparisons = json_is_array(comparisons) ? json_array_size(comparisons) : 0;
  run->comparisons = xcalloc(run->num_comparisons + 1, sizeof *run->comparisons);
  for (size_t i = 0; i < run->num_comparisons; i++)
    if (!parse_comparison(&run->comparisons[i], json_array_get(comparisons, i), run, file, err,
                          err_size))
      return false;
  run->pairs = xcalloc(run->num_engines * run->num_workloads + 1, sizeof *run->pairs);
  for (size_t e = 0; e < run->num_engines; e++)
    for (size_t w = 0; w < run->num_workloads; w++) {
      RunPair *p = &run->pairs[e * run->num_workloads + w];
      p->engine = e;
      p->workload = w;
      p->given = engine_given(json_array_get(engines, e), run->workloads[w].id);
    }
  return true;
}

static void pair_add(RunPair *p, json_t *result, int repeat) {
  p->results = xrealloc(p->results, (p->num_results + 1) * sizeof *p->results);
  p->repeats = xrealloc(p->repeats, (p->num_results + 1) * sizeof *p->repeats);
  p->results[p->num_results] = result;
  p->repeats[p->num_results++] = repeat;
}

// "results": {"<engine>/<workload>": {...} | [{...} | null, ...]} of a result file.
static bool load_results_member(RunData *run, const char *file, char *err, size_t err_size) {
  json_t *results = json_object_get(run->manifest, "results");
  if (!json_is_object(results)) {
    snprintf(err, err_size, "%s: \"results\" must be an object of \"engine/workload\" keys",
             file);
    return false;
  }
  const char *key;
  json_t *value;
  json_object_foreach(results, key, value) {
    const char *slash = strchr(key, '/');
    Buf engine = {0};
    buf_append(&engine, key, slash ? (size_t)(slash - key) : strlen(key));
    long e = run_data_engine_index(run, engine.data);
    long w = slash ? run_data_workload_index(run, slash + 1) : -1;
    buf_free(&engine);
    if (e < 0 || w < 0) {
      snprintf(err, err_size, "%s: results: \"%s\" is not \"<engine id>/<workload id>\" of the "
               "file's engines and workloads", file, key);
      return false;
    }
    RunPair *p = &run->pairs[(size_t)e * run->num_workloads + (size_t)w];
    size_t n = json_is_array(value) ? json_array_size(value) : 1;
    for (size_t i = 0; i < n; i++) {
      json_t *item = json_is_array(value) ? json_array_get(value, i) : value;
      if (json_is_array(value) && json_is_null(item)) continue;  // a repeat without a result
      if (!json_is_object(item)) {
        snprintf(err, err_size, "%s: results: \"%s\" must be an object or an array of them "
                 "(null for a repeat without a result)", file, key);
        return false;
      }
      pair_add(p, item, (int)i + 1);
    }
  }
  return true;
}

// <dir>/<engine>/<workload>.json (repeat 1) or .r1.json ... .r<repeat>.json.
static bool load_result_files(RunData *run, char *err, size_t err_size) {
  for (size_t i = 0; i < run->num_engines * run->num_workloads; i++) {
    RunPair *p = &run->pairs[i];
    for (int k = 1; k <= run->repeat; k++) {
      Buf path = {0};
      buf_printf(&path, "%s/%s/%s", run->path, run->engines[p->engine].id,
                 run->workloads[p->workload].id);
      if (run->repeat == 1)
        buf_append_str(&path, ".json");
      else
        buf_printf(&path, ".r%d.json", k);
      struct stat st;
      json_t *result = NULL;
      if (stat(path.data, &st) == 0) {
        result = load_json(path.data, err, err_size);
        if (!result) {
          buf_free(&path);
          return false;
        }
        run->files = xrealloc(run->files, (run->num_files + 1) * sizeof *run->files);
        run->files[run->num_files++] = result;
        pair_add(p, result, k);
      }
      buf_free(&path);
    }
  }
  return true;
}

bool run_data_load(RunData *run, const char *path, char *err, size_t err_size) {
  memset(run, 0, sizeof *run);
  run->path = xstrdup(path);
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(err, err_size, "%s: %s", path, strerror(errno));
    return false;
  }
  bool folder = S_ISDIR(st.st_mode);
  Buf file = {0};
  buf_printf(&file, folder ? "%s/manifest.json" : "%s", path);
  run->manifest = load_json(file.data, err, err_size);
  bool ok = run->manifest && parse_manifest(run, file.data, err, err_size);
  if (ok) ok = folder ? load_result_files(run, err, err_size)
                      : load_results_member(run, file.data, err, err_size);
  buf_free(&file);
  return ok;
}

void run_data_free(RunData *run) {
  for (size_t i = 0; run->pairs && i < run->num_engines * run->num_workloads; i++) {
    free(run->pairs[i].results);
    free(run->pairs[i].repeats);
  }
  for (size_t i = 0; i < run->num_comparisons; i++) free(run->comparisons[i].candidates);
  for (size_t i = 0; i < run->num_files; i++) json_decref(run->files[i]);
  free(run->files);
  free(run->pairs);
  free(run->comparisons);
  free(run->engines);
  free(run->workloads);
  json_decref(run->manifest);
  free(run->path);
  memset(run, 0, sizeof *run);
}

const RunPair *run_data_pair(const RunData *run, size_t engine, size_t workload) {
  CHECK(engine < run->num_engines && workload < run->num_workloads);
  return &run->pairs[engine * run->num_workloads + workload];
}

long run_data_engine_index(const RunData *run, const char *id) {
  for (size_t i = 0; i < run->num_engines; i++)
    if (run->engines[i].id && strcmp(run->engines[i].id, id) == 0) return (long)i;
  return -1;
}

long run_data_workload_index(const RunData *run, const char *id) {
  for (size_t i = 0; i < run->num_workloads; i++)
    if (run->workloads[i].id && strcmp(run->workloads[i].id, id) == 0) return (long)i;
  return -1;
}

bool run_data_engine_failed(const RunEngine *engine) {
  return strcmp(engine->status, "failed") == 0;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

RunStat run_data_stat(const RunPair *pair, const char *key) {
  RunStat s = {0};
  double *values = xcalloc(pair->num_results + 1, sizeof *values);
  for (size_t i = 0; i < pair->num_results; i++) {
    json_t *v = json_object_get(pair->results[i], key);
    if (json_is_number(v)) values[s.num_values++] = json_number_value(v);
  }
  if (s.num_values > 0) {
    qsort(values, s.num_values, sizeof *values, compare_doubles);
    size_t n = s.num_values;
    s.min = values[0];
    s.max = values[n - 1];
    s.median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  }
  free(values);
  return s;
}

const char *run_command_without_folder(const char *command) {
  const char *program_end = strchr(command, ' ');
  if (!program_end) program_end = command + strlen(command);
  const char *shown = command;
  for (const char *p = command; p < program_end; p++)
    if (*p == '/') shown = p + 1;
  return shown;
}

json_t *run_data_export(const RunData *run) {
  json_t *out = json_deep_copy(run->manifest);
  CHECK(out);
  size_t i_engine;
  json_t *engine;
  json_array_foreach(json_object_get(out, "engines"), i_engine, engine) {
    const char *command = json_string_value(json_object_get(engine, "command"));
    if (command)
      json_object_set_new(engine, "command", json_string(run_command_without_folder(command)));
  }
  json_t *results = json_object();
  for (size_t i = 0; i < run->num_engines * run->num_workloads; i++) {
    const RunPair *p = &run->pairs[i];
    if (p->num_results == 0) continue;
    Buf key = {0};
    buf_printf(&key, "%s/%s", run->engines[p->engine].id, run->workloads[p->workload].id);
    json_t *value = json_array();
    for (size_t k = 0; k < p->num_results; k++) {
      while (json_array_size(value) + 1 < (size_t)p->repeats[k])  // keep the repeat numbers
        json_array_append_new(value, json_null());
      json_array_append_new(value, json_deep_copy(p->results[k]));
    }
    if (json_array_size(value) == 1) {
      json_t *one = json_incref(json_array_get(value, 0));
      json_decref(value);
      value = one;
    }
    json_object_set_new(results, key.data, value);
    buf_free(&key);
  }
  json_object_set_new(out, "results", results);
  return out;
}
