// cuda_decode.cuh: device-side decoding of weight elements (F32, BF16, MXFP4 e2m1 codes with
// e8m0 scales) to float, exactly as model/mxfp4.c and model/bf16.h decode them on the host, and
// of a word of MXFP4 codes straight to bf16x2 (the MoE kernels' tensor-core input); shared by the
// embedding look-up, the MXFP4 dequantizer and the MoE kernels. Pure functions.
#ifndef GE_BACKEND_CUDA_CUDA_DECODE_CUH
#define GE_BACKEND_CUDA_CUDA_DECODE_CUH

#include <cuda_bf16.h>
#include <stdint.h>

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

static __device__ __forceinline__ float cuda_mxfp4_value(uint32_t code, uint32_t scale) {
  return scale == 255u ? ldexpf(cuda_e2m1(code), 128) : cuda_e2m1(code) * cuda_e8m0(scale);
}

static __device__ __forceinline__ float cuda_bf16_bits_to_float(uint16_t h) {
  return __uint_as_float((uint32_t)h << 16);
}

// Element (row, col) of a matrix in format fmt (WeightFormat; Q8 is never on the device).
// data, scales: as WeightMatrix documents them; cols: the matrix's columns.
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
// line so that its code is not repeated at every decode site: the 4 words by float arithmetic.
static __device__ __noinline__ uint4 cuda_mxfp4_decode_float(uint32_t v, uint32_t scale) {
  uint32_t out[4];
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const uint32_t byte = v >> (8 * j) & 0xffu;
    const __nv_bfloat162 h = __floats2bfloat162_rn(cuda_mxfp4_value(byte & 15u, scale),
                                                   cuda_mxfp4_value(byte >> 4, scale));
    out[j] = *(const uint32_t *)&h;
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// The 4 code bytes of v (8 consecutive columns of one 32-column block) as bf16x2 (byte j: its low
// nibble's value in the low half, its high nibble's in the high half, so out is the 8 columns in
// order), each e2m1 value times 2^(scale - 127), exactly: byte permutes from two 8-entry tables
// (the magnitudes' low and high bytes) with the sign bits moved into place, and one bf16x2
// product applies the scale (exact while the product is a normal bf16; other scales take the
// float path).
static __device__ __forceinline__ void cuda_mxfp4_decode_word(uint32_t v, uint32_t scale,
                                                              uint32_t out[4]) {
  if (scale >= 2 && scale <= 252) {  // e2m1 (2^-1 .. 6) x 2^(scale - 127): a normal bf16
    // bf16 of e2m1 magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6: low bytes and high bytes, 4 per word
    const uint32_t lo_a = 0xC0800000u, lo_b = 0xC0804000u;
    const uint32_t hi_a = 0x3F3F3F00u, hi_b = 0x40404040u;
    const uint32_t mag = v & 0x77777777u;  // selector nibbles without the signs
    const uint32_t lo03 = __byte_perm(lo_a, lo_b, mag), hi03 = __byte_perm(hi_a, hi_b, mag);
    const uint32_t lo47 = __byte_perm(lo_a, lo_b, mag >> 16);
    const uint32_t hi47 = __byte_perm(hi_a, hi_b, mag >> 16);
    // Byte j of `up` has bit 7 = the sign of byte j's low nibble; byte j of v has its high
    // nibble's: moved to bits 15 and 31 of out[j].
    const uint32_t up = v << 4;
    const uint32_t s = scale << 7 | scale << 23;  // bf16x2 of 2^(scale - 127), twice
    const __nv_bfloat162 s2 = *(const __nv_bfloat162 *)&s;
    const uint32_t mags[4] = {__byte_perm(lo03, hi03, 0x5140), __byte_perm(lo03, hi03, 0x7362),
                              __byte_perm(lo47, hi47, 0x5140), __byte_perm(lo47, hi47, 0x7362)};
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const uint32_t signs = __byte_perm(up, v, (4 + j) << 12 | j << 4) & 0x80008000u;
      const uint32_t bits = mags[j] | signs;
      const __nv_bfloat162 scaled = __hmul2(*(const __nv_bfloat162 *)&bits, s2);
      out[j] = *(const uint32_t *)&scaled;
    }
    return;
  }
  const uint4 f = cuda_mxfp4_decode_float(v, scale);
  out[0] = f.x, out[1] = f.y, out[2] = f.z, out[3] = f.w;
}

#endif
