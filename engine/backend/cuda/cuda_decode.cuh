// cuda_decode.cuh: device-side decoding of weight elements (F32, BF16, MXFP4 e2m1 codes with
// e8m0 scales) to float, exactly as model/mxfp4.c and model/bf16.h decode them on the host, and
// of a word of MXFP4 codes straight to bf16x2 (the MoE kernels' tensor-core input); shared by the
// embedding look-up, the MXFP4 dequantizer and the MoE kernels (whose expert codes are stored in
// cuda_mxfp4_layout.h's layout). Pure functions.
#ifndef GE_BACKEND_CUDA_CUDA_DECODE_CUH
#define GE_BACKEND_CUDA_CUDA_DECODE_CUH

#include <cuda_bf16.h>
#include <stdint.h>

#include "backend/cuda/cuda_mxfp4_layout.h"
#include "model/weights.h"

// The e2m1 value of a 4-bit code (bit 3 sign, bits 2-1 exponent with bias 1, bit 0 mantissa):
// 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives, built from its float bits.
static __device__ __forceinline__ float cuda_e2m1(uint32_t code) {
  const uint32_t m = code & 7u;
  const uint32_t bits =
      m >= 2 ? (((m >> 1) + 126u) << 23) | ((m & 1u) << 22) : (m ? 0x3f000000u : 0u);
  return __uint_as_float(bits | ((code & 8u) << 28));
}

// 2^(scale - 127) for scales 0 .. 254 (2^-127 is a float subnormal, exact); scale 255 (2^128)
// is no float, so cuda_mxfp4_value takes ldexpf for it, as the host decoder does.
static __device__ __forceinline__ float cuda_e8m0(uint32_t scale) {
  return __uint_as_float(scale ? scale << 23 : 0x00400000u);
}

// An e2m1 value times 2^(scale - 127).
static __device__ __forceinline__ float cuda_mxfp4_scaled(float e2m1, uint32_t scale) {
  return scale == 255u ? ldexpf(e2m1, 128) : e2m1 * cuda_e8m0(scale);
}

static __device__ __forceinline__ float cuda_mxfp4_value(uint32_t code, uint32_t scale) {
  return cuda_mxfp4_scaled(cuda_e2m1(code), scale);
}

static __device__ __forceinline__ float cuda_bf16_bits_to_float(uint16_t h) {
  return __uint_as_float((uint32_t)h << 16);
}

// Element (row, col) of a matrix in format fmt (WeightFormat; Q8 is never on the device).
// data, scales: as WeightMatrix documents them; cols: the matrix's columns. MXFP4 in the plain
// layout only: the experts' codes, stored permuted (cuda_mxfp4_layout.h), never come here.
static __device__ __forceinline__ float cuda_weight_at(int fmt, const void *data,
                                                       const uint8_t *scales, int64_t cols,
                                                       int64_t row, int64_t col) {
  const int64_t i = row * cols + col;
  if (fmt == WEIGHT_F32) return ((const float *)data)[i];
  if (fmt == WEIGHT_BF16) return cuda_bf16_bits_to_float(((const uint16_t *)data)[i]);
  const uint8_t byte = ((const uint8_t *)data)[i / 2];
  return cuda_mxfp4_value(col & 1 ? byte >> 4 : byte & 15u, scales[i / 32]);
}

// cuda_mxfp4_decode_word's rare path (scales whose products leave the normal bf16 range), out of
// line so that its code is not repeated at every decode site: the 4 pairs by float arithmetic.
static __device__ __noinline__ uint4 cuda_mxfp4_decode_float(uint4 pairs, uint32_t scale) {
  const uint32_t pair[4] = {pairs.x, pairs.y, pairs.z, pairs.w};
  uint32_t out[4];
#pragma unroll
  for (int j = 0; j < 4; j++) {
    // the e2m1 values, times 2^-126 in the pairs (a float's bf16 part), exactly
    const float lo = __uint_as_float(pair[j] << 16) * 0x1p126f;
    const float hi = __uint_as_float(pair[j] & 0xffff0000u) * 0x1p126f;
    const __nv_bfloat162 h =
        __floats2bfloat162_rn(cuda_mxfp4_scaled(lo, scale), cuda_mxfp4_scaled(hi, scale));
    out[j] = *(const uint32_t *)&h;
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// A stored word of MXFP4 expert codes (8 consecutive columns of one 32-column block, in
// cuda_mxfp4_layout.h's layout) as bf16x2: out[j] holds columns 2j (low half) and 2j + 1, each
// e2m1 value times 2^(scale - 127), exactly. mxfp4_stored_pairs gives the values times 2^-126
// (9 integer operations); one bf16x2 product by 2^(scale - 1) = 2^126 x 2^(scale - 127) scales
// them, exact while that factor and every product are normal bf16s (scales 2 .. 128: a block
// scale up to 2; a checkpoint's are far smaller); other scales take the float path.
static __device__ __forceinline__ void cuda_mxfp4_decode_word(uint32_t stored, uint32_t scale,
                                                              uint32_t out[4]) {
  uint32_t pair[4];
  mxfp4_stored_pairs(stored, pair);
  if (scale - 2u <= 126u) {
    const uint32_t factor = (scale + 126u) << 7;  // bf16 of 2^(scale - 1)
    const uint32_t f2 = factor | factor << 16;
    const __nv_bfloat162 s2 = *(const __nv_bfloat162 *)&f2;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const __nv_bfloat162 scaled = __hmul2(*(const __nv_bfloat162 *)&pair[j], s2);
      out[j] = *(const uint32_t *)&scaled;
    }
    return;
  }
  const uint4 f = cuda_mxfp4_decode_float(make_uint4(pair[0], pair[1], pair[2], pair[3]), scale);
  out[0] = f.x, out[1] = f.y, out[2] = f.z, out[3] = f.w;
}

#endif
