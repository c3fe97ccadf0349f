// q8.h: the WEIGHT_Q8 format (8-bit weights, one float scale per row) for the matrices the
// forward pass multiplies: its byte layout, quantization at load time and decoding. Pure
// functions over caller-owned memory; knows nothing about files or backends.
//
// Layout. Rows are grouped in tiles of 16 and columns in groups of 4; one tile's group is 64
// bytes: row r % 16's four columns at bytes 4 (r % 16) .. 4 (r % 16) + 3. So one 512-bit load
// holds 16 rows by 4 columns, the operand of an int8 dot-product instruction whose other operand
// is 4 input values broadcast to every lane (engine/backend/cpu/cpu_q8.c). Tiles follow each
// other, each with all its column groups in order:
//   data:   uint8_t [q8_tiles(rows), q8_groups(cols), 16, 4], byte = q + 128 (q in -127..127)
//   scales: float [q8_tiles(rows) * 16], W[r][c] ~= q[r][c] * scales[r]
// Rows and columns past the matrix (padding up to 16 and 4) hold q = 0 (byte 128), scale 0.
// Quantization: scales[r] = max_c |W[r][c]| / 127, q = W / scales[r] rounded to nearest (ties
// away from zero). The error of each weight is at most scales[r] / 2: relative to the row's
// largest weight, 1/254.
#ifndef GE_MODEL_Q8_H
#define GE_MODEL_Q8_H

#include <stddef.h>
#include <stdint.h>

#define Q8_TILE_ROWS 16
#define Q8_GROUP_COLS 4
#define Q8_ZERO 128  // the stored byte of q = 0
#define Q8_MAX 127   // largest |q|

static inline int64_t q8_tiles(int64_t rows) { return (rows + Q8_TILE_ROWS - 1) / Q8_TILE_ROWS; }
static inline int64_t q8_groups(int64_t cols) { return (cols + Q8_GROUP_COLS - 1) / Q8_GROUP_COLS; }
// Bytes of data for a [rows, cols] matrix (padding included).
static inline size_t q8_data_bytes(int64_t rows, int64_t cols) {
  return (size_t)(q8_tiles(rows) * Q8_TILE_ROWS) * (size_t)(q8_groups(cols) * Q8_GROUP_COLS);
}
// Floats of scales for rows rows (padding included).
static inline size_t q8_num_scales(int64_t rows) { return (size_t)(q8_tiles(rows) * Q8_TILE_ROWS); }
// Byte index of W[r][c] in data, for a matrix of cols columns.
static inline int64_t q8_index(int64_t r, int64_t c, int64_t cols) {
  return ((r / Q8_TILE_ROWS * q8_groups(cols) + c / Q8_GROUP_COLS) * Q8_TILE_ROWS +
          r % Q8_TILE_ROWS) *
             Q8_GROUP_COLS +
         c % Q8_GROUP_COLS;
}

// Sets every byte and scale of a [rows, cols] matrix to q = 0 (so the padding is zero).
// data: [q8_data_bytes(rows, cols)], scales: [q8_num_scales(rows)]
void q8_clear(int64_t rows, int64_t cols, uint8_t *data, float *scales);

// Quantizes row r of a matrix of cols columns into data and scales[r]. row: [cols]
void q8_quantize_row(const float *row, int64_t r, int64_t cols, uint8_t *data, float *scales);

// Decodes row r (cols values) to float: q * scale, exactly.  out: [cols]
void q8_decode_row(const uint8_t *data, const float *scales, int64_t r, int64_t cols, float *out);

#endif
