// cuda_mma.cuh (tests/simt, in place of engine/backend/cuda's): mma.sync m16n8k16 (bf16, float
// accumulation) and ldmatrix m8n8 x4 (with and without .trans) as warp exchanges, from the PTX
// ISA's fragment layouts (lane l, g = l / 4, q = l % 4): A a0 (g, 2q..), a1 (g + 8, 2q..),
// a2 (g, 2q + 8..), a3 (g + 8, 2q + 8..); B b0 (k 2q.., n g), b1 (k 2q + 8.., n g); C c0, c1
// (g, 2q..), c2, c3 (g + 8, 2q..); ldmatrix: lanes 8i .. 8i + 7 address matrix i's rows, and lane
// l gets row l / 4, columns 2 (l % 4) and + 1 (transposed: column l / 4, rows 2 (l % 4) and + 1).
#ifndef GE_BACKEND_CUDA_CUDA_MMA_CUH
#define GE_BACKEND_CUDA_CUDA_MMA_CUH
#include <stdint.h>
static inline float emu_bf16(uint32_t pair, int hi) {
  return __uint_as_float(hi ? pair & 0xffff0000u : pair << 16);
}
static inline void cuda_mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                 uint32_t b0, uint32_t b1) {
  struct In {
    uint32_t a[4], b[2];
  } mine = {{a0, a1, a2, a3}, {b0, b1}};
  In all[32];
  emu_warp_exchange(&mine, sizeof mine, all);
  float A[16][16], B[16][8];  // B: k x n
  for (int l = 0; l < 32; l++) {
    const int g = l / 4, q = l % 4;
    for (int h = 0; h < 2; h++) {
      A[g][2 * q + h] = emu_bf16(all[l].a[0], h);
      A[g + 8][2 * q + h] = emu_bf16(all[l].a[1], h);
      A[g][2 * q + 8 + h] = emu_bf16(all[l].a[2], h);
      A[g + 8][2 * q + 8 + h] = emu_bf16(all[l].a[3], h);
      B[2 * q + h][g] = emu_bf16(all[l].b[0], h);
      B[2 * q + 8 + h][g] = emu_bf16(all[l].b[1], h);
    }
  }
  const int l = emu_lane(), g = l / 4, q = l % 4;
  const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * q, 2 * q + 1, 2 * q, 2 * q + 1};
  for (int i = 0; i < 4; i++) {
    float s = d[i];
    for (int k = 0; k < 16; k++) s += A[rows[i]][k] * B[k][cols[i]];
    d[i] = s;
  }
}
static inline void emu_ldmatrix(uint32_t (&r)[4], const void *row, bool trans) {
  const void *rows[32];
  emu_warp_exchange(&row, sizeof row, rows);
  const int l = emu_lane();
  for (int i = 0; i < 4; i++) {
    uint16_t v[2];
    for (int h = 0; h < 2; h++) {
      int mrow, mcol;
      if (!trans)
        mrow = l / 4, mcol = 2 * (l % 4) + h;
      else
        mrow = 2 * (l % 4) + h, mcol = l / 4;
      v[h] = ((const uint16_t *)rows[8 * i + mrow])[mcol];
    }
    r[i] = (uint32_t)v[0] | (uint32_t)v[1] << 16;
  }
}
static inline void cuda_ldmatrix_x4(uint32_t (&r)[4], const void *row) {
  emu_ldmatrix(r, row, false);
}
static inline void cuda_ldmatrix_x4_trans(uint32_t (&r)[4], const void *row) {
  emu_ldmatrix(r, row, true);
}

#endif
