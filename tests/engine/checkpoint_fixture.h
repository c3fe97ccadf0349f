// checkpoint_fixture.h: what the weight tests share: the gptoss-tiny fixture checkpoints read
// independently of the engine (whole file + Jansson header, bf16 by shifting, MXFP4 by hand),
// and temporary folders holding edited copies of them (header JSON changed, file cut, tensors
// split over two files). Static inline, so a test that uses only some of it compiles cleanly.
#ifndef GE_TESTS_CHECKPOINT_FIXTURE_H
#define GE_TESTS_CHECKPOINT_FIXTURE_H

#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIXTURE_A "tests/fixtures/gptoss-tiny/a"
#define FIXTURE_B "tests/fixtures/gptoss-tiny/b"

// ---------------------------------------------------------------------------------------------
// The raw file

typedef struct {
  uint8_t *bytes;  // the whole file
  size_t size;
  json_t *header;       // the parsed header
  const uint8_t *data;  // the first byte after the header
  size_t data_size;
} RawCheckpoint;

static inline uint8_t *read_whole(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *bytes = malloc(*size + 1);
  assert_int_equal(fread(bytes, 1, *size, f), *size);
  fclose(f);
  return bytes;
}

static inline void raw_open(RawCheckpoint *r, const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  r->bytes = read_whole(path, &r->size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = n << 8 | r->bytes[i];
  json_error_t jerr;
  r->header = json_loadb((const char *)r->bytes + 8, n, 0, &jerr);
  assert_non_null(r->header);
  r->data = r->bytes + 8 + n;
  r->data_size = r->size - 8 - n;
}

static inline void raw_close(RawCheckpoint *r) {
  json_decref(r->header);
  free(r->bytes);
}

// The bytes of the tensor called name; its element count in *count when count is not NULL.
static inline const uint8_t *raw_tensor(const RawCheckpoint *r, const char *name, int64_t *count) {
  json_t *t = json_object_get(r->header, name);
  if (!t) fail_msg("the fixture has no tensor %s", name);
  json_t *shape = json_object_get(t, "shape");
  int64_t n = 1;
  for (size_t i = 0; i < json_array_size(shape); i++)
    n *= json_integer_value(json_array_get(shape, i));
  if (count) *count = n;
  return r->data + json_integer_value(json_array_get(json_object_get(t, "data_offsets"), 0));
}

// Element i of a little-endian bf16 tensor, widened by shifting its bits.
static inline float raw_bf16(const uint8_t *p, int64_t i) {
  uint32_t bits = ((uint32_t)p[2 * i] | (uint32_t)p[2 * i + 1] << 8) << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

// W[e, r, c] of an MXFP4 expert tensor with cols input features, decoded by hand (spec 5.3).
static inline float raw_mxfp4(const uint8_t *blocks, const uint8_t *scales, int64_t e, int64_t r,
                              int64_t c, int64_t rows, int64_t cols) {
  static const float E2M1[16] = {0,     0.5f,  1,  1.5f,  2,  3,  4,  6,
                                 -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  const int64_t groups = cols / 32, g = c / 32;
  uint8_t byte = blocks[((e * rows + r) * groups + g) * 16 + (c % 32) / 2];
  uint8_t code = c % 2 == 0 ? byte & 0xF : byte >> 4;
  return (float)ldexp(E2M1[code], scales[(e * rows + r) * groups + g] - 127);
}

// ---------------------------------------------------------------------------------------------
// Temporary checkpoint folders

static inline int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static inline int temp_dir_setup(void **state) {
  char *dir = malloc(256);
  snprintf(dir, 256, "%s/gptoss-weights-XXXXXX", P_tmpdir);
  if (!mkdtemp(dir)) return -1;
  *state = dir;
  return 0;
}

static inline int temp_dir_teardown(void **state) {
  nftw(*state, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(*state);
  return 0;
}

static inline void write_bytes(const char *path, const void *bytes, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f) fail_msg("cannot write %s", path);
  assert_int_equal(fwrite(bytes, 1, size, f), size);
  fclose(f);
}

static inline void copy_file(const char *from, const char *to) {
  size_t size;
  uint8_t *bytes = read_whole(from, &size);
  write_bytes(to, bytes, size);
  free(bytes);
}

// dir/name: a safetensors file of header (compact JSON) and data. The header is space-padded to
// an odd length, so that no tensor is even 2-byte aligned: the loader must not assume it is.
static inline void write_safetensors(const char *dir, const char *name, const json_t *header,
                                     const uint8_t *data, size_t data_size) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  char *json = json_dumps(header, JSON_COMPACT);
  uint64_t n = strlen(json) | 1;
  size_t size = 8 + n + data_size;
  uint8_t *bytes = malloc(size);
  for (int i = 0; i < 8; i++) bytes[i] = (uint8_t)(n >> (8 * i));
  memset(bytes + 8, ' ', n);
  memcpy(bytes + 8, json, strlen(json));
  memcpy(bytes + 8 + n, data, data_size);
  write_bytes(path, bytes, size);
  free(bytes);
  free(json);
}

// dir gets fixture a's config.json and its model.safetensors with the header passed through edit
// (NULL: unchanged); the data is kept, so offsets stay valid.
static inline void write_edited_fixture(const char *dir, void (*edit)(json_t *header)) {
  char path[512];
  snprintf(path, sizeof path, "%s/config.json", dir);
  copy_file(FIXTURE_A "/config.json", path);
  RawCheckpoint raw;
  raw_open(&raw, FIXTURE_A);
  if (edit) edit(raw.header);
  write_safetensors(dir, "model.safetensors", raw.header, raw.data, raw.data_size);
  raw_close(&raw);
}

// Sets header[tensor][field] to the JSON text value.
static inline void set_field(json_t *header, const char *tensor, const char *field,
                             const char *value) {
  json_t *t = json_object_get(header, tensor);
  assert_non_null(t);
  json_object_set_new(t, field, json_loads(value, JSON_DECODE_ANY, NULL));
}

#endif
