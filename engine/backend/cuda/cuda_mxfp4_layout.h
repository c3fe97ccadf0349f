// cuda_mxfp4_layout.h: how the CUDA backend keeps MXFP4 expert codes on the device, for the MoE
// kernels' decode. A checkpoint word (4 bytes: 8 consecutive e2m1 codes, code i in bits 4i ..
// 4i + 3: sign, exponent 1-0, mantissa from the top) is stored with its 32 bits moved so that
// each pair of codes (2j, 2j + 1) becomes a bf16x2 with two logic operations: the code's
// exponent bits in the bf16's two lowest exponent bits, its mantissa bit in the bf16's top
// mantissa bit and its sign in the sign bit, which is the e2m1 value times 2^-126 exactly
// (exponent 0, the codes 0 and 0.5, lands on a bf16 subnormal with the same factor). One bf16x2
// product by 2^126 x the block's scale then gives the values.
// Pair 0 is the stored word masked; pairs 1 and 2 the word rotated left by 6 and 10, masked;
// pair 3 two rotations (4 and 12) merged: 9 integer operations per 8 codes, where byte permutes
// from tables took 19. No rotation of the mask alone tiles the 32 bits (checked by search), so
// pair 3 takes two.
// Compiles as C (the host test) and as CUDA (host and device). Pure functions.
#ifndef GE_BACKEND_CUDA_CUDA_MXFP4_LAYOUT_H
#define GE_BACKEND_CUDA_CUDA_MXFP4_LAYOUT_H

#include <stdint.h>

#ifdef __CUDACC__
#define MXFP4_LAYOUT_FN static inline __host__ __device__
#else
#define MXFP4_LAYOUT_FN static inline
#endif

// The bits of a bf16x2 that a code fills: sign (15), exponent bits 1-0 (8, 7), mantissa's top (6).
#define MXFP4_PAIR_BITS 0x81C081C0u
// Pair 3's bits taken from the word rotated by 12 (the mantissas); the rest come rotated by 4.
#define MXFP4_PAIR3_LATE_BITS 0x00400040u

MXFP4_LAYOUT_FN uint32_t mxfp4_rotl(uint32_t v, int r) {
#ifdef __CUDA_ARCH__
  return __funnelshift_l(v, v, r);
#else
  return v << r | v >> (32 - r);
#endif
}

// How far pair j's bit at position `at` (of the bf16x2) is rotated from where it is stored.
MXFP4_LAYOUT_FN int mxfp4_pair_rotation(int j, int at) {
  if (j < 3) return j ? 4 * j + 2 : 0;  // 0, 6, 10
  return (MXFP4_PAIR3_LATE_BITS >> at & 1u) ? 12 : 4;
}

// Bit b of a checkpoint word -> its bit in the stored word.
MXFP4_LAYOUT_FN int mxfp4_stored_bit(int b) {
  const int code = b / 4, field = b % 4;  // field: 0 mantissa, 1-2 exponent, 3 sign
  const int at = 16 * (code % 2) + (field == 3 ? 15 : 6 + field);
  return (at - mxfp4_pair_rotation(code / 2, at) + 32) % 32;
}

// A checkpoint word in the stored layout (a permutation of its bits).
MXFP4_LAYOUT_FN uint32_t mxfp4_to_stored(uint32_t word) {
  uint32_t stored = 0;
  for (int b = 0; b < 32; b++) stored |= (word >> b & 1u) << mxfp4_stored_bit(b);
  return stored;
}

// The 8 codes of a stored word as bf16x2 bits of their e2m1 values times 2^-126: pair[j] holds
// code 2j in its low half and code 2j + 1 in its high half.
MXFP4_LAYOUT_FN void mxfp4_stored_pairs(uint32_t stored, uint32_t pair[4]) {
  pair[0] = stored & MXFP4_PAIR_BITS;
  pair[1] = mxfp4_rotl(stored, 6) & MXFP4_PAIR_BITS;
  pair[2] = mxfp4_rotl(stored, 10) & MXFP4_PAIR_BITS;
  pair[3] = (mxfp4_rotl(stored, 4) & (MXFP4_PAIR_BITS & ~MXFP4_PAIR3_LATE_BITS)) |
            (mxfp4_rotl(stored, 12) & MXFP4_PAIR3_LATE_BITS);
}

#endif
