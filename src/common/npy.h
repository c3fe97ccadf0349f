// npy.h: NumPy .npy files of little-endian float32 matrices (format version 1.0, C order): the
// golden logits fixtures and `gptoss-engine generate --logits-out`. Nothing else of the format.
#ifndef GB_COMMON_NPY_H
#define GB_COMMON_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Writes data [rows, cols] to path atomically (temporary file + rename). False with err.
bool npy_write_f32(const char *path, const float *data, int64_t rows, int64_t cols, char *err,
                   size_t err_size);

// Reads a 2-D '<f4' C-order array; *data is malloc'd [rows, cols]. False with err naming the
// file and what is wrong (another dtype, Fortran order, not 2-D, truncated).
bool npy_read_f32(const char *path, float **data, int64_t *rows, int64_t *cols, char *err,
                  size_t err_size);

#endif
