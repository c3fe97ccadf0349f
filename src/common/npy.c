// npy.c: .npy version 1.0 float32 2-D reader and writer (magic, header dict padded to 64 bytes,
// raw little-endian data). x86-64 and aarch64 are little-endian, so data is copied as is.
#include "common/npy.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/file.h"

static const char MAGIC[] = "\x93NUMPY";

bool npy_write_f32(const char *path, const float *data, int64_t rows, int64_t cols, char *err,
                   size_t err_size) {
  Buf header = {0};
  buf_printf(&header, "{'descr': '<f4', 'fortran_order': False, 'shape': (%" PRId64 ", %" PRId64 "), }",
             rows, cols);
  while ((10 + header.len + 1) % 64) buf_append_byte(&header, ' ');  // header ends 64-aligned
  buf_append_byte(&header, '\n');
  size_t data_bytes = (size_t)rows * (size_t)cols * sizeof *data;
  Buf file = {0};
  uint8_t preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)header.len,
                          (uint8_t)(header.len >> 8)};
  buf_append(&file, preamble, sizeof preamble);
  buf_append(&file, header.data, header.len);
  buf_append(&file, data, data_bytes);
  bool ok = file_write_atomic(path, file.data, file.len, err, err_size);
  buf_free(&file);
  buf_free(&header);
  return ok;
}

bool npy_read_f32(const char *path, float **data, int64_t *rows, int64_t *cols, char *err,
                  size_t err_size) {
  Buf file = {0};
  if (!file_read_all(path, &file, err, err_size)) return false;
  const char *why = NULL;
  size_t header_len = 0;
  if (file.len < 10 || memcmp(file.data, MAGIC, 6) != 0 || file.data[6] != 1) {
    why = "not a version 1.0 .npy file";
  } else {
    header_len = (uint8_t)file.data[8] | (size_t)(uint8_t)file.data[9] << 8;
    if (10 + header_len > file.len) why = "truncated header";
  }
  long long r = 0, c = 0;
  if (!why) {
    char *header = strndup(file.data + 10, header_len);
    if (!strstr(header, "'descr': '<f4'")) why = "dtype is not '<f4' (float32)";
    else if (!strstr(header, "'fortran_order': False")) why = "Fortran order is not supported";
    else {
      const char *shape = strstr(header, "'shape': (");
      if (!shape || sscanf(shape, "'shape': (%lld, %lld)", &r, &c) != 2 || r < 0 || c < 0)
        why = "shape is not 2-D";
    }
    free(header);
  }
  size_t bytes = (size_t)r * (size_t)c * sizeof(float);
  if (!why && file.len - 10 - header_len != bytes) why = "data size does not match the shape";
  if (why) {
    snprintf(err, err_size, "%s: %s", path, why);
    buf_free(&file);
    return false;
  }
  *data = xmalloc(bytes ? bytes : 1);
  memcpy(*data, file.data + 10 + header_len, bytes);
  *rows = r;
  *cols = c;
  buf_free(&file);
  return true;
}
