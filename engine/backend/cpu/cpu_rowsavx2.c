// cpu_rowsavx2.c: y += x W^T for WEIGHT_BF16 and WEIGHT_MXFP4 weights with AVX2, for 1 ..
// CPU_ROWSAVX2_MAX_ROWS input rows (decode), on CPUs without AVX-512: each weight row is read
// where it lies, two at a time against every input row. BF16: 8 values widened to float per
// load, multiplied with the float inputs as they are (no rounding). MXFP4: the inputs quantized
// to int8 per 32-column block as cpu_mx8.c quantizes them (max |x| of the block -> 127, nearest
// even) and laid out by cpu_mxfp4_split_row, here for both row kernels (each block's 16 even
// columns, then its 16 odd ones); 32 bytes of codes (two blocks) at a time, the low nibbles (even
// columns) and the high ones (odd columns) looked up as signed bytes 2 * e2m1 by vpshufb and
// multiplied by cpu_avx2_dot4, so that each int32 lane holds 8 exact products of one block; the
// block's half-scale 2^(scale - 128) times the input's block scale multiplies the lane into a float
// lane sum. A row's 8 float lanes are added at its end. Compiled for AVX2 and FMA with target
// attributes: cpu_linear calls it only when the CPU has them. Reads the weights, writes only y
// and its scratch.
#include <float.h>
#include <immintrin.h>
#include <string.h>

#include "backend/cpu/cpu_avx2.h"
#include "backend/cpu/cpu_internal.h"
#include "common/check.h"
#include "model/mxfp4.h"
#include "model/q8.h"

#define CPU_ROWSAVX2_GROUP 16  // weight rows a piece of work holds at least
#define CPU_ROWSAVX2_PIECES_PER_THREAD 8
// Bytes of MXFP4 rows read ahead into L1 and L2 (as cpu_mx8row.c; BF16 reads the next pair's
// columns): from memory, a thread's short row streams alone keep too few reads in flight
// (gpt-oss-tiny at one token: attention projections 80 -> 48 us, MoE 195 -> 166 us a layer).
#define CPU_ROWSAVX2_PREFETCH_L1 1024
#define CPU_ROWSAVX2_PREFETCH_L2 4096

// 2 * e2m1 value per code, signed, repeated in each 128-bit lane for vpshufb.
static const int8_t CPU_ROWSAVX2_CODES[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                              0, -1, -2, -3, -4, -6, -8, -12};

// One input row for MXFP4, padded with zeros to an even number of blocks: per block its 16 even
// and 16 odd columns as int8 (each array [blocks * 16]), and per int32 lane of a 2-block load
// (4 lanes a block) the block's input scale (scale: [blocks * 4]).
typedef struct {
  const int8_t *even, *odd;
  const float *scale;
} CpuRowsAvx2Input;

// cpu_mxfp4_split_row (cpu_internal.h): each 32-column block b quantized as cpu_mx8.c
// quantizes it (max |x| of the block -> 127, nearest even; a block below the smallest normal
// float as zeros), its 16 even columns at even + 16 b, its 16 odd ones at odd + 16 b, and its
// scale max |x| / 127 in scale[4 b .. 4 b + 3], once per int32 lane of the block. Blocks from
// cols / 32 up to padded_blocks are zeros.
// x: [cols], even, odd: [padded_blocks * 16], scale: [padded_blocks * 4]
CPU_AVX2_TARGET void cpu_mxfp4_split_row(const float *x, int64_t cols, int64_t padded_blocks,
                                         int8_t *even, int8_t *odd, float *scale) {
  memset(even, 0, (size_t)padded_blocks * 16);
  memset(odd, 0, (size_t)padded_blocks * 16);
  memset(scale, 0, (size_t)padded_blocks * 4 * sizeof *scale);
  for (int64_t b = 0; b < cols / MXFP4_BLOCK_SIZE; b++) {
    const float *xb = x + b * MXFP4_BLOCK_SIZE;
    const float m = cpu_avx2_max_abs(xb, MXFP4_BLOCK_SIZE);
    int8_t q[MXFP4_BLOCK_SIZE];
    cpu_avx2_quantize(xb, MXFP4_BLOCK_SIZE, m >= FLT_MIN ? (float)Q8_MAX / m : 0.0f, q);
    for (int j = 0; j < 16; j++) {
      even[b * 16 + j] = q[2 * j];
      odd[b * 16 + j] = q[2 * j + 1];
    }
    for (int lane = 0; lane < 4; lane++) scale[b * 4 + lane] = m / (float)Q8_MAX;
  }
}

// h = 2^(s - 128) per lane (mxfp4_value(1, s), half the block's scale as the codes are doubled):
// the float with exponent field s - 1, except the two subnormal ones.
CPU_AVX2_INLINE __m256 cpu_rowsavx2_half_scale(__m256i s) {
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(s, _mm256_set1_epi32(1)), 23);
  const __m256i h = _mm256_blendv_epi8(normal, _mm256_set1_epi32(0x00400000),
                                       _mm256_cmpeq_epi32(s, _mm256_set1_epi32(1)));
  return _mm256_castsi256_ps(_mm256_blendv_epi8(h, _mm256_set1_epi32(0x00200000),
                                                _mm256_cmpeq_epi32(s, _mm256_setzero_si256())));
}

// y[i][r] += input row i . weight row r for the MXFP4 rows r0, r0 + 1 (the second may repeat
// the first: then it is not written) and i < MT.
CPU_AVX2_INLINE void cpu_rowsavx2_mxfp4_pair(const WeightMatrix *w, int64_t r0, bool second,
                                             const CpuRowsAvx2Input *in, float *y, const int MT) {
  const int64_t blocks = w->cols / MXFP4_BLOCK_SIZE;
  const __m256i table =
      _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)CPU_ROWSAVX2_CODES));
  const __m256i low = _mm256_set1_epi8(0x0f);
  const uint8_t *codes[2], *scales[2];
  for (int z = 0; z < 2; z++) {
    const int64_t r = second ? r0 + z : r0;
    codes[z] = (const uint8_t *)w->data + r * blocks * MXFP4_BLOCK_BYTES;
    scales[z] = (const uint8_t *)w->scales + r * blocks;
  }
  __m256 acc[2][CPU_ROWSAVX2_MAX_ROWS];
#pragma GCC unroll 4
  for (int i = 0; i < MT; i++) acc[0][i] = acc[1][i] = _mm256_setzero_ps();
  __m256 h8[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t b = 0; b < blocks; b += 2) {
    // Lanes 0 .. 3 take block b's half-scale, 4 .. 7 block b + 1's.
    const int pair = (int)(b % 8) / 2;
    const __m256i which = _mm256_setr_epi32(2 * pair, 2 * pair, 2 * pair, 2 * pair, 2 * pair + 1,
                                            2 * pair + 1, 2 * pair + 1, 2 * pair + 1);
#pragma GCC unroll 2
    for (int z = 0; z < 2; z++) {
      if (b % 8 == 0) {  // the half-scales of the next 8 blocks
        uint8_t s[8] = {0};
        memcpy(s, scales[z] + b, (size_t)(blocks - b < 8 ? blocks - b : 8));
        h8[z] = cpu_rowsavx2_half_scale(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)s)));
      }
      const __m256 h = _mm256_permutevar8x32_ps(h8[z], which);
      const uintptr_t at = (uintptr_t)(codes[z] + b * MXFP4_BLOCK_BYTES);  // may end past w
      _mm_prefetch((const char *)(at + CPU_ROWSAVX2_PREFETCH_L1), _MM_HINT_T0);
      _mm_prefetch((const char *)(at + CPU_ROWSAVX2_PREFETCH_L2), _MM_HINT_T1);
      __m256i v;
      if (blocks - b >= 2) {
        v = _mm256_loadu_si256((const __m256i *)(codes[z] + b * MXFP4_BLOCK_BYTES));
      } else {  // the last of an odd number of blocks; its neighbour's codes are zeros
        v = _mm256_castsi128_si256(
            _mm_loadu_si128((const __m128i *)(codes[z] + b * MXFP4_BLOCK_BYTES)));
        v = _mm256_inserti128_si256(v, _mm_setzero_si128(), 1);
      }
      const __m256i we = _mm256_shuffle_epi8(table, _mm256_and_si256(v, low));
      const __m256i wo = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), low));
#pragma GCC unroll 4
      for (int i = 0; i < MT; i++) {
        __m256i d = cpu_avx2_dot4(_mm256_setzero_si256(), we,
                                  _mm256_loadu_si256((const __m256i *)(in[i].even + b * 16)));
        d = cpu_avx2_dot4(d, wo, _mm256_loadu_si256((const __m256i *)(in[i].odd + b * 16)));
        acc[z][i] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(d),
                            _mm256_mul_ps(h, _mm256_loadu_ps(in[i].scale + b * 4)), acc[z][i]);
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < MT; i++) {
    y[i * w->rows + r0] += cpu_avx2_sum8(acc[0][i]);
    if (second) y[i * w->rows + r0 + 1] += cpu_avx2_sum8(acc[1][i]);
  }
}

// The same for BF16 rows and float inputs x (MT rows of w->cols), reading ahead the same columns of
// the next pair of rows (cols * 2 bf16 on).
CPU_AVX2_INLINE void cpu_rowsavx2_bf16_pair(const WeightMatrix *w, int64_t r0, bool second,
                                            const float *x, float *y, const int MT) {
  const int64_t cols = w->cols;
  const uint16_t *wr[2] = {(const uint16_t *)w->data + r0 * cols,
                           (const uint16_t *)w->data + (second ? r0 + 1 : r0) * cols};
  __m256 acc[2][CPU_ROWSAVX2_MAX_ROWS];
#pragma GCC unroll 4
  for (int i = 0; i < MT; i++) acc[0][i] = acc[1][i] = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
#pragma GCC unroll 2
    for (int z = 0; z < 2; z++) {
      _mm_prefetch((const char *)((uintptr_t)(wr[z] + c) + (uintptr_t)cols * 4), _MM_HINT_T0);
      const __m256 wv = _mm256_castsi256_ps(_mm256_slli_epi32(
          _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(wr[z] + c))), 16));
#pragma GCC unroll 4
      for (int i = 0; i < MT; i++)
        acc[z][i] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + i * cols + c), acc[z][i]);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < MT; i++) {
    float sums[2] = {cpu_avx2_sum8(acc[0][i]), cpu_avx2_sum8(acc[1][i])};
    for (int64_t k = c; k < cols; k++)  // the last cols % 8 columns
      for (int z = 0; z < 2; z++) {
        const uint32_t bits = (uint32_t)wr[z][k] << 16;
        float v;
        memcpy(&v, &bits, sizeof v);
        sums[z] += v * x[i * cols + k];
      }
    y[i * w->rows + r0] += sums[0];
    if (second) y[i * w->rows + r0 + 1] += sums[1];
  }
}

typedef struct {
  const WeightMatrix *w;
  const float *x;              // [num_rows, w->cols]
  const CpuRowsAvx2Input *in;  // MXFP4: [num_rows]
  int num_rows;
  float *y;  // [num_rows, w->rows]
} CpuRowsAvx2Ctx;

#define CPU_ROWSAVX2_CASE(mt)                                               \
  case mt:                                                                  \
    for (int64_t r = begin * CPU_ROWSAVX2_GROUP; r < end_row; r += 2) {     \
      if (c->in)                                                            \
        cpu_rowsavx2_mxfp4_pair(c->w, r, r + 1 < end_row, c->in, c->y, mt); \
      else                                                                  \
        cpu_rowsavx2_bf16_pair(c->w, r, r + 1 < end_row, c->x, c->y, mt);   \
    }                                                                       \
    return;

// Groups begin .. end - 1 of 16 weight rows.
CPU_AVX2_TARGET static void cpu_rowsavx2_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuRowsAvx2Ctx *c = ctx;
  const int64_t end_row =
      end * CPU_ROWSAVX2_GROUP < c->w->rows ? end * CPU_ROWSAVX2_GROUP : c->w->rows;
  switch (c->num_rows) {
    CPU_ROWSAVX2_CASE(1)
    CPU_ROWSAVX2_CASE(2)
    CPU_ROWSAVX2_CASE(3)
    CPU_ROWSAVX2_CASE(4)
  }
  CHECK(!"unsupported number of input rows");
}

void cpu_rowsavx2_linear(Backend *be, const WeightMatrix *w, const float *x, int num_rows, float *y,
                         bool serial) {
  CHECK(w->format == WEIGHT_BF16 || (w->format == WEIGHT_MXFP4 && w->cols % MXFP4_BLOCK_SIZE == 0));
  CHECK(num_rows >= 1 && num_rows <= CPU_ROWSAVX2_MAX_ROWS);
  CpuRowsAvx2Input in[CPU_ROWSAVX2_MAX_ROWS];
  CpuRowsAvx2Ctx c = {w, x, NULL, num_rows, y};
  if (w->format == WEIGHT_MXFP4) {
    const int64_t blocks = (w->cols / MXFP4_BLOCK_SIZE + 1) / 2 * 2;
    const size_t row_bytes = (size_t)blocks * 48;  // even, odd, scale
    char *buf = cpu_scratch(be, CPU_SCRATCH_INPUT, (size_t)num_rows * row_bytes);
    for (int i = 0; i < num_rows; i++) {
      char *p = buf + (size_t)i * row_bytes;
      int8_t *even = (int8_t *)p, *odd = (int8_t *)(p + blocks * 16);
      float *scale = (float *)(p + blocks * 32);
      cpu_mxfp4_split_row(x + i * w->cols, w->cols, blocks, even, odd, scale);
      in[i] = (CpuRowsAvx2Input){even, odd, scale};
    }
    c.in = in;
  }
  const int64_t groups = (w->rows + CPU_ROWSAVX2_GROUP - 1) / CPU_ROWSAVX2_GROUP;
  const int64_t pieces = (int64_t)cpu_state(be)->num_threads * CPU_ROWSAVX2_PIECES_PER_THREAD;
  cpu_parallel(be, groups, serial ? groups : (groups + pieces - 1) / pieces, cpu_rowsavx2_task, &c);
}
