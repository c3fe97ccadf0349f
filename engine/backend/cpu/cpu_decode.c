// cpu_decode.c: turns rows of a WeightMatrix (F32, BF16, MXFP4, Q8) into float32, for embedding
// look-ups and for the linear paths that multiply decoded tiles. Reads weights, writes only out;
// the bit layouts are model/bf16.h's, model/mxfp4.h's and model/q8.h's, not repeated here.
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "common/check.h"
#include "model/bf16.h"
#include "model/mxfp4.h"
#include "model/q8.h"

// src: [n] bf16 bits, out: [n]. Eight at a time: GCC vectorises fixed-size inner loops at -O2.
static void cpu_decode_bf16(const uint16_t *src, int64_t n, float *out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) out[i + k] = bf16_to_f32(src[i + k]);
  for (; i < n; i++) out[i] = bf16_to_f32(src[i]);
}

void cpu_decode_rows(const WeightMatrix *w, int64_t row0, int64_t num_rows, float *out) {
  CHECK(row0 >= 0 && num_rows >= 0 && row0 + num_rows <= w->rows);
  const int64_t cols = w->cols;
  switch (w->format) {
    case WEIGHT_F32:
      memcpy(out, (const float *)w->data + row0 * cols, (size_t)(num_rows * cols) * sizeof(float));
      return;
    case WEIGHT_BF16:
      cpu_decode_bf16((const uint16_t *)w->data + row0 * cols, num_rows * cols, out);
      return;
    case WEIGHT_MXFP4: {
      CHECK(cols % 32 == 0);
      const int64_t num_groups = cols / 32;
      const uint8_t *blocks = (const uint8_t *)w->data;    // [rows, num_groups, 16]
      const uint8_t *scales = (const uint8_t *)w->scales;  // [rows, num_groups]
      for (int64_t r = row0; r < row0 + num_rows; r++)
        mxfp4_decode_row(blocks + r * num_groups * 16, scales + r * num_groups, cols,
                         out + (r - row0) * cols);
      return;
    }
    case WEIGHT_Q8:
      for (int64_t r = row0; r < row0 + num_rows; r++)
        q8_decode_row(w->data, w->scales, r, cols, out + (r - row0) * cols);
      return;
  }
  CHECK(!"unknown weight format");
}
