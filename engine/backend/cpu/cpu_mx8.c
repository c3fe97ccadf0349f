// cpu_mx8.c: y += x W^T for WEIGHT_MXFP4 weights with AVX-512 VNNI and 8-bit inputs (the
// experts' products on CPUs with VNNI; where the CPU also has AMX-BF16, only those of fewer than
// CPU_MXFP4_AMX_MIN_ROWS input rows; up to CPU_MX8ROW_MAX_ROWS rows go to cpu_mx8row.c, which
// reads the weight rows in place). Each input row is quantized to int8 once per call, one
// scale per 32-column block as the weights have (max |x| of the block -> 127, nearest even), so
// one large activation costs precision in its block only. Each tile of 16 weight rows is decoded
// once per call into the thread's scratch as vpdpbusd operands: per 32-column MXFP4 block, 8 groups
// of 16 rows by 4 columns, byte u = 2 * (e2m1 value) + 12 (0 .. 24, exact), and the block's 16
// scales as floats 2^(scale - 128). The kernel multiplies a group by 4 int8 inputs broadcast to
// every lane into one int32 sum per weight row; the +12 offset is taken out exactly by starting
// each block's sums at -12 * (the block's input sum). Each block's integer dot product is then
// exact, and a row's result is
//   y += ((S_0 * (h_0 sx_0) + S_1 * (h_1 sx_1)) + ...) + S_last * (h_last sx_last)   (fma)
// with S_b the block's integer dot product, h_b its half-scale and sx_b the input's block scale
// (h_b is a power of two: h_b sx_b is exact unless it leaves the normal range): the same float
// operations for a given (input row, weight row) whatever the number of rows above
// CPU_MX8ROW_MAX_ROWS, the register block or the thread. A token's result can still depend on
// its batch in the last bits: with at most CPU_MX8ROW_MAX_ROWS rows cpu_mx8row.c adds the same
// products in another order, and on a CPU with AMX-BF16 an expert with
// CPU_MXFP4_AMX_MIN_ROWS tokens or more goes to AMX-BF16 on bf16 inputs. Register blocks: up to
// 4 tiles by 1 input row, or 2 tiles by up to 4 rows. Threads take pieces of the tiles as they
// come free. Compiled for AVX-512 with target attributes: cpu_linear calls it only when the CPU
// has VNNI. Reads the weights, writes only y and its scratch.
#include <immintrin.h>
#include <string.h>

#include "backend/cpu/cpu_avx512.h"
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_mx8.h"
#include "common/check.h"
#include "model/mxfp4.h"

#define CPU_MX8_ROWS 16                         // weight rows of a tile: the lanes of a sum
#define CPU_MX8_GROUPS 8                        // 4-column groups per 32-column block
#define CPU_MX8_GROUP_BYTES 64                  // one group of a tile: 16 rows by 4 columns
#define CPU_MX8_MAX_MT 4                        // input rows of a register block
#define CPU_MX8_CHUNK 256                       // input rows per pass over a piece's tiles
#define CPU_MX8_PIECES_PER_THREAD 8             // pieces of the tiles handed out per thread
#define CPU_MX8_PIECE_BYTES ((size_t)96 << 10)  // decoded tiles of one piece (beside L2's x)

// A tile's block, decoded: codes [8][16][4] bytes, then 16 float half-scales.
#define CPU_MX8_BLOCK_BYTES (CPU_MX8_GROUPS * CPU_MX8_GROUP_BYTES + CPU_MX8_ROWS * 4)

// The input rows quantized: x[m][c] ~= q[m][c] * scale[m][c / 32].
typedef struct {
  const int8_t *q;       // [num_rows, cols]
  const float *scale;    // [num_rows, blocks]
  const int32_t *start;  // [num_rows, blocks] -12 * the sum of each block's q
  int64_t cols, blocks;
} CpuMx8Input;

// Quantizes one input row block by block (cpu_mx8_quantize_block) with each block's start.
// x: [cols], q: [cols], scale, start: [cols / 32]
CPU_MX8_TARGET static void cpu_mx8_quantize_row(const float *x, int64_t cols, int8_t *q,
                                                float *scale, int32_t *start) {
  for (int64_t b = 0; b < cols / MXFP4_BLOCK_SIZE; b++) {
    __m512i qlo, qhi;
    scale[b] = cpu_mx8_quantize_block(x + b * 32, &qlo, &qhi);
    _mm512_mask_cvtsepi32_storeu_epi8(q + b * 32, 0xffff, qlo);
    _mm512_mask_cvtsepi32_storeu_epi8(q + b * 32 + 16, 0xffff, qhi);
    start[b] = -CPU_MX8_OFFSET * _mm512_reduce_add_epi32(_mm512_add_epi32(qlo, qhi));
  }
}

// One group of 16 rows by 4 columns from t (lane i: row i's code bytes 4d .. 4d + 3; half 0
// takes bytes 0 and 1, half 1 bytes 2 and 3) as vpdpbusd bytes: each code byte spread to one
// nibble a byte (even bytes keep the low nibble, odd bytes take the high one by a 16-bit shift)
// and looked up in CPU_MX8_CODES.
CPU_MX8_INLINE __m512i cpu_mx8_group(__m512i t, int half, __m512i table) {
  const __m512i dup = half ? _mm512_broadcast_i32x4(_mm_setr_epi8(2, 2, 3, 3, 6, 6, 7, 7, 10, 10,
                                                                  11, 11, 14, 14, 15, 15))
                           : _mm512_broadcast_i32x4(
                                 _mm_setr_epi8(0, 0, 1, 1, 4, 4, 5, 5, 8, 8, 9, 9, 12, 12, 13, 13));
  const __m512i two = _mm512_shuffle_epi8(t, dup);
  const __m512i nibbles = _mm512_and_si512(
      _mm512_mask_blend_epi8(0xaaaaaaaaaaaaaaaaull, two, _mm512_srli_epi16(two, 4)),
      _mm512_set1_epi8(0x0f));
  return _mm512_shuffle_epi8(table, nibbles);
}

// Decodes weight rows row0 .. row0 + 15 into one tile, four blocks at a time: 64 bytes of each
// row transposed as 16 dwords (cpu_transpose16), each dword two groups. Rows past the matrix
// repeat its last row with scale 0 (their outputs are never written).
// tile: [blocks, CPU_MX8_BLOCK_BYTES]
CPU_MX8_TARGET static void cpu_mx8_decode_tile(const WeightMatrix *w, int64_t row0, uint8_t *tile) {
  const int64_t blocks = w->cols / MXFP4_BLOCK_SIZE;
  const int valid = w->rows - row0 < CPU_MX8_ROWS ? (int)(w->rows - row0) : CPU_MX8_ROWS;
  const uint8_t *codes = (const uint8_t *)w->data + row0 * blocks * MXFP4_BLOCK_BYTES;
  const uint8_t *scales = (const uint8_t *)w->scales + row0 * blocks;
  const __m512i table = cpu_mx8_code_table();
  const __mmask16 real = (__mmask16)((1u << valid) - 1);
  const uint8_t *row[CPU_MX8_ROWS];
  for (int i = 0; i < CPU_MX8_ROWS; i++) row[i] = codes + (i < valid ? i : valid - 1) * blocks * 16;
  for (int64_t b0 = 0; b0 < blocks; b0 += 16) {  // half-scales, 16 blocks of 16 rows at a time
    const int nb = blocks - b0 < 16 ? (int)(blocks - b0) : 16;
    __m512 r[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
      r[i] = _mm512_castsi512_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(
          (__mmask16)((1u << nb) - 1), scales + (i < valid ? i : valid - 1) * blocks + b0)));
    cpu_transpose16(r);  // r[j] lane i: row i's scale byte of block b0 + j
    for (int j = 0; j < nb; j++)
      _mm512_storeu_ps(tile + (b0 + j) * CPU_MX8_BLOCK_BYTES + CPU_MX8_GROUPS * CPU_MX8_GROUP_BYTES,
                       _mm512_maskz_mov_ps(real, cpu_mx8_half_scale(_mm512_castps_si512(r[j]))));
  }
  for (int64_t b0 = 0; b0 < blocks; b0 += 4) {
    const int nb = blocks - b0 < 4 ? (int)(blocks - b0) : 4;
    const __mmask64 load = nb == 4 ? ~(__mmask64)0 : ((__mmask64)1 << (nb * 16)) - 1;
    __m512 r[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
      r[i] = _mm512_castsi512_ps(_mm512_maskz_loadu_epi8(load, row[i] + b0 * MXFP4_BLOCK_BYTES));
    cpu_transpose16(r);  // r[d] lane i: row i's code bytes 4d .. 4d + 3
    uint8_t *dst = tile + b0 * CPU_MX8_BLOCK_BYTES;
#pragma GCC unroll 16
    for (int d = 0; d < 16; d++) {
      if (d / 4 >= nb) break;
      uint8_t *g = dst + (d / 4) * CPU_MX8_BLOCK_BYTES + (d % 4) * 2 * CPU_MX8_GROUP_BYTES;
      _mm512_storeu_si512(g, cpu_mx8_group(_mm512_castps_si512(r[d]), 0, table));
      _mm512_storeu_si512(g + CPU_MX8_GROUP_BYTES,
                          cpu_mx8_group(_mm512_castps_si512(r[d]), 1, table));
    }
  }
}

// y[m0 + i][row0 + 16 z + lane] += the products of input row m0 + i with the RZ decoded tiles
// (tile_bytes apart) for i < MT; only the first num_valid of the RZ * 16 rows are written.
// y: [*, ldy]
CPU_MX8_INLINE void cpu_mx8_block(const uint8_t *tiles, int64_t tile_bytes, const CpuMx8Input *in,
                                  int m0, float *y, int64_t ldy, int64_t row0, int64_t num_valid,
                                  const int RZ, const int MT) {
  __m512 f[4][CPU_MX8_MAX_MT];
#pragma GCC unroll 4
  for (int z = 0; z < RZ; z++)
#pragma GCC unroll 4
    for (int i = 0; i < MT; i++) f[z][i] = _mm512_setzero_ps();
  const int8_t *xq = in->q + (int64_t)m0 * in->cols;
  const int32_t *start = in->start + (int64_t)m0 * in->blocks;
  const float *xs = in->scale + (int64_t)m0 * in->blocks;
  for (int64_t b = 0; b < in->blocks; b++) {
    const uint8_t *blk = tiles + b * CPU_MX8_BLOCK_BYTES;
    __m512i acc[4][CPU_MX8_MAX_MT];
#pragma GCC unroll 4
    for (int i = 0; i < MT; i++) {
      const __m512i s = _mm512_set1_epi32(start[i * in->blocks + b]);
#pragma GCC unroll 4
      for (int z = 0; z < RZ; z++) acc[z][i] = s;
    }
#pragma GCC unroll 8
    for (int g = 0; g < CPU_MX8_GROUPS; g++) {
      __m512i wv[4];
#pragma GCC unroll 4
      for (int z = 0; z < RZ; z++)
        wv[z] = _mm512_loadu_si512(blk + z * tile_bytes + g * CPU_MX8_GROUP_BYTES);
#pragma GCC unroll 4
      for (int i = 0; i < MT; i++) {
        int32_t four;
        memcpy(&four, xq + i * in->cols + b * MXFP4_BLOCK_SIZE + g * 4, sizeof four);
        const __m512i xb = _mm512_set1_epi32(four);
#pragma GCC unroll 4
        for (int z = 0; z < RZ; z++) acc[z][i] = _mm512_dpbusd_epi32(acc[z][i], wv[z], xb);
      }
    }
#pragma GCC unroll 4
    for (int z = 0; z < RZ; z++) {
      const __m512 h = _mm512_loadu_ps(
          (const float *)(blk + z * tile_bytes + CPU_MX8_GROUPS * CPU_MX8_GROUP_BYTES));
#pragma GCC unroll 4
      for (int i = 0; i < MT; i++)
        f[z][i] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[z][i]),
                            _mm512_mul_ps(h, _mm512_set1_ps(xs[i * in->blocks + b])), f[z][i]);
    }
  }
#pragma GCC unroll 4
  for (int z = 0; z < RZ; z++) {
    const int64_t left = num_valid - z * CPU_MX8_ROWS;
    if (left <= 0) break;
    const __mmask16 mask = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
#pragma GCC unroll 4
    for (int i = 0; i < MT; i++) {
      float *yr = y + (int64_t)(m0 + i) * ldy + row0 + z * CPU_MX8_ROWS;
      _mm512_mask_storeu_ps(yr, mask, _mm512_add_ps(f[z][i], _mm512_maskz_loadu_ps(mask, yr)));
    }
  }
}

#define CPU_MX8_CASE(rz, mt)                                                   \
  case (rz)*16 + (mt):                                                         \
    cpu_mx8_block(tiles, tile_bytes, in, m0, y, ldy, row0, num_valid, rz, mt); \
    return;

// cpu_mx8_block with run-time rz (1, 2 or 4; 4 only with mt 1) and mt (1 .. 4).
CPU_MX8_TARGET static void cpu_mx8_dispatch(const uint8_t *tiles, int64_t tile_bytes,
                                            const CpuMx8Input *in, int m0, float *y, int64_t ldy,
                                            int64_t row0, int64_t num_valid, int rz, int mt) {
  switch (rz * 16 + mt) {
    CPU_MX8_CASE(1, 1)
    CPU_MX8_CASE(1, 2)
    CPU_MX8_CASE(1, 3)
    CPU_MX8_CASE(1, 4)
    CPU_MX8_CASE(2, 1) CPU_MX8_CASE(2, 2) CPU_MX8_CASE(2, 3) CPU_MX8_CASE(2, 4) CPU_MX8_CASE(4, 1)
  }
  CHECK(!"unsupported mx8 register block");
}

typedef struct {
  const WeightMatrix *w;
  const float *x;  // [num_rows, w->cols]
  int num_rows;
  float *y;  // [num_rows, w->rows]
  CpuMx8Input in;
  int8_t *q;            // [num_rows, cols] quantized x
  float *scale;         // [num_rows, blocks]
  int32_t *start;       // [num_rows, blocks]
  uint8_t *tiles;       // [num_threads, piece_tiles, tile_bytes] decoded tiles
  int64_t piece_tiles;  // tiles per piece
  int64_t tile_bytes;   // blocks * CPU_MX8_BLOCK_BYTES
} CpuMx8Ctx;

static void cpu_mx8_quantize_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuMx8Ctx *c = ctx;
  const int64_t cols = c->w->cols, blocks = c->in.blocks;
  for (int64_t m = begin; m < end; m++)
    cpu_mx8_quantize_row(c->x + m * cols, cols, c->q + m * cols, c->scale + m * blocks,
                         c->start + m * blocks);
}

// Pieces begin .. end - 1 of piece_tiles tiles: decoded into the thread's scratch once, then
// multiplied with every input row, CPU_MX8_CHUNK rows at a time.
static void cpu_mx8_tiles_task(void *ctx, int64_t begin, int64_t end, int tid) {
  const CpuMx8Ctx *c = ctx;
  const WeightMatrix *w = c->w;
  const int64_t num_tiles = (w->rows + CPU_MX8_ROWS - 1) / CPU_MX8_ROWS;
  uint8_t *tiles = c->tiles + (size_t)tid * (size_t)(c->piece_tiles * c->tile_bytes);
  const int rz_max = c->num_rows == 1 ? 4 : 2;
  for (int64_t p = begin; p < end; p++) {
    const int64_t t0 = p * c->piece_tiles;
    const int64_t t1 = num_tiles - t0 < c->piece_tiles ? num_tiles : t0 + c->piece_tiles;
    for (int64_t t = t0; t < t1; t++)
      cpu_mx8_decode_tile(w, t * CPU_MX8_ROWS, tiles + (t - t0) * c->tile_bytes);
    for (int c0 = 0; c0 < c->num_rows; c0 += CPU_MX8_CHUNK) {
      const int c1 = c->num_rows - c0 < CPU_MX8_CHUNK ? c->num_rows : c0 + CPU_MX8_CHUNK;
      for (int64_t t = t0; t < t1;) {
        const int rz = t1 - t >= rz_max ? rz_max : t1 - t >= 2 ? 2 : 1;
        const int64_t row0 = t * CPU_MX8_ROWS;
        for (int m0 = c0; m0 < c1; m0 += CPU_MX8_MAX_MT) {
          const int mt = c1 - m0 < CPU_MX8_MAX_MT ? c1 - m0 : CPU_MX8_MAX_MT;
          cpu_mx8_dispatch(tiles + (t - t0) * c->tile_bytes, c->tile_bytes, &c->in, m0, c->y,
                           w->rows, row0, w->rows - row0, rz, mt);
        }
        t += rz;
      }
    }
  }
}

void cpu_mx8_linear(Backend *be, const WeightMatrix *w, const float *x, int num_rows, float *y,
                    bool serial) {
  CHECK(w->format == WEIGHT_MXFP4 && w->cols % MXFP4_BLOCK_SIZE == 0);
  if (num_rows <= CPU_MX8ROW_MAX_ROWS) {
    const CpuMx8RowProduct p = {w, x, num_rows, y};
    cpu_mx8row_linear(be, &p, 1, serial);
    return;
  }
  const int64_t cols = w->cols, blocks = cols / MXFP4_BLOCK_SIZE;
  const int64_t num_tiles = (w->rows + CPU_MX8_ROWS - 1) / CPU_MX8_ROWS;
  const int num_threads = cpu_state(be)->num_threads;
  CpuMx8Ctx c = {.w = w, .x = x, .num_rows = num_rows, .y = y};
  c.tile_bytes = blocks * CPU_MX8_BLOCK_BYTES;
  // Pieces of tiles go to whichever thread is free; a piece's decoded tiles stay in its cache.
  int64_t max_piece = (int64_t)(CPU_MX8_PIECE_BYTES / (size_t)c.tile_bytes);
  if (max_piece < 1) max_piece = 1;
  c.piece_tiles = num_tiles / ((int64_t)num_threads * CPU_MX8_PIECES_PER_THREAD);
  c.piece_tiles = c.piece_tiles < 1 ? 1 : c.piece_tiles > max_piece ? max_piece : c.piece_tiles;
  if (serial) c.piece_tiles = num_tiles < max_piece ? num_tiles : max_piece;
  const size_t q_bytes = ((size_t)num_rows * (size_t)cols + 63) & ~(size_t)63;
  const size_t scale_bytes = ((size_t)num_rows * (size_t)blocks * 4 + 63) & ~(size_t)63;
  char *buf = cpu_scratch(be, CPU_SCRATCH_INPUT,
                          q_bytes + scale_bytes + (size_t)num_rows * (size_t)blocks * 4);
  c.q = (int8_t *)buf;
  c.scale = (float *)(buf + q_bytes);
  c.start = (int32_t *)(buf + q_bytes + scale_bytes);
  c.in = (CpuMx8Input){c.q, c.scale, c.start, cols, blocks};
  c.tiles = cpu_scratch(be, CPU_SCRATCH_DECODE,
                        (size_t)num_threads * (size_t)(c.piece_tiles * c.tile_bytes));
  cpu_parallel(be, num_rows, serial ? num_rows : cpu_grain(be, num_rows, cols, 1 << 14),
               cpu_mx8_quantize_task, &c);
  const int64_t num_pieces = (num_tiles + c.piece_tiles - 1) / c.piece_tiles;
  cpu_parallel(be, num_pieces, serial ? num_pieces : 1, cpu_mx8_tiles_task, &c);
}
