// sweep_grid.c: expands the grid axes of a parsed sweep file into one section per point (see
// sweep_grid.h). Points are enumerated as a mixed-radix counter over the axes, the last axis
// fastest; each point is a deep copy of its section with the point's flags added.
#include "sweep/sweep_grid.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/fields.h"

bool sweep_grid_split(SweepAxis *axis, const char *value) {
  const char *s = value;
  for (;;) {
    const char *comma = strchr(s, ',');
    size_t len = fields_trim(&s, comma ? (size_t)(comma - s) : strlen(s));
    if (len == 0) return false;
    axis->values = xrealloc(axis->values, (axis->num_values + 1) * sizeof *axis->values);
    char *v = xmalloc(len + 1);
    memcpy(v, s, len);
    v[len] = '\0';
    axis->values[axis->num_values++] = v;
    if (!comma) return true;
    s = comma + 1;
  }
}

void sweep_axes_free(SweepAxis *axes, size_t num_axes) {
  for (size_t i = 0; i < num_axes; i++) {
    free(axes[i].flag);
    for (size_t k = 0; k < axes[i].num_values; k++) free(axes[i].values[k]);
    free(axes[i].values);
  }
  free(axes);
}

void sweep_grid_origin_free(SweepGridOrigin *g) {
  free(g->base);
  free(g->point);
  *g = (SweepGridOrigin){0};
}

bool sweep_grid_matches(const char *wanted, const char *id, const SweepGridOrigin *grid) {
  return strcmp(wanted, id) == 0 || (grid->base && strcmp(wanted, grid->base) == 0);
}

// ---------------------------------------------------------------------------------------------
// points

static bool count_points(const SweepAxis *axes, size_t num_axes, size_t *num_points) {
  *num_points = 1;
  for (size_t i = 0; i < num_axes; i++) {
    *num_points *= axes[i].num_values;
    if (*num_points > SWEEP_GRID_MAX_POINTS) return false;
  }
  return true;
}

// The value index of each axis at point p (the last axis fastest).
static void point_digits(const SweepAxis *axes, size_t num_axes, size_t p, size_t *digits) {
  for (size_t i = num_axes; i-- > 0;) {
    digits[i] = p % axes[i].num_values;
    p /= axes[i].num_values;
  }
}

// id.FLAG-VALUE..., label (FLAG=VALUE, ...) and the origin, over the axes of 2+ values.
static void name_point(const char *id, const char *label, const SweepAxis *axes, size_t num_axes,
                       const size_t *digits, char **out_id, char **out_label,
                       SweepGridOrigin *origin) {
  Buf pid = {0}, plabel = {0}, point = {0};
  buf_append_str(&pid, id);
  buf_append_str(&point, "");
  for (size_t i = 0; i < num_axes; i++) {
    if (axes[i].num_values < 2) continue;
    const char *v = axes[i].values[digits[i]];
    buf_printf(&pid, ".%s-", axes[i].flag);
    for (const char *c = v; *c; c++) {
      char lower = (char)tolower((unsigned char)*c);
      buf_append_byte(&pid, isalnum((unsigned char)lower) || strchr("._-", lower) ? lower : '-');
    }
    buf_printf(&point, "%s%s=%s", point.len ? ", " : "", axes[i].flag, v);
  }
  buf_printf(&plabel, "%s (%s)", label, point.data);
  *out_id = pid.data;
  *out_label = plabel.data;
  *origin = (SweepGridOrigin){xstrdup(id), point.data};
}

static char **copy_strings(char *const *from, size_t n, size_t extra) {
  char **to = xcalloc(n + extra + 1, sizeof *to);
  for (size_t i = 0; i < n; i++) to[i] = xstrdup(from[i]);
  return to;
}

static bool grid_of(const SweepAxis *axes, size_t num_axes) {
  for (size_t i = 0; i < num_axes; i++)
    if (axes[i].num_values > 1) return true;
  return false;
}

// Two sections of one kind with the same id after expansion: err names it.
static bool ids_unique(const char *const *ids, size_t n, const char *kind, char *err,
                       size_t err_size) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < i; j++)
      if (strcmp(ids[i], ids[j]) == 0) {
        snprintf(err, err_size,
                 "[%s.%s] is named twice once the grids are expanded: rename a section", kind,
                 ids[i]);
        return false;
      }
  return true;
}

static bool too_many(const char *kind, const char *id, char *err, size_t err_size) {
  snprintf(err, err_size, "[%s.%s]: its grid has more than %d points: use fewer values", kind, id,
           SWEEP_GRID_MAX_POINTS);
  return false;
}

// ---------------------------------------------------------------------------------------------
// workloads

static void workload_point(const SweepWorkload *w, const size_t *digits, SweepWorkload *out) {
  *out = (SweepWorkload){.line = w->line};
  name_point(w->id, w->label ? w->label : w->id, w->axes, w->num_axes, digits, &out->id,
             &out->label, &out->grid);
  out->args = copy_strings(w->args, (size_t)w->num_args, w->num_axes);
  out->num_args = w->num_args;
  for (size_t i = 0; i < w->num_axes; i++) {
    const char *v = w->axes[i].values[digits[i]];
    if (strcmp(v, "false") == 0) continue;
    Buf arg = {0};
    buf_printf(&arg, "--%s", w->axes[i].flag);
    if (strcmp(v, "true") != 0) buf_printf(&arg, "=%s", v);
    out->args[out->num_args++] = arg.data;
  }
}

bool sweep_grid_expand_workloads(SweepFile *f, char *err, size_t err_size) {
  SweepWorkload *out = NULL;
  size_t num_out = 0;
  bool ok = true;
  for (size_t i = 0; i < f->num_workloads; i++) {
    SweepWorkload *w = &f->workloads[i];
    size_t n = 0;
    if (ok && grid_of(w->axes, w->num_axes) && !count_points(w->axes, w->num_axes, &n))
      ok = too_many("workload", w->id, err, err_size);
    if (!ok || !grid_of(w->axes, w->num_axes)) {  // kept as it is (after a fault: to be freed)
      out = xrealloc(out, (num_out + 1) * sizeof *out);
      out[num_out++] = *w;
      continue;
    }
    for (size_t p = 0; p < n; p++) {
      size_t digits[w->num_axes];
      point_digits(w->axes, w->num_axes, p, digits);
      out = xrealloc(out, (num_out + 1) * sizeof *out);
      workload_point(w, digits, &out[num_out++]);
    }
    sweep_workload_free(w);
  }
  free(f->workloads);
  f->workloads = out;
  f->num_workloads = num_out;
  const char *ids[num_out + 1];
  for (size_t i = 0; i < num_out; i++) ids[i] = out[i].id;
  return ok && ids_unique(ids, num_out, "workload", err, err_size);
}

// ---------------------------------------------------------------------------------------------
// engines

// The words of args.FLAG = VALUE: --FLAG VALUE, --FLAG (true) or none (false).
static void append_axis_words(SweepEngine *e, const SweepAxis *axis, const char *value) {
  if (strcmp(value, "false") == 0) return;
  e->words = xrealloc(e->words, (e->num_words + 2) * sizeof *e->words);
  Buf flag = {0};
  buf_printf(&flag, "--%s", axis->flag);
  e->words[e->num_words++] = flag.data;
  if (strcmp(value, "true") != 0) e->words[e->num_words++] = xstrdup(value);
}

static void engine_point(const SweepEngine *e, size_t num_workloads, const size_t *digits,
                         SweepEngine *out) {
  *out = (SweepEngine){.line = e->line, .gpus = e->gpus, .ready_timeout_sec = e->ready_timeout_sec,
                       .model = e->model ? xstrdup(e->model) : NULL};
  name_point(e->id, e->label ? e->label : e->id, e->axes, e->num_axes, digits, &out->id,
             &out->label, &out->grid);
  out->words = copy_strings(e->words, e->num_words, 0);
  out->num_words = e->num_words;
  out->env = copy_strings(e->env, e->num_env, 0);
  out->num_env = e->num_env;
  out->runs = xmalloc((num_workloads + 1) * sizeof *out->runs);
  memcpy(out->runs, e->runs, num_workloads * sizeof *out->runs);
  out->slurm = xcalloc(e->num_slurm + 1, sizeof *out->slurm);
  for (size_t i = 0; i < e->num_slurm; i++)
    out->slurm[i] = (SweepSlurmOption){xstrdup(e->slurm[i].key), xstrdup(e->slurm[i].value)};
  out->num_slurm = e->num_slurm;
  for (size_t i = 0; i < e->num_axes; i++)
    append_axis_words(out, &e->axes[i], e->axes[i].values[digits[i]]);
}

bool sweep_grid_expand_engines(SweepFile *f, char *err, size_t err_size) {
  SweepEngine *out = NULL;
  size_t num_out = 0;
  bool ok = true;
  for (size_t i = 0; i < f->num_engines; i++) {
    SweepEngine *e = &f->engines[i];
    size_t n = 0;
    if (ok && grid_of(e->axes, e->num_axes) && !count_points(e->axes, e->num_axes, &n))
      ok = too_many("engine", e->id, err, err_size);
    if (!ok || !grid_of(e->axes, e->num_axes)) {  // kept (after a fault: to be freed)
      for (size_t k = 0; ok && k < e->num_axes; k++)
        append_axis_words(e, &e->axes[k], e->axes[k].values[0]);
      sweep_axes_free(e->axes, e->num_axes);
      e->axes = NULL;
      e->num_axes = 0;
      out = xrealloc(out, (num_out + 1) * sizeof *out);
      out[num_out++] = *e;
      continue;
    }
    for (size_t p = 0; p < n; p++) {
      size_t digits[e->num_axes];
      point_digits(e->axes, e->num_axes, p, digits);
      out = xrealloc(out, (num_out + 1) * sizeof *out);
      engine_point(e, f->num_workloads, digits, &out[num_out++]);
    }
    sweep_engine_free(e);
  }
  free(f->engines);
  f->engines = out;
  f->num_engines = num_out;
  const char *ids[num_out + 1];
  for (size_t i = 0; i < num_out; i++) ids[i] = out[i].id;
  return ok && ids_unique(ids, num_out, "engine", err, err_size);
}
