// cpu_q8amx.c: y += x W^T for WEIGHT_Q8 weights on AMX-INT8 tiles (Sapphire Rapids and later).
// model/q8.h's layout is already AMX's operand B: a tile of 16 weight rows stores, per group of
// 4 columns, 64 bytes (each row's 4 unsigned q + 128), so 16 consecutive groups are one B tile
// (16 rows of 64 bytes: K = 64 columns by N = 16 weight rows). Operand A is 16 input rows of 64
// quantized int8 columns from cpu_q8_linear's scratch (padded with zero rows to 16). tdpbsud
// (signed A, unsigned B) adds the products into int32 tiles: 2 x 2 accumulators (32 input rows
// by 32 weight rows) over the columns, then cpu_q8.c's epilogue takes out the +128 offset and
// scales into float. Integer sums are exact, so the result is bit-identical to the VNNI path.
// Needs the process's permission for tile data (cpu_backend.c asks Linux once) and configures
// the tiles on the calling thread for each call (cpu_amx_configure, shared with cpu_bf16amx.c),
// releasing them at the end.
#include <immintrin.h>
#include <string.h>

#include "backend/cpu/cpu_amx.h"
#include "backend/cpu/cpu_internal.h"
#include "common/check.h"
#include "model/q8.h"

#define CPU_AMX_TARGET __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl")))

#define AMX_DPBSUD(c, a, b) _tile_dpbsud(c, a, b)  // int32 sums of int8 x uint8

// ldtilecfg's 64-byte operand (palette 1): every tile 16 rows of 64 bytes (cpu_bf16amx.c uses
// the same configuration).
typedef struct {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} CpuAmxConfig;

CPU_AMX_TARGET void cpu_amx_configure(void) {
  CpuAmxConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < TILE_COUNT; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  // GCC's _tile_loadconfig tells the compiler it reads 8 bytes of cfg, so without this the
  // stores to the rest may be dropped as dead (seen in another shape of this function: a
  // configuration of zeros, and a fault at ldtilecfg).
  __asm__ volatile("" : : "m"(cfg));
  _tile_loadconfig(&cfg);
}

// Writes accumulator tile `tile` (input rows m0 .., weight rows row0 ..) into y through the
// epilogue, for the input rows below num_rows and the weight rows below rows.
#define CPU_AMX_STORE(tile, m0, row0)                                                             \
  do {                                                                                            \
    AMX_STORE(tile, sums, 64);                                                                    \
    for (int i = 0; i < CPU_Q8_AMX_ROWS && (m0) + i < num_rows; i++)                              \
      cpu_q8_store(sums[i], scales + (row0), in, (m0) + i, y, w->rows, (row0), w->rows - (row0)); \
  } while (0)

CPU_AMX_TARGET void cpu_q8_amx_tiles(const WeightMatrix *w, int64_t t0, int64_t t1,
                                     const CpuQ8Input *in, int num_rows, float *y) {
  CHECK(w->cols % CPU_Q8_AMX_K == 0 && in->ld == w->cols);
  const int64_t groups = q8_groups(w->cols), tile_bytes = groups * Q8_TILE_ROWS * Q8_GROUP_COLS;
  const uint8_t *data = w->data;
  const float *scales = w->scales;
  int32_t sums[CPU_Q8_AMX_ROWS][16] __attribute__((aligned(64)));
  cpu_amx_configure();
  for (int m0 = 0; m0 < num_rows; m0 += 2 * CPU_Q8_AMX_ROWS) {
    const bool two_blocks = m0 + CPU_Q8_AMX_ROWS < num_rows;  // else A1's rows are all padding
    const int8_t *a0 = in->q + (int64_t)m0 * in->ld, *a1 = a0 + CPU_Q8_AMX_ROWS * in->ld;
    for (int64_t t = t0; t < t1; t += 2) {
      const bool two_tiles = t + 1 < t1;
      const uint8_t *b0 = data + t * tile_bytes, *b1 = b0 + tile_bytes;
      AMX_ZERO(TILE_C00);
      AMX_ZERO(TILE_C01);
      AMX_ZERO(TILE_C10);
      AMX_ZERO(TILE_C11);
      for (int64_t k = 0; k < w->cols; k += CPU_Q8_AMX_K) {
        AMX_LOAD(TILE_A0, a0 + k, in->ld);
        AMX_LOAD(TILE_B0, b0 + k * Q8_TILE_ROWS, 64);  // groups k / 4 .. + 16
        AMX_DPBSUD(TILE_C00, TILE_A0, TILE_B0);
        if (two_tiles) {
          AMX_LOAD(TILE_B1, b1 + k * Q8_TILE_ROWS, 64);
          AMX_DPBSUD(TILE_C01, TILE_A0, TILE_B1);
        }
        if (two_blocks) {
          AMX_LOAD(TILE_A1, a1 + k, in->ld);
          AMX_DPBSUD(TILE_C10, TILE_A1, TILE_B0);
          if (two_tiles) AMX_DPBSUD(TILE_C11, TILE_A1, TILE_B1);
        }
      }
      const int64_t row0 = t * Q8_TILE_ROWS, row1 = row0 + Q8_TILE_ROWS;
      CPU_AMX_STORE(TILE_C00, m0, row0);
      if (two_tiles) CPU_AMX_STORE(TILE_C01, m0, row1);
      if (two_blocks) CPU_AMX_STORE(TILE_C10, m0 + CPU_Q8_AMX_ROWS, row0);
      if (two_blocks && two_tiles) CPU_AMX_STORE(TILE_C11, m0 + CPU_Q8_AMX_ROWS, row1);
    }
  }
  _tile_release();
}
