// cpu_q8avx2.c: y += x W^T for WEIGHT_Q8 weights (layout in model/q8.h) with AVX2, on CPUs
// without AVX-512 VNNI: cpu_q8.c's twin, driven by cpu_q8_linear (the same input rows, quantized
// here to the same int8 values and scales). A 64-byte group (16 weight rows by 4 columns) is two
// 32-byte halves of 8 rows; one xor turns the stored q + 128 into q, and cpu_avx2_dot4 multiplies
// a half by 4 input values broadcast to every lane into one int32 sum per weight row. The sums
// are exact, the same integers as cpu_q8.c's after its offset is taken out, and the epilogue is
// the same one fma onto (y + bias): the results are bit for bit cpu_q8.c's. Register blocks: 4
// tiles by 1 input row, or 1 tile by up to 4. Compiled for AVX2 and FMA with target attributes:
// cpu_linear calls it only when the CPU has them. Reads the weights, writes only y and its
// scratch.
#include <float.h>
#include <immintrin.h>
#include <string.h>

#include "backend/cpu/cpu_avx2.h"
#include "backend/cpu/cpu_internal.h"
#include "common/check.h"
#include "model/q8.h"

#define CPU_Q8AVX2_MAX_MT 4   // input rows of a register block
#define CPU_Q8AVX2_CHUNK 256  // input rows per pass over a piece's weight tiles (L2-sized)
#define CPU_Q8AVX2_HALF 8     // weight rows of a 32-byte half group

CPU_AVX2_TARGET void cpu_q8avx2_quantize_row(const float *x, int64_t cols, int64_t ld, int8_t *q,
                                             float *scale, int32_t *corr) {
  const float a = cpu_avx2_max_abs(x, cols);
  // A row below the smallest normal float is taken as zeros (127 / a would overflow).
  const float inv = a >= FLT_MIN ? (float)Q8_MAX / a : 0.0f;
  *corr = Q8_ZERO * cpu_avx2_quantize(x, cols, inv, q);
  memset(q + cols, 0, (size_t)(ld - cols));
  *scale = a / (float)Q8_MAX;
}

// y[m][row0 + lane] = dot[lane] * (wscale[lane] * scale[m]) + (y's value with in->accumulate,
// else 0) + in->bias[row0 + lane] for the first num_valid of 8 lanes: cpu_q8.c's epilogue.
CPU_AVX2_INLINE void cpu_q8avx2_store(__m256i dot, const float *wscale, const CpuQ8Input *in, int m,
                                      float *y, int64_t ldy, int64_t row0, int64_t num_valid) {
  if (num_valid <= 0) return;
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(num_valid < 8 ? (int)num_valid : 8),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  float *yr = y + (int64_t)m * ldy + row0;
  const __m256 s = _mm256_mul_ps(_mm256_loadu_ps(wscale), _mm256_set1_ps(in->scale[m]));
  __m256 base = in->accumulate ? _mm256_maskload_ps(yr, mask) : _mm256_setzero_ps();
  if (in->bias) base = _mm256_add_ps(base, _mm256_maskload_ps(in->bias + row0, mask));
  _mm256_maskstore_ps(yr, mask, _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), s, base));
}

// y[m0 + i][row0 + 16 z + r] for z < RZ tiles from w, i < MT input rows; only the first
// num_valid of the RZ * 16 rows are written.  w: RZ tiles of [groups, 16, 4], wscale: [RZ * 16]
CPU_AVX2_INLINE void cpu_q8avx2_block_rz_mt(const uint8_t *w, int64_t groups, const float *wscale,
                                            const CpuQ8Input *in, int m0, float *y, int64_t ldy,
                                            int64_t row0, int64_t num_valid, const int RZ,
                                            const int MT) {
  __m256i acc[CPU_Q8AVX2_RZ_ONE_ROW][2][CPU_Q8AVX2_MAX_MT];  // [tile][half][input row]
#pragma GCC unroll 4
  for (int z = 0; z < RZ; z++)
#pragma GCC unroll 4
    for (int i = 0; i < MT; i++) acc[z][0][i] = acc[z][1][i] = _mm256_setzero_si256();
  const int8_t *xq = in->q + (int64_t)m0 * in->ld;
  const __m256i zero = _mm256_set1_epi8((char)Q8_ZERO);
  for (int64_t g = 0; g < groups; g++) {
    __m256i wv[CPU_Q8AVX2_RZ_ONE_ROW][2];
#pragma GCC unroll 4
    for (int z = 0; z < RZ; z++)
#pragma GCC unroll 2
      for (int h = 0; h < 2; h++)
        wv[z][h] = _mm256_xor_si256(
            zero, _mm256_loadu_si256((const __m256i *)(w + (z * groups + g) * 64 + h * 32)));
#pragma GCC unroll 4
    for (int i = 0; i < MT; i++) {
      int32_t four;
      memcpy(&four, xq + i * in->ld + g * Q8_GROUP_COLS, sizeof four);
      const __m256i xb = _mm256_set1_epi32(four);
#pragma GCC unroll 4
      for (int z = 0; z < RZ; z++)
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) acc[z][h][i] = cpu_avx2_dot4(acc[z][h][i], wv[z][h], xb);
    }
  }
#pragma GCC unroll 4
  for (int z = 0; z < RZ; z++)
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
      for (int i = 0; i < MT; i++) {
        const int64_t first = z * Q8_TILE_ROWS + h * CPU_Q8AVX2_HALF;
        cpu_q8avx2_store(acc[z][h][i], wscale + first, in, m0 + i, y, ldy, row0 + first,
                         num_valid - first);
      }
}

#define CPU_Q8AVX2_CASE(rz, mt)                                                         \
  case (rz)*16 + (mt):                                                                  \
    cpu_q8avx2_block_rz_mt(w, groups, wscale, in, m0, y, ldy, row0, num_valid, rz, mt); \
    return;

CPU_AVX2_TARGET void cpu_q8avx2_block(const uint8_t *w, int64_t groups, const float *wscale,
                                      const CpuQ8Input *in, int m0, float *y, int64_t ldy,
                                      int64_t row0, int64_t num_valid, int rz, int mt) {
  switch (rz * 16 + mt) {
    CPU_Q8AVX2_CASE(1, 1)
    CPU_Q8AVX2_CASE(1, 2)
    CPU_Q8AVX2_CASE(1, 3)
    CPU_Q8AVX2_CASE(1, 4)
    CPU_Q8AVX2_CASE(2, 1)
    CPU_Q8AVX2_CASE(4, 1)
  }
  CHECK(!"unsupported q8 register block");
}
