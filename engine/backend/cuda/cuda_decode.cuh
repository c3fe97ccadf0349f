// cuda_decode.cuh: device-side decoding of weight elements (F32, BF16, MXFP4 e2m1 codes with
// e8m0 scales) to float, exactly as model/mxfp4.c and model/bf16.h decode them on the host;
// shared by the embedding look-up, the MXFP4 dequantizer and the MoE kernels. Pure functions.
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

#endif
