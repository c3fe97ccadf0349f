// sweep_file.c: parses a sweep file with inih into a list of (section, key, value, line) entries,
// then reads the entries into a SweepFile, checking every value. inih gives no line numbers to
// the handler, so the file is fed to it line by line through a reader that counts them.
#include "sweep/sweep_file.h"

#include <ctype.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_options.h"
#include "common/check.h"
#include "common/file.h"
#include "sweep/sweep_grid.h"

#define MAX_GPUS 64

typedef struct {
  char *section, *key, *value;
  int line;
} Entry;

typedef struct {
  const char *text;  // what is left to read
  int line;          // of the line last handed to inih
  int long_line;     // first line longer than inih reads (0: none)
  Entry *entries;
  size_t num_entries;
} Reader;

typedef struct {
  const char *path;
  char *err;
  size_t err_size;
} Ctx;

__attribute__((format(printf, 5, 6))) static bool fail(const Ctx *c, int line, const char *section,
                                                       const char *key, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(c->err, c->err_size, "%s:%d: [%s] %s: %s", c->path, line, section, key, msg);
  return false;
}

static char *read_line(char *str, int num, void *stream) {
  Reader *r = stream;
  if (!*r->text) return NULL;
  const char *nl = strchr(r->text, '\n');
  size_t len = nl ? (size_t)(nl - r->text) + 1 : strlen(r->text);
  r->line++;
  if (len >= (size_t)num) {  // inih would split it and the line numbers would drift
    if (!r->long_line) r->long_line = r->line;
    len = (size_t)num - 1;
  }
  memcpy(str, r->text, len);
  str[len] = '\0';
  r->text = nl ? nl + 1 : r->text + strlen(r->text);
  return str;
}

static int on_entry(void *user, const char *section, const char *key, const char *value) {
  Reader *r = user;
  r->entries = xrealloc(r->entries, (r->num_entries + 1) * sizeof *r->entries);
  r->entries[r->num_entries++] =
      (Entry){xstrdup(section), xstrdup(key), xstrdup(value), r->line};
  return 1;
}

// ---------------------------------------------------------------------------------------------
// values

static bool valid_id(const char *s) {
  if (!*s) return false;
  for (; *s; s++)
    if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || strchr("-_.", *s)))
      return false;
  return true;
}

static bool parse_int(const Ctx *c, const Entry *e, int lo, int hi, int *out) {
  char *end;
  long v = strtol(e->value, &end, 10);
  if (end == e->value || *end || v < lo || v > hi)
    return fail(c, e->line, e->section, e->key, "'%s' is not a whole number from %d to %d",
                e->value, lo, hi);
  *out = (int)v;
  return true;
}

static bool parse_bool(const Ctx *c, const Entry *e, bool *out) {
  if (strcmp(e->value, "true") == 0) *out = true;
  else if (strcmp(e->value, "false") == 0) *out = false;
  else return fail(c, e->line, e->section, e->key, "'%s' is not true or false", e->value);
  return true;
}

static void sweep_argv_free_n(char **words, size_t n) {
  for (size_t i = 0; i < n; i++) free(words[i]);
  free(words);
}

static void push_word(char ***words, size_t *n, const char *s, size_t len) {
  *words = xrealloc(*words, (*n + 1) * sizeof **words);
  char *w = xmalloc(len + 1);
  memcpy(w, s, len);
  w[len] = '\0';
  (*words)[(*n)++] = w;
}

// Splits on blanks; '...' and "..." group words (no escapes, no shell). Appends the words to
// *words; on failure leaves *words holding what it held before (the words split before the
// fault are freed, and an array this call created too).
static bool split_words(const Ctx *c, const Entry *e, char ***words, size_t *n) {
  Buf w = {0};
  const char *s = e->value;
  size_t first = *n;
  while (*s) {
    while (isspace((unsigned char)*s)) s++;
    if (!*s) break;
    buf_clear(&w);
    buf_append_str(&w, "");
    while (*s && !isspace((unsigned char)*s)) {
      if (*s == '"' || *s == '\'') {
        const char *close = strchr(s + 1, *s);
        if (!close) {
          buf_free(&w);
          for (; *n > first; --*n) free((*words)[*n - 1]);
          if (first == 0) {
            free(*words);
            *words = NULL;
          }
          return fail(c, e->line, e->section, e->key, "unclosed %c quote", *s);
        }
        buf_append(&w, s + 1, (size_t)(close - s - 1));
        s = close + 1;
      } else {
        buf_append(&w, s++, 1);
      }
    }
    push_word(words, n, w.data, w.len);
  }
  buf_free(&w);
  return true;
}

// ---------------------------------------------------------------------------------------------
// sections

static SweepEngine *find_engine(SweepFile *f, const char *id) {
  for (size_t i = 0; i < f->num_engines; i++)
    if (strcmp(f->engines[i].id, id) == 0) return &f->engines[i];
  return NULL;
}

static long engine_index(SweepFile *f, const char *id) {
  SweepEngine *e = find_engine(f, id);
  return e ? e - f->engines : -1;
}

static SweepWorkload *find_workload(SweepFile *f, const char *id) {
  for (size_t i = 0; i < f->num_workloads; i++)
    if (strcmp(f->workloads[i].id, id) == 0) return &f->workloads[i];
  return NULL;
}

static SweepComparison *find_comparison(SweepFile *f, const char *id) {
  for (size_t i = 0; i < f->num_comparisons; i++)
    if (strcmp(f->comparisons[i].id, id) == 0) return &f->comparisons[i];
  return NULL;
}

// Creates the engines, workloads and comparisons named by section headers, in file order.
static bool declare_sections(const Ctx *c, SweepFile *f, const Reader *r) {
  for (size_t i = 0; i < r->num_entries; i++) {
    const Entry *e = &r->entries[i];
    const char *dot = strchr(e->section, '.'), *id = dot ? dot + 1 : "";
    size_t kind_len = dot ? (size_t)(dot - e->section) : strlen(e->section);
    if (strcmp(e->section, "sweep") == 0 || strcmp(e->section, "slurm") == 0) continue;
    bool is_engine = kind_len == 6 && strncmp(e->section, "engine", 6) == 0;
    bool is_workload = kind_len == 8 && strncmp(e->section, "workload", 8) == 0;
    bool is_compare = kind_len == 7 && strncmp(e->section, "compare", 7) == 0;
    if (!is_engine && !is_workload && !is_compare)
      return fail(c, e->line, e->section, e->key,
                  "unknown section: use [sweep], [engine.ID], [workload.ID], [compare.ID] or "
                  "[slurm]");
    if (!valid_id(id))
      return fail(c, e->line, e->section, e->key,
                  "the id '%s' must be made of a-z, 0-9, '-', '_' and '.'", id);
    if (is_engine && !find_engine(f, id)) {
      f->engines = xrealloc(f->engines, (f->num_engines + 1) * sizeof *f->engines);
      f->engines[f->num_engines++] =
          (SweepEngine){.id = xstrdup(id), .line = e->line, .gpus = 1, .ready_timeout_sec = 600};
    } else if (is_workload && !find_workload(f, id)) {
      f->workloads = xrealloc(f->workloads, (f->num_workloads + 1) * sizeof *f->workloads);
      f->workloads[f->num_workloads++] = (SweepWorkload){.id = xstrdup(id), .line = e->line};
    } else if (is_compare && !find_comparison(f, id)) {
      f->comparisons = xrealloc(f->comparisons, (f->num_comparisons + 1) * sizeof *f->comparisons);
      f->comparisons[f->num_comparisons++] =
          (SweepComparison){.id = xstrdup(id), .line = e->line, .base = (size_t)-1,
                            .candidate = (size_t)-1};
    }
  }
  return true;
}

static bool engine_ref(const Ctx *c, SweepFile *f, const Entry *e, long *out) {
  *out = engine_index(f, e->value);
  if (*out >= 0) return true;
  size_t num_points = 0, first = 0;
  for (size_t i = 0; i < f->num_engines; i++)
    if (sweep_grid_matches(e->value, "", &f->engines[i].grid) && num_points++ == 0) first = i;
  if (num_points)
    return fail(c, e->line, e->section, e->key,
                "[engine.%s] is a grid of %zu points: name one of them (e.g. %s)", e->value,
                num_points, f->engines[first].id);
  return fail(c, e->line, e->section, e->key, "no [engine.%s] in this file", e->value);
}

static bool read_sweep_key(const Ctx *c, SweepFile *f, const Entry *e) {
  if (strcmp(e->key, "name") == 0) {
    if (!valid_id(e->value))
      return fail(c, e->line, e->section, e->key, "'%s' must be made of a-z, 0-9, '-', '_', '.'",
                  e->value);
    free(f->name);
    f->name = xstrdup(e->value);
    return true;
  }
  if (strcmp(e->key, "repeat") == 0) return parse_int(c, e, 1, 1000, &f->repeat);
  if (strcmp(e->key, "rounds") == 0) return parse_int(c, e, 1, 1000, &f->rounds);
  if (strcmp(e->key, "base_port") == 0) return parse_int(c, e, 0, 65535, &f->base_port);
  if (strcmp(e->key, "stop_grace") == 0) return parse_int(c, e, 0, 3600, &f->stop_grace_sec);
  if (strcmp(e->key, "baseline") == 0) return engine_ref(c, f, e, &f->baseline);
  if (strcmp(e->key, "optimized") == 0) return engine_ref(c, f, e, &f->optimized);
  return fail(c, e->line, e->section, e->key,
              "unknown key: use name, repeat, rounds, baseline, optimized, base_port or "
              "stop_grace");
}

// An sbatch option named key (without "slurm." in an engine section) into options.
static bool read_slurm_option(const Ctx *c, const Entry *e, const char *key,
                              SweepSlurmOption **options, size_t *num_options) {
  static const char *const owned[] = {"output", "error",  "chdir", "job-name", "parsable",
                                      "wrap",   "array",  "nodes", "wait",     "no-requeue"};
  char name[64];
  size_t len = strlen(key);
  bool ok = len > 0 && len < sizeof name;
  for (size_t i = 0; ok && i <= len; i++) {
    name[i] = key[i] == '_' ? '-' : key[i];
    ok = !key[i] || islower((unsigned char)key[i]) || isdigit((unsigned char)key[i]) ||
         strchr("-_", key[i]);
  }
  if (!ok)
    return fail(c, e->line, e->section, e->key,
                "'%s' is not an sbatch option name (a-z, 0-9 and '-', as in cpus-per-task)", key);
  for (size_t i = 0; i < sizeof owned / sizeof *owned; i++)
    if (strcmp(name, owned[i]) == 0)
      return fail(c, e->line, e->section, e->key,
                  "the sweep sets sbatch's --%s itself (one node per engine, its output in the "
                  "engine's folder); remove the key", name);
  *options = xrealloc(*options, (*num_options + 1) * sizeof **options);
  (*options)[(*num_options)++] = (SweepSlurmOption){xstrdup(name), xstrdup(e->value)};
  return true;
}

static bool read_slurm_key(const Ctx *c, SweepSlurm *s, const Entry *e) {
  if (strcmp(e->key, "max_jobs") == 0) return parse_int(c, e, 0, 100000, &s->max_jobs);
  if (strcmp(e->key, "poll_interval") == 0)
    return parse_int(c, e, 1, 3600, &s->poll_interval_sec);
  if (strcmp(e->key, "gres") == 0) {
    free(s->gres);
    s->gres = xstrdup(e->value);
    return true;
  }
  return read_slurm_option(c, e, e->key, &s->options, &s->num_options);
}

// A grid axis: KEY = V1, V2, ... (one value is an axis of one).
static bool read_axis(const Ctx *c, const Entry *e, const char *flag, SweepAxis **axes,
                      size_t *num_axes) {
  bool ok = *flag != '\0' && *flag != '-';
  for (const char *p = flag; *p; p++)
    ok &= islower((unsigned char)*p) || isdigit((unsigned char)*p) || strchr("-_", *p);
  if (!ok)
    return fail(c, e->line, e->section, e->key,
                "'%s' is not a flag name (a-z, 0-9, '-' and '_', without the leading --)", flag);
  SweepAxis axis = {.flag = xstrdup(flag), .line = e->line};
  if (!sweep_grid_split(&axis, e->value)) {
    for (size_t i = 0; i < axis.num_values; i++) free(axis.values[i]);
    free(axis.values);
    free(axis.flag);
    return fail(c, e->line, e->section, e->key,
                "'%s' has an empty value: list values separated by commas (a, b, c)", e->value);
  }
  *axes = xrealloc(*axes, (*num_axes + 1) * sizeof **axes);
  (*axes)[(*num_axes)++] = axis;
  return true;
}

static bool read_engine_key(const Ctx *c, SweepFile *f, SweepEngine *en, const Entry *e,
                            bool *has_command, bool *has_args) {
  if (strcmp(e->key, "label") == 0) {
    free(en->label);
    en->label = xstrdup(e->value);
    return true;
  }
  if (strcmp(e->key, "gpus") == 0) return parse_int(c, e, 1, MAX_GPUS, &en->gpus);
  if (strcmp(e->key, "ready_timeout") == 0)
    return parse_int(c, e, 1, 7 * 24 * 3600, &en->ready_timeout_sec);
  if (strcmp(e->key, "model") == 0) {
    free(en->model);
    en->model = xstrdup(e->value);
    return true;
  }
  if (strcmp(e->key, "command") == 0 || strcmp(e->key, "args") == 0) {
    *(strcmp(e->key, "command") == 0 ? has_command : has_args) = true;
    if (!split_words(c, e, &en->words, &en->num_words)) return false;
    if (strcmp(e->key, "command") == 0 && (en->num_words == 0 || !strstr(e->value, "{port}")))
      return fail(c, e->line, e->section, e->key,
                  "the command must pass the server's port as {port} (e.g. --port {port})");
    return true;
  }
  if (strncmp(e->key, "slurm.", 6) == 0)
    return read_slurm_option(c, e, e->key + 6, &en->slurm, &en->num_slurm);
  if (strncmp(e->key, "args.", 5) == 0) return read_axis(c, e, e->key + 5, &en->axes, &en->num_axes);
  if (strncmp(e->key, "env.", 4) == 0) {
    const char *name = e->key + 4;
    bool ok = *name && !isdigit((unsigned char)*name);
    for (const char *p = name; *p; p++) ok &= isalnum((unsigned char)*p) || *p == '_';
    if (!ok) return fail(c, e->line, e->section, e->key, "'%s' is not a variable name", name);
    en->env = xrealloc(en->env, (en->num_env + 1) * sizeof *en->env);
    size_t len = strlen(name) + strlen(e->value) + 2;
    en->env[en->num_env] = xmalloc(len);
    snprintf(en->env[en->num_env++], len, "%s=%s", name, e->value);
    return true;
  }
  if (strcmp(e->key, "workloads") == 0) {
    char **ids = NULL;
    size_t num_ids = 0;
    if (!split_words(c, e, &ids, &num_ids)) return false;
    bool ok = num_ids > 0;
    if (!ok) fail(c, e->line, e->section, e->key, "list at least one workload id");
    for (size_t i = 0; i < f->num_workloads; i++) en->runs[i] = false;
    for (size_t i = 0; i < num_ids; i++) {  // a grid's id names all its points
      bool found = false;
      for (size_t j = 0; j < f->num_workloads; j++)
        if (sweep_grid_matches(ids[i], f->workloads[j].id, &f->workloads[j].grid))
          en->runs[j] = found = true;
      if (!found && ok)
        ok = fail(c, e->line, e->section, e->key, "no [workload.%s] in this file", ids[i]);
    }
    sweep_argv_free_n(ids, num_ids);
    return ok;
  }
  return fail(c, e->line, e->section, e->key,
              "unknown key: use label, gpus, ready_timeout, model, args, args.FLAG, command, "
              "env.NAME, slurm.OPTION or workloads");
}

// Flags whose one value may hold commas: never a grid.
static bool comma_valued(const char *flag) {
  static const char *const flags[] = {"percentile-metrics", "metric-percentiles", "goodput",
                                      "metadata", "extra-body", "header", "dataset-path"};
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
    if (strcmp(flag, flags[i]) == 0) return true;
  return false;
}

// Workload keys become bench flags: KEY = true -> --KEY, false -> nothing, goodput/metadata ->
// --KEY and one argument per word, KEY = V1, V2 -> a grid axis (sweep_grid.h), anything else
// -> --KEY=VALUE.
static bool read_workload_key(const Ctx *c, SweepWorkload *w, const Entry *e) {
  static const char *const owned[] = {"base-url", "host", "port", "save-result", "append-result",
                                      "result-dir", "result-filename"};
  char flag[64];
  size_t len = strlen(e->key);
  if (len + 3 > sizeof flag) return fail(c, e->line, e->section, e->key, "unknown bench flag");
  for (size_t i = 0; i <= len; i++) flag[i] = e->key[i] == '_' ? '-' : e->key[i];
  if (strcmp(flag, "label") == 0) {
    free(w->label);
    w->label = xstrdup(e->value);
    return true;
  }
  for (size_t i = 0; i < sizeof owned / sizeof *owned; i++)
    if (strcmp(flag, owned[i]) == 0)
      return fail(c, e->line, e->section, e->key, "the sweep sets --%s itself; remove the key", flag);
  if (strcmp(e->value, "false") == 0) return true;
  if (strchr(e->value, ',') && !comma_valued(flag)) return read_axis(c, e, flag, &w->axes, &w->num_axes);
  Buf arg = {0};
  buf_printf(&arg, "--%s", flag);
  char **words = NULL;
  size_t num_words = 0;
  bool is_list = strcmp(flag, "goodput") == 0 || strcmp(flag, "metadata") == 0;
  if (is_list && !split_words(c, e, &words, &num_words)) {
    buf_free(&arg);
    return false;
  }
  if (!is_list && strcmp(e->value, "true") != 0) buf_printf(&arg, "=%s", e->value);
  w->args = xrealloc(w->args, (size_t)(w->num_args + 1 + (int)num_words) * sizeof *w->args);
  w->args[w->num_args++] = xstrdup(arg.data);
  for (size_t i = 0; i < num_words; i++) w->args[w->num_args++] = words[i];
  free(words);
  buf_free(&arg);
  return true;
}

// The bench flag a bench_options_parse message names ("--num-prompts ..."), as its key.
static const Entry *entry_named_in(const Reader *r, const char *section, const char *msg) {
  for (size_t i = 0; i < r->num_entries; i++) {
    const Entry *e = &r->entries[i];
    if (strcmp(e->section, section) != 0) continue;
    char flag[80];
    snprintf(flag, sizeof flag, "--%s", e->key);
    for (char *p = flag; *p; p++)
      if (*p == '_') *p = '-';
    const char *at = strstr(msg, flag);
    if (at && !isalnum((unsigned char)at[strlen(flag)]) && at[strlen(flag)] != '-') return e;
  }
  return NULL;
}

// Each workload's flags must satisfy `bench` itself: the same checks, the same messages.
static bool check_workload(const Ctx *c, const Reader *r, SweepWorkload *w) {
  char section[128], msg[512];
  snprintf(section, sizeof section, "workload.%s", w->grid.base ? w->grid.base : w->id);
  BenchOptions o;
  bool ok = bench_options_parse(&o, w->num_args, w->args, msg, sizeof msg);
  if (ok) {
    w->dataset_name = xstrdup(o.dataset_name);
  } else {
    const Entry *e = entry_named_in(r, section, msg);
    fail(c, e ? e->line : w->line, section, e ? e->key : "(workload)", "%s", msg);
  }
  bench_options_free(&o);
  return ok;
}

static bool read_compare_key(const Ctx *c, SweepFile *f, SweepComparison *cmp, const Entry *e) {
  long idx;
  if (strcmp(e->key, "label") == 0) {
    free(cmp->label);
    cmp->label = xstrdup(e->value);
    return true;
  }
  if (strcmp(e->key, "per_gpu") == 0) return parse_bool(c, e, &cmp->per_gpu);
  if (strcmp(e->key, "base") == 0 || strcmp(e->key, "candidate") == 0) {
    if (!engine_ref(c, f, e, &idx)) return false;
    *(strcmp(e->key, "base") == 0 ? &cmp->base : &cmp->candidate) = (size_t)idx;
    return true;
  }
  return fail(c, e->line, e->section, e->key, "unknown key: use label, base, candidate or per_gpu");
}

// Finds the entry's earlier twin in the same section, if any.
static const Entry *earlier_twin(const Reader *r, size_t i) {
  for (size_t j = 0; j < i; j++)
    if (strcmp(r->entries[j].section, r->entries[i].section) == 0 &&
        strcmp(r->entries[j].key, r->entries[i].key) == 0)
      return &r->entries[j];
  return NULL;
}

// Reads the entries of one kind: 0 workloads, 1 engines and [slurm], 2 [sweep] and comparisons.
static bool read_pass(const Ctx *c, SweepFile *f, const Reader *r, int pass, bool *has_command,
                      bool *has_args) {
  for (size_t i = 0; i < r->num_entries; i++) {
    const Entry *e = &r->entries[i];
    const char *id = strchr(e->section, '.') ? strchr(e->section, '.') + 1 : "";
    bool is_workload = strncmp(e->section, "workload.", 9) == 0;
    bool is_engine = strncmp(e->section, "engine.", 7) == 0;
    bool is_slurm = strcmp(e->section, "slurm") == 0;
    if ((is_workload ? 0 : is_engine || is_slurm ? 1 : 2) != pass) continue;
    const Entry *twin = earlier_twin(r, i);
    if (twin && !(is_workload && (strcmp(e->key, "goodput") == 0 || strcmp(e->key, "metadata") == 0)))
      return fail(c, e->line, e->section, e->key, "given twice (first on line %d)", twin->line);
    bool ok;
    if (strcmp(e->section, "sweep") == 0) ok = read_sweep_key(c, f, e);
    else if (is_slurm) ok = read_slurm_key(c, &f->slurm, e);
    else if (is_workload) ok = read_workload_key(c, find_workload(f, id), e);
    else if (is_engine) {
      SweepEngine *en = find_engine(f, id);
      size_t k = (size_t)(en - f->engines);
      ok = read_engine_key(c, f, en, e, &has_command[k], &has_args[k]);
    } else ok = read_compare_key(c, f, find_comparison(f, id), e);
    if (!ok) return false;
  }
  return true;
}

// A grid expansion's failure, with the file's name in front.
static bool grid_failed(const Ctx *c) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s", c->err);
  snprintf(c->err, c->err_size, "%s: %s", c->path, msg);
  return false;
}

static bool read_entries(const Ctx *c, SweepFile *f, const Reader *r) {
  for (size_t i = 0; i < f->num_workloads; i++) {  // workload keys first: engines refer to them
    SweepWorkload *w = &f->workloads[i];
    w->args = xmalloc(sizeof *w->args);
    w->args[w->num_args++] = xstrdup("bench");
  }
  if (!read_pass(c, f, r, 0, NULL, NULL)) return false;
  if (!sweep_grid_expand_workloads(f, c->err, c->err_size)) return grid_failed(c);
  for (size_t i = 0; i < f->num_engines; i++) {
    f->engines[i].runs = xmalloc((f->num_workloads + 1) * sizeof *f->engines[i].runs);
    for (size_t j = 0; j < f->num_workloads; j++) f->engines[i].runs[j] = true;
  }
  bool has_command[f->num_engines + 1], has_args[f->num_engines + 1];
  memset(has_command, 0, sizeof has_command);
  memset(has_args, 0, sizeof has_args);
  if (!read_pass(c, f, r, 1, has_command, has_args)) return false;
  for (size_t i = 0; i < f->num_engines; i++) {
    SweepEngine *en = &f->engines[i];
    char section[128];
    snprintf(section, sizeof section, "engine.%s", en->id);
    if (has_command[i] == (en->model != NULL))
      return fail(c, en->line, section, "command",
                  "give either command (an external server) or model (the built-in engine)");
    if (has_args[i] && has_command[i])
      return fail(c, en->line, section, "args", "args go with model; put them in the command");
  }
  if (!sweep_grid_expand_engines(f, c->err, c->err_size)) return grid_failed(c);
  for (size_t i = 0; i < f->num_engines; i++)
    if (!f->engines[i].label) f->engines[i].label = xstrdup(f->engines[i].id);
  if (!read_pass(c, f, r, 2, NULL, NULL)) return false;
  for (size_t i = 0; i < f->num_workloads; i++) {
    if (!check_workload(c, r, &f->workloads[i])) return false;
    if (!f->workloads[i].label) f->workloads[i].label = xstrdup(f->workloads[i].id);
  }
  for (size_t i = 0; i < f->num_comparisons; i++) {
    SweepComparison *cmp = &f->comparisons[i];
    char section[128];
    snprintf(section, sizeof section, "compare.%s", cmp->id);
    if (cmp->base == (size_t)-1 || cmp->candidate == (size_t)-1)
      return fail(c, cmp->line, section, cmp->base == (size_t)-1 ? "base" : "candidate",
                  "missing: a comparison needs base and candidate engine ids");
    if (!cmp->label) cmp->label = xstrdup(cmp->id);
  }
  return true;
}

static void default_name(SweepFile *f) {
  const char *slash = strrchr(f->path, '/'), *base = slash ? slash + 1 : f->path;
  size_t len = strlen(base);
  if (len > 4 && strcmp(base + len - 4, ".ini") == 0) len -= 4;
  f->name = xmalloc(len + 1);
  for (size_t i = 0; i < len; i++) f->name[i] = valid_id((char[]){base[i], 0}) ? base[i] : '-';
  f->name[len] = '\0';
}

bool sweep_file_parse(SweepFile *f, const char *path, const char *text, char *err, size_t err_size) {
  *f = (SweepFile){.path = xstrdup(path), .repeat = 1, .rounds = 1, .stop_grace_sec = 10,
                   .baseline = -1, .optimized = -1,
                   .slurm = {.poll_interval_sec = 5, .gres = xstrdup("gpu")}};
  buf_append_str(&f->text, text);
  Ctx c = {path, err, err_size};
  Reader r = {.text = text};
  int rc = ini_parse_stream(read_line, &r, on_entry, &r);
  bool ok;
  if (r.long_line) {
    snprintf(err, err_size, "%s:%d: the line is too long (inih reads %d characters)", path,
             r.long_line, INI_MAX_LINE - 1);
    ok = false;
  } else if (rc != 0) {
    snprintf(err, err_size, "%s:%d: not INI syntax ([section] or key = value)", path, rc);
    ok = false;
  } else {
    ok = declare_sections(&c, f, &r) && read_entries(&c, f, &r);
  }
  if (ok && f->num_engines == 0) {
    snprintf(err, err_size, "%s: no [engine.ID] section: nothing to run", path);
    ok = false;
  }
  if (ok && f->num_workloads == 0) {
    snprintf(err, err_size, "%s: no [workload.ID] section: nothing to run", path);
    ok = false;
  }
  if (ok && !f->name) default_name(f);
  for (size_t i = 0; i < r.num_entries; i++) {
    free(r.entries[i].section);
    free(r.entries[i].key);
    free(r.entries[i].value);
  }
  free(r.entries);
  if (!ok) sweep_file_free(f);
  return ok;
}

bool sweep_file_load(SweepFile *f, const char *path, char *err, size_t err_size) {
  Buf text = {0};
  if (!file_read_all(path, &text, err, err_size)) return false;
  bool ok = sweep_file_parse(f, path, text.len ? text.data : "", err, err_size);
  buf_free(&text);
  return ok;
}

static void slurm_options_free(SweepSlurmOption *options, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(options[i].key);
    free(options[i].value);
  }
  free(options);
}

void sweep_engine_free(SweepEngine *e) {
  free(e->id);
  free(e->label);
  free(e->model);
  sweep_argv_free_n(e->words, e->num_words);
  sweep_argv_free_n(e->env, e->num_env);
  free(e->runs);
  slurm_options_free(e->slurm, e->num_slurm);
  sweep_axes_free(e->axes, e->num_axes);
  sweep_grid_origin_free(&e->grid);
}

void sweep_workload_free(SweepWorkload *w) {
  free(w->id);
  free(w->label);
  free(w->dataset_name);
  sweep_argv_free_n(w->args, (size_t)w->num_args);
  sweep_axes_free(w->axes, w->num_axes);
  sweep_grid_origin_free(&w->grid);
}

void sweep_file_free(SweepFile *f) {
  for (size_t i = 0; i < f->num_engines; i++) sweep_engine_free(&f->engines[i]);
  for (size_t i = 0; i < f->num_workloads; i++) sweep_workload_free(&f->workloads[i]);
  for (size_t i = 0; i < f->num_comparisons; i++) {
    free(f->comparisons[i].id);
    free(f->comparisons[i].label);
  }
  free(f->engines);
  free(f->workloads);
  free(f->comparisons);
  slurm_options_free(f->slurm.options, f->slurm.num_options);
  free(f->slurm.gres);
  free(f->name);
  free(f->path);
  buf_free(&f->text);
  *f = (SweepFile){.baseline = -1, .optimized = -1};
}

char *sweep_subst_port(const char *s, int port) {
  if (port < 0) return xstrdup(s);
  Buf b = {0};
  buf_append_str(&b, "");
  for (const char *at; (at = strstr(s, "{port}")); s = at + 6) {
    buf_append(&b, s, (size_t)(at - s));
    buf_printf(&b, "%d", port);
  }
  buf_append_str(&b, s);
  return b.data;
}

char **sweep_engine_argv(const SweepEngine *e, const char *engine_bin, int port) {
  size_t n = 0;
  char **argv = xcalloc(e->num_words + 6, sizeof *argv);
  if (!e->model) {
    for (size_t i = 0; i < e->num_words; i++) argv[n++] = sweep_subst_port(e->words[i], port);
    return argv;
  }
  argv[n++] = xstrdup(engine_bin);
  argv[n++] = xstrdup("serve");
  argv[n++] = xstrdup(e->model);
  argv[n++] = xstrdup("--port");
  argv[n++] = sweep_subst_port("{port}", port);
  for (size_t i = 0; i < e->num_words; i++) argv[n++] = sweep_subst_port(e->words[i], port);
  return argv;
}

char *sweep_engine_command(const SweepEngine *e, const char *engine_bin, int port) {
  char **argv = sweep_engine_argv(e, engine_bin, port);
  Buf b = {0};
  buf_append_str(&b, "");
  for (size_t i = 0; argv[i]; i++) buf_printf(&b, "%s%s", i ? " " : "", argv[i]);
  sweep_argv_free(argv);
  return b.data;
}

void sweep_argv_free(char **argv) {
  if (!argv) return;
  for (char **p = argv; *p; p++) free(*p);
  free(argv);
}
