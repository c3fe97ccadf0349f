// q8.c: WEIGHT_Q8 quantization and decoding (see q8.h). Only arithmetic on the caller's buffers.
#include "model/q8.h"

#include <math.h>
#include <string.h>

void q8_clear(int64_t rows, int64_t cols, uint8_t *data, float *scales) {
  memset(data, Q8_ZERO, q8_data_bytes(rows, cols));
  memset(scales, 0, q8_num_scales(rows) * sizeof *scales);
}

void q8_quantize_row(const float *row, int64_t r, int64_t cols, uint8_t *data, float *scales) {
  float amax = 0.0f;
  for (int64_t c = 0; c < cols; c++) amax = fmaxf(amax, fabsf(row[c]));
  const float scale = amax / Q8_MAX, inv = amax > 0.0f ? Q8_MAX / amax : 0.0f;
  scales[r] = scale;
  for (int64_t c = 0; c < cols; c++) {
    const float q = fminf(fmaxf(roundf(row[c] * inv), -Q8_MAX), Q8_MAX);
    data[q8_index(r, c, cols)] = (uint8_t)((int)q + Q8_ZERO);
  }
}

void q8_decode_row(const uint8_t *data, const float *scales, int64_t r, int64_t cols, float *out) {
  const uint8_t *tile = data + q8_index(r, 0, cols);  // row r's first group
  for (int64_t g = 0; g < q8_groups(cols); g++) {
    const uint8_t *group = tile + g * Q8_TILE_ROWS * Q8_GROUP_COLS;  // [4]
    for (int k = 0; k < Q8_GROUP_COLS && g * Q8_GROUP_COLS + k < cols; k++)
      out[g * Q8_GROUP_COLS + k] = (float)((int)group[k] - Q8_ZERO) * scales[r];
  }
}
