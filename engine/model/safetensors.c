// safetensors.c: mapping and header parsing of safetensors files, and name look-up across a
// folder's files (see safetensors.h). Checks every byte range before anyone reads it; never
// copies or converts tensor data.
#include "model/safetensors.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"

// The reference implementation refuses headers above 100 MB; so do we.
#define ST_MAX_HEADER_BYTES (100u << 20)

static const struct {
  const char *name;
  size_t size;
} DTYPES[ST_NUM_DTYPES] = {
    [ST_BOOL] = {"BOOL", 1},       [ST_U8] = {"U8", 1},           [ST_I8] = {"I8", 1},
    [ST_F8_E4M3] = {"F8_E4M3", 1}, [ST_F8_E5M2] = {"F8_E5M2", 1}, [ST_I16] = {"I16", 2},
    [ST_U16] = {"U16", 2},         [ST_F16] = {"F16", 2},         [ST_BF16] = {"BF16", 2},
    [ST_I32] = {"I32", 4},         [ST_U32] = {"U32", 4},         [ST_F32] = {"F32", 4},
    [ST_I64] = {"I64", 8},         [ST_U64] = {"U64", 8},         [ST_F64] = {"F64", 8},
};

const char *st_dtype_name(StDtype d) { return DTYPES[d].name; }
size_t st_dtype_size(StDtype d) { return DTYPES[d].size; }

static bool dtype_from_name(const char *name, StDtype *out) {
  for (int d = 0; d < ST_NUM_DTYPES; d++) {
    if (strcmp(DTYPES[d].name, name) == 0) {
      *out = (StDtype)d;
      return true;
    }
  }
  return false;
}

__attribute__((format(printf, 3, 4))) static bool fail(char *err, size_t err_size, const char *fmt,
                                                       ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, err_size, fmt, ap);
  va_end(ap);
  return false;
}

// ---------------------------------------------------------------------------------------------
// One file

// A non-negative JSON integer, or false.
static bool get_u64(const json_t *v, uint64_t *out) {
  if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
  *out = (uint64_t)json_integer_value(v);
  return true;
}

// Fills t from one header entry {"dtype", "shape", "data_offsets"}; data_size is the bytes after
// the header.
static bool parse_entry(const char *path, const char *name, const json_t *entry,
                        const uint8_t *data, uint64_t data_size, StTensor *t, char *err,
                        size_t err_size) {
  const json_t *dtype = json_object_get(entry, "dtype"), *shape = json_object_get(entry, "shape");
  const json_t *offsets = json_object_get(entry, "data_offsets");
  if (!json_is_object(entry) || !json_is_string(dtype) || !json_is_array(shape) ||
      !json_is_array(offsets) || json_array_size(offsets) != 2)
    return fail(err, err_size,
                "%s: bad safetensors header: tensor '%s' needs \"dtype\", "
                "\"shape\" and \"data_offsets\": [begin, end]",
                path, name);
  if (!dtype_from_name(json_string_value(dtype), &t->dtype))
    return fail(err, err_size, "%s: bad safetensors header: tensor '%s' has unknown dtype \"%s\"",
                path, name, json_string_value(dtype));
  if (json_array_size(shape) > ST_MAX_DIMS)
    return fail(err, err_size, "%s: bad safetensors header: tensor '%s' has more than %d dims",
                path, name, ST_MAX_DIMS);
  t->name = name;
  t->path = path;
  t->num_dims = (int)json_array_size(shape);
  uint64_t num_bytes = st_dtype_size(t->dtype), begin, end;
  for (int i = 0; i < t->num_dims; i++) {
    uint64_t dim;
    if (!get_u64(json_array_get(shape, (size_t)i), &dim) ||
        __builtin_mul_overflow(num_bytes, dim, &num_bytes))
      return fail(err, err_size,
                  "%s: bad safetensors header: tensor '%s' has a bad shape (dims "
                  "must be integers >= 0)",
                  path, name);
    t->shape[i] = (int64_t)dim;
  }
  if (!get_u64(json_array_get(offsets, 0), &begin) || !get_u64(json_array_get(offsets, 1), &end) ||
      begin > end)
    return fail(err, err_size, "%s: bad safetensors header: tensor '%s' has bad data_offsets", path,
                name);
  if (end - begin != num_bytes)
    return fail(err, err_size,
                "%s: bad safetensors header: tensor '%s' is %s of %llu bytes by "
                "its shape but its data_offsets [%llu, %llu] span %llu",
                path, name, st_dtype_name(t->dtype), (unsigned long long)num_bytes,
                (unsigned long long)begin, (unsigned long long)end,
                (unsigned long long)(end - begin));
  if (end > data_size)
    return fail(err, err_size,
                "%s: truncated file: tensor '%s' ends at data byte %llu but only "
                "%llu data bytes follow the header",
                path, name, (unsigned long long)end, (unsigned long long)data_size);
  t->data = data + begin;
  t->num_bytes = (size_t)num_bytes;
  return true;
}

static int by_data(const void *a, const void *b) {
  const StTensor *x = *(const StTensor *const *)a, *y = *(const StTensor *const *)b;
  return (x->data > y->data) - (x->data < y->data);
}

// No two tensors share a byte.
static bool check_no_overlap(const StFile *f, char *err, size_t err_size) {
  const StTensor **order = xmalloc((size_t)f->num_tensors * sizeof *order + 1);
  for (int i = 0; i < f->num_tensors; i++) order[i] = &f->tensors[i];
  qsort(order, (size_t)f->num_tensors, sizeof *order, by_data);
  bool ok = true;
  for (int i = 1; ok && i < f->num_tensors; i++) {
    const StTensor *prev = order[i - 1], *t = order[i];
    if ((const uint8_t *)prev->data + prev->num_bytes > (const uint8_t *)t->data)
      ok = fail(err, err_size, "%s: bad safetensors header: tensors '%s' and '%s' overlap", f->path,
                prev->name, t->name);
  }
  free(order);
  return ok;
}

// Builds the tensor table from the header JSON.
static bool parse_header(StFile *f, const json_t *root, const uint8_t *data, uint64_t data_size,
                         char *err, size_t err_size) {
  size_t names_bytes = 0;
  const char *key;
  json_t *entry;
  json_object_foreach((json_t *)root, key, entry) {
    if (strcmp(key, "__metadata__") == 0) continue;
    names_bytes += strlen(key) + 1;
    f->num_tensors++;
  }
  f->tensors = xcalloc((size_t)f->num_tensors + 1, sizeof *f->tensors);
  f->names = xmalloc(names_bytes + 1);
  char *name = f->names;
  int i = 0;
  json_object_foreach((json_t *)root, key, entry) {
    if (strcmp(key, "__metadata__") == 0) continue;
    strcpy(name, key);
    if (!parse_entry(f->path, name, entry, data, data_size, &f->tensors[i++], err, err_size))
      return false;
    name += strlen(key) + 1;
  }
  return check_no_overlap(f, err, err_size);
}

// Maps the file (at least its 8 length bytes) into f.
static bool map_file(StFile *f, const char *path, char *err, size_t err_size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(err, err_size, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  bool ok = fstat(fd, &st) == 0;
  if (!ok)
    fail(err, err_size, "%s: cannot stat: %s", path, strerror(errno));
  else if (!(ok = S_ISREG(st.st_mode)))
    fail(err, err_size, "%s: not a regular file", path);
  else if (!(ok = st.st_size >= 8))
    fail(err, err_size, "%s: truncated file: %lld bytes, shorter than the 8-byte header length",
         path, (long long)st.st_size);
  if (ok) {
    f->map_size = (size_t)st.st_size;
    f->map = mmap(NULL, f->map_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (f->map == MAP_FAILED) {
      f->map = NULL;
      ok = fail(err, err_size, "%s: cannot map: %s", path, strerror(errno));
    }
  }
  close(fd);
  return ok;
}

bool st_open(StFile *f, const char *path, char *err, size_t err_size) {
  *f = (StFile){.path = xstrdup(path)};
  if (!map_file(f, path, err, err_size)) {
    st_close(f);
    return false;
  }
  const uint8_t *bytes = f->map;
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; i--) header_len = header_len << 8 | bytes[i];  // little-endian
  uint64_t after = f->map_size - 8;
  bool ok = true;
  if (header_len > after)
    ok = fail(err, err_size,
              "%s: truncated file: the header says %llu bytes of JSON but only "
              "%llu bytes follow",
              path, (unsigned long long)header_len, (unsigned long long)after);
  else if (header_len > ST_MAX_HEADER_BYTES)
    ok = fail(err, err_size, "%s: bad safetensors header: %llu bytes of JSON (more than %u)", path,
              (unsigned long long)header_len, ST_MAX_HEADER_BYTES);
  json_t *root = NULL;
  if (ok) {
    json_error_t jerr;
    root = json_loadb((const char *)bytes + 8, header_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
      ok = fail(err, err_size, "%s: bad safetensors header: JSON error at line %d, column %d: %s",
                path, jerr.line, jerr.column, jerr.text);
    else if (!json_is_object(root))
      ok = fail(err, err_size, "%s: bad safetensors header: not a JSON object", path);
  }
  if (ok) ok = parse_header(f, root, bytes + 8 + header_len, after - header_len, err, err_size);
  json_decref(root);
  if (!ok) st_close(f);
  return ok;
}

void st_close(StFile *f) {
  if (f->map) munmap(f->map, f->map_size);
  free(f->path);
  free(f->names);
  free(f->tensors);
  *f = (StFile){0};
}

// ---------------------------------------------------------------------------------------------
// A folder of files

static int is_safetensors(const struct dirent *e) {
  size_t n = strlen(e->d_name), suffix = strlen(".safetensors");
  return e->d_name[0] != '.' && n > suffix && strcmp(e->d_name + n - suffix, ".safetensors") == 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(const StTensor *const *)a)->name, (*(const StTensor *const *)b)->name);
}

// Sorts every file's tensors by name; false when two files hold the same name.
static bool index_tensors(StSet *s, char *err, size_t err_size) {
  for (int i = 0; i < s->num_files; i++) s->num_tensors += s->files[i].num_tensors;
  s->sorted = xmalloc((size_t)s->num_tensors * sizeof *s->sorted + 1);
  int n = 0;
  for (int i = 0; i < s->num_files; i++)
    for (int j = 0; j < s->files[i].num_tensors; j++) s->sorted[n++] = &s->files[i].tensors[j];
  qsort(s->sorted, (size_t)n, sizeof *s->sorted, by_name);
  for (int i = 1; i < n; i++) {
    if (strcmp(s->sorted[i - 1]->name, s->sorted[i]->name) == 0)
      return fail(err, err_size, "tensor '%s' is in two files: %s and %s", s->sorted[i]->name,
                  s->sorted[i - 1]->path, s->sorted[i]->path);
  }
  return true;
}

bool st_set_open(StSet *s, const char *dir, char *err, size_t err_size) {
  *s = (StSet){0};
  struct dirent **entries;
  int num = scandir(dir, &entries, is_safetensors, alphasort);
  if (num < 0) return fail(err, err_size, "%s: cannot read the folder: %s", dir, strerror(errno));
  bool ok = num > 0;
  if (!ok) fail(err, err_size, "%s: no *.safetensors files in the folder", dir);
  s->files = xcalloc((size_t)num + 1, sizeof *s->files);
  for (int i = 0; i < num; i++) {
    if (ok) {
      size_t len = strlen(dir) + strlen(entries[i]->d_name) + 2;
      char *path = xmalloc(len);
      snprintf(path, len, "%s/%s", dir, entries[i]->d_name);
      ok = st_open(&s->files[s->num_files], path, err, err_size);
      if (ok) s->num_files++;
      free(path);
    }
    free(entries[i]);
  }
  free(entries);
  if (ok) ok = index_tensors(s, err, err_size);
  if (!ok) st_set_close(s);
  return ok;
}

void st_set_close(StSet *s) {
  for (int i = 0; i < s->num_files; i++) st_close(&s->files[i]);
  free(s->files);
  free(s->sorted);
  *s = (StSet){0};
}

const StTensor *st_set_find(const StSet *s, const char *name) {
  StTensor key = {.name = name};
  const StTensor *pkey = &key;
  const StTensor **hit =
      bsearch(&pkey, s->sorted, (size_t)s->num_tensors, sizeof *s->sorted, by_name);
  return hit ? *hit : NULL;
}
