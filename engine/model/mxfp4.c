// mxfp4.c: MXFP4 decoding (see mxfp4.h). Only arithmetic on the caller's buffers.
#include "model/mxfp4.h"

#include <math.h>

const float MXFP4_E2M1[16] = {+0.0f, +0.5f, +1.0f, +1.5f, +2.0f, +3.0f, +4.0f, +6.0f,
                              -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

float mxfp4_value(uint8_t code, uint8_t scale) {
  return ldexpf(MXFP4_E2M1[code & 0xF], (int)scale - MXFP4_SCALE_BIAS);
}

// The 16 values of one block's scale. For scales below 255 the factor 2^(scale - 127) is a
// finite float (2^-127 is subnormal but exact) and every product is exact or overflows exactly
// as ldexpf does; 2^128 is not a float, so scale 255 takes ldexpf (0 * inf would be NaN).
static void block_table(uint8_t scale, float table[16]) {
  if (scale == 255) {
    for (int k = 0; k < 16; k++) table[k] = mxfp4_value((uint8_t)k, scale);
    return;
  }
  float factor = ldexpf(1.0f, (int)scale - MXFP4_SCALE_BIAS);
  for (int k = 0; k < 16; k++) table[k] = MXFP4_E2M1[k] * factor;
}

void mxfp4_decode_row(const uint8_t *blocks, const uint8_t *scales, int64_t cols, float *out) {
  float table[16];
  for (int64_t g = 0; g < cols / MXFP4_BLOCK_SIZE; g++) {
    block_table(scales[g], table);
    const uint8_t *block = blocks + g * MXFP4_BLOCK_BYTES;
    float *dst = out + g * MXFP4_BLOCK_SIZE;
    for (int j = 0; j < MXFP4_BLOCK_BYTES; j++) {
      dst[2 * j] = table[block[j] & 0xF];
      dst[2 * j + 1] = table[block[j] >> 4];
    }
  }
}
