// mxfp4.h: decoding of OpenAI's MXFP4 expert weights (spec gptoss-model.md section 5.3): blocks
// of 32 e2m1 values (two 4-bit codes per byte, the even element in the low nibble) sharing one
// e8m0 scale byte (bias 127). Used at load time and by backends that decode on the fly. Pure
// functions over caller-owned memory; knows nothing about tensors or files.
#ifndef GE_MODEL_MXFP4_H
#define GE_MODEL_MXFP4_H

#include <stdint.h>

#define MXFP4_BLOCK_SIZE 32   // values per scale
#define MXFP4_BLOCK_BYTES 16  // bytes of codes per block
#define MXFP4_SCALE_BIAS 127

// The 16 e2m1 values by code: bit 3 sign, bits 2-1 exponent (bias 1), bit 0 mantissa.
extern const float MXFP4_E2M1[16];

// value = MXFP4_E2M1[code] * 2^(scale - 127), exactly (as ldexpf; scale 255 is not special).
float mxfp4_value(uint8_t code, uint8_t scale);

// Decodes one row of cols values (cols a multiple of 32), exactly.
// blocks: [cols / 32, 16], scales: [cols / 32], out: [cols]
void mxfp4_decode_row(const uint8_t *blocks, const uint8_t *scales, int64_t cols, float *out);

#endif
