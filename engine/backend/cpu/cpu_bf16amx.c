// cpu_bf16amx.c: y = x W^T + bias (or y += that) for WEIGHT_BF16 and WEIGHT_MXFP4 weights on
// AMX-BF16 tiles (Sapphire Rapids and later), cpu_bf16.c's path for 16 input rows and more
// (MXFP4 reaches cpu_bf16.c from CPU_MXFP4_AMX_MIN_ROWS rows, or from any count with
// GPTOSS_CPU_MXFP4=bf16). tdpbf16ps's operand B is 16 rows of 16 bf16 pairs: K = 32 columns by
// N = 16 weight rows, row r holding each weight row's columns 2r and 2r + 1, which is the
// transpose of a 16 x 16 block of the weights' 32-bit column pairs as they lie. Each call
// transposes its piece of weight rows once into the thread's scratch (cpu_transpose16; an MXFP4
// row's 32 columns are one block, decoded to bf16 exactly as it is loaded) and runs every 32
// input rows against it: operand A is 16 input rows of 32 bf16 (cpu_bf16.c's rounded inputs,
// padded with zero rows), 2 x 2 float32 accumulator tiles.
// The sums run in another order than cpu_bf16.c's (and tdpbf16ps takes bf16 denormals as zero):
// close to it, not bit-identical. Tiles configured per call (cpu_amx_configure), released at
// the end.
#include <assert.h>
#include <immintrin.h>

#include "backend/cpu/cpu_amx.h"
#include "backend/cpu/cpu_avx512.h"
#include "backend/cpu/cpu_internal.h"
#include "common/check.h"
#include "model/mxfp4.h"

#define CPU_BF16AMX_TARGET \
  __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16")))

#define AMX_DPBF16(c, a, b) _tile_dpbf16ps(c, a, b)  // float sums of bf16 pairs

// y[m0 + i][col0 + j] = (y[m0 + i][col0 + j] with accumulate, else 0) + bias[col0 + j] (with a
// bias) + tile[i][j] for the input rows below num_rows and the columns below num_cols (of 16),
// 16 lanes at a time: (y + bias) + product, the order of cpu_linear_prepare then +=.
#define CPU_BF16AMX_STORE(tile, m0, col0, num_cols)                                           \
  do {                                                                                        \
    AMX_STORE(tile, sums, 64);                                                                \
    const __mmask16 mask = (__mmask16)((1u << (num_cols)) - 1);                               \
    const __m512 b = bias ? _mm512_maskz_loadu_ps(mask, bias + (col0)) : _mm512_setzero_ps(); \
    for (int i = 0; i < CPU_BF16_AMX_ROWS && (m0) + i < num_rows; i++) {                      \
      float *yr = y + ((m0) + i) * ldy + (col0);                                              \
      const __m512 old = accumulate ? _mm512_maskz_loadu_ps(mask, yr) : _mm512_setzero_ps();  \
      _mm512_mask_storeu_ps(yr, mask,                                                         \
                            _mm512_add_ps(_mm512_add_ps(old, b), _mm512_load_ps(sums[i])));   \
    }                                                                                         \
  } while (0)

CPU_BF16AMX_TARGET void cpu_bf16_amx_rows(const WeightMatrix *w, int64_t r0, int64_t nr,
                                          const uint16_t *xb, int num_rows, float *y,
                                          const float *bias, bool accumulate, uint32_t *bt) {
  const bool mx = w->format == WEIGHT_MXFP4;
  CHECK((mx || w->format == WEIGHT_BF16) && w->cols % CPU_BF16_AMX_K == 0);
  static_assert(CPU_BF16_AMX_K == MXFP4_BLOCK_SIZE, "a tile step's columns are one MXFP4 block");
  const int64_t cols = w->cols, ldy = w->rows, num_k = cols / CPU_BF16_AMX_K;
  const int64_t groups = (nr + 15) / 16;
  // The piece's rows: bf16 values [nr, cols], or MXFP4 blocks [nr, num_k, 16] and scales.
  const uint16_t *wd = mx ? NULL : (const uint16_t *)w->data + r0 * cols;
  const uint8_t *blocks = mx ? (const uint8_t *)w->data + r0 * num_k * MXFP4_BLOCK_BYTES : NULL;
  const uint8_t *scales = mx ? (const uint8_t *)w->scales + r0 * num_k : NULL;
  // bt[(g * num_k + k) * 256 + r * 16 + n] = column pair 16 k + r of weight row 16 g + n.
  for (int64_t g = 0; g < groups; g++)
    for (int64_t k = 0; k < num_k; k++) {
      __m512 r[16];
#pragma GCC unroll 16
      for (int n = 0; n < 16; n++) {
        const int64_t row = 16 * g + n;
        r[n] = row >= nr ? _mm512_setzero_ps()
               : mx      ? _mm512_castsi512_ps(cpu_mxfp4_block(
                               blocks + (row * num_k + k) * MXFP4_BLOCK_BYTES, scales[row * num_k + k]))
                         : _mm512_loadu_ps((const float *)(wd + row * cols + 32 * k));
      }
      cpu_transpose16(r);
#pragma GCC unroll 16
      for (int i = 0; i < 16; i++)
        _mm512_storeu_ps((float *)(bt + (g * num_k + k) * 256 + i * 16), r[i]);
    }
  float sums[CPU_BF16_AMX_ROWS][16] __attribute__((aligned(64)));
  cpu_amx_configure();
  const int64_t stride = cols * 2;  // bytes per input row
  for (int m0 = 0; m0 < num_rows; m0 += 2 * CPU_BF16_AMX_ROWS) {
    const bool two_blocks = m0 + CPU_BF16_AMX_ROWS < num_rows;  // else A1 is all padding
    const uint16_t *a0 = xb + (int64_t)m0 * cols, *a1 = a0 + CPU_BF16_AMX_ROWS * cols;
    for (int64_t g = 0; g < groups; g += 2) {
      const bool two_groups = g + 1 < groups;
      const uint32_t *b0 = bt + g * num_k * 256, *b1 = b0 + num_k * 256;
      AMX_ZERO(TILE_C00);
      AMX_ZERO(TILE_C01);
      AMX_ZERO(TILE_C10);
      AMX_ZERO(TILE_C11);
      for (int64_t k = 0; k < num_k; k++) {
        AMX_LOAD(TILE_A0, a0 + k * CPU_BF16_AMX_K, stride);
        AMX_LOAD(TILE_B0, b0 + k * 256, 64);
        AMX_DPBF16(TILE_C00, TILE_A0, TILE_B0);
        if (two_groups) {
          AMX_LOAD(TILE_B1, b1 + k * 256, 64);
          AMX_DPBF16(TILE_C01, TILE_A0, TILE_B1);
        }
        if (two_blocks) {
          AMX_LOAD(TILE_A1, a1 + k * CPU_BF16_AMX_K, stride);
          AMX_DPBF16(TILE_C10, TILE_A1, TILE_B0);
          if (two_groups) AMX_DPBF16(TILE_C11, TILE_A1, TILE_B1);
        }
      }
      const int64_t col0 = r0 + 16 * g, col1 = col0 + 16;
      const int n0 = nr - 16 * g < 16 ? (int)(nr - 16 * g) : 16;
      const int n1 = two_groups ? (nr - 16 * (g + 1) < 16 ? (int)(nr - 16 * (g + 1)) : 16) : 0;
      CPU_BF16AMX_STORE(TILE_C00, m0, col0, n0);
      if (two_groups) CPU_BF16AMX_STORE(TILE_C01, m0, col1, n1);
      if (two_blocks) CPU_BF16AMX_STORE(TILE_C10, m0 + CPU_BF16_AMX_ROWS, col0, n0);
      if (two_blocks && two_groups) CPU_BF16AMX_STORE(TILE_C11, m0 + CPU_BF16_AMX_ROWS, col1, n1);
    }
  }
  _tile_release();
}
