// cpu_bf16.c: y = x W^T + bias (or y += that) for WEIGHT_BF16 and WEIGHT_MXFP4 weights with
// AVX-512 BF16 (vdpbf16ps: 32 bf16 products per instruction, float32 sums). The input rows are
// rounded to bf16 once per call. BF16 weights are multiplied where they lie; MXFP4 weights are
// decoded to bf16 (exactly: every e2m1 value times a power of two is a bf16) through a 16-entry
// bf16 table per scale byte, one vpermw per 32 values: in registers as the kernel reads them for a
// few input rows, a tile of rows at a time into cache (decoded once for all the rows) for more. The
// kernel keeps 16 accumulators (weight rows x input rows: 16x1, 8x2 or 4x4) over the columns and
// sums each one's lanes with a shuffle tree at the end; it prefetches the next block's rows.
// Compiled for AVX-512 with target attributes: cpu_linear calls it only when the CPU has
// AVX512_BF16. With AMX-BF16 and at least 16 input rows, both formats go through cpu_bf16amx.c
// instead. Reads the weights, writes only y and its scratch.
#include <immintrin.h>
#include <pthread.h>
#include <string.h>

#include "backend/cpu/cpu_avx512.h"
#include "backend/cpu/cpu_internal.h"
#include "common/check.h"
#include "model/bf16.h"
#include "model/mxfp4.h"

#define CPU_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define CPU_BF16_INLINE static inline __attribute__((always_inline)) CPU_BF16_TARGET
#define CPU_BF16_ACCS 16  // accumulators of the kernel: weight rows x input rows
// Decoded MXFP4 tile of one thread: bytes of bf16 (fits L2 beside the input rows).
#define CPU_BF16_TILE_BYTES ((size_t)64 << 10)
#define CPU_BF16_CHUNK 64             // input rows per pass over a tile (L1/L2-sized)
#define CPU_BF16_PIECES_PER_THREAD 8  // pieces of the weight rows handed out per thread
// AMX: input rows per task, a multiple of 2 x CPU_BF16_AMX_ROWS: as many as fit
// CPU_BF16_AMX_CHUNK_BYTES of bf16 (the chunk stays in L2 across the pieces it meets), at least
// CPU_BF16_AMX_MIN_CHUNK (a piece's transposed weights serve that many rows at least).
#define CPU_BF16_AMX_CHUNK_BYTES ((size_t)1 << 20)
#define CPU_BF16_AMX_MIN_CHUNK 256
// Up to this many input rows MXFP4 blocks are decoded in registers as the kernel reads them;
// above, a tile is decoded once for all the rows (one thread, a 1024 x 512 expert: 1 row 11 us
// fused, 17 us tiled; 4 rows 17 and 22 us; 16 rows 65 and 57 us).
#define CPU_BF16_FUSED_MAX_ROWS 4

// value of code k at scale byte s, as bf16 bits (exact, as mxfp4_value).
uint16_t cpu_mxfp4_bf16_table[256][16];
static pthread_once_t cpu_mxfp4_once = PTHREAD_ONCE_INIT;

static void cpu_mxfp4_table_fill(void) {
  for (int s = 0; s < 256; s++)
    for (int k = 0; k < 16; k++)
      cpu_mxfp4_bf16_table[s][k] = bf16_from_f32(mxfp4_value((uint8_t)k, (uint8_t)s));
}

void cpu_mxfp4_bf16_init(void) { pthread_once(&cpu_mxfp4_once, cpu_mxfp4_table_fill); }

// x rounded to bf16 (nearest even), row by row.  x: [num_rows, cols], out: [num_rows, cols]
CPU_BF16_TARGET static void cpu_bf16_round_row(const float *x, int64_t cols, uint16_t *out) {
  for (int64_t c = 0; c < cols; c += 16) {
    const __mmask16 m = cols - c >= 16 ? 0xffff : (__mmask16)((1u << (cols - c)) - 1);
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + c));
    __m256i bits;
    memcpy(&bits, &h, sizeof bits);
    _mm256_mask_storeu_epi16(out + c, m, bits);
  }
}

// Where a kernel reads weight rows: bf16 values, or MXFP4 blocks decoded as they are read.
typedef struct {
  const uint16_t *bf16;   // [rows, ld] bf16 bits, or NULL for MXFP4
  int64_t ld;             // bf16 values per row
  const uint8_t *blocks;  // [rows, groups, 16] MXFP4 codes
  const uint8_t *scales;  // [rows, groups] e8m0
  int64_t groups;         // MXFP4 blocks per row
} CpuBf16Src;

// Decodes MXFP4 rows row0 .. row0 + num_rows - 1 into bf16.  out: [num_rows, w->cols]
CPU_BF16_TARGET static void cpu_mxfp4_decode_bf16(const WeightMatrix *w, int64_t row0,
                                                  int64_t num_rows, uint16_t *out) {
  const int64_t groups = w->cols / MXFP4_BLOCK_SIZE;
  const uint8_t *blocks = (const uint8_t *)w->data + row0 * groups * MXFP4_BLOCK_BYTES;
  const uint8_t *scales = (const uint8_t *)w->scales + row0 * groups;
  for (int64_t g = 0; g < num_rows * groups; g++)
    _mm512_storeu_si512(out + g * MXFP4_BLOCK_SIZE,
                        cpu_mxfp4_block(blocks + g * MXFP4_BLOCK_BYTES, scales[g]));
}

// acc[j * MT + i] += the products of 32 columns from c (those in mask m; the others load as
// zeros) of weight row j (bf16 wr[j], or with MX the MXFP4 block c / 32 of wb[j], ws[j]) and
// input row xr[i]. BF16 rows RT rows further on (the next block's, ld values a row) are
// prefetched column for column: a block's rows are short streams the hardware prefetcher finds
// too late (the attention projections of gpt-oss-tiny, one row: 48 -> 37 us a call).
CPU_BF16_INLINE void cpu_bf16_step(__m512 acc[16], const uint16_t *const wr[16],
                                   const uint8_t *const wb[16], const uint8_t *const ws[16],
                                   const uint16_t *const xr[16], int64_t c, __mmask32 m, int64_t ld,
                                   const int RT, const int MT, const bool MX) {
  __m512bh wv[16], xv[16];
#pragma GCC unroll 16
  for (int j = 0; j < RT; j++) {
    const int64_t g = c / MXFP4_BLOCK_SIZE;
    if (!MX)  // the same columns of the next register block's row j (ld bf16 a row)
      _mm_prefetch((const char *)((uintptr_t)(wr[j] + c) + (uintptr_t)(RT * ld) * 2), _MM_HINT_T0);
    wv[j] = (__m512bh)(MX ? cpu_mxfp4_block(wb[j] + g * MXFP4_BLOCK_BYTES, ws[j][g])
                          : _mm512_maskz_loadu_epi16(m, wr[j] + c));
  }
#pragma GCC unroll 16
  for (int i = 0; i < MT; i++) xv[i] = (__m512bh)_mm512_maskz_loadu_epi16(m, xr[i] + c);
#pragma GCC unroll 16
  for (int j = 0; j < RT; j++)
#pragma GCC unroll 16
    for (int i = 0; i < MT; i++) acc[j * MT + i] = _mm512_dpbf16_ps(acc[j * MT + i], wv[j], xv[i]);
}

// y[m0 + i][r0 + j] += x[m0 + i] . (weight row row + j of src) for j < RT, i < MT (RT * MT =
// 16); rows past num_r / num_m repeat the last one and are not written. With MX, src is MXFP4
// (cols a multiple of 32).  x: [>= m0 + num_m, ldx] bf16, y: [*, ldy]
CPU_BF16_INLINE void cpu_bf16_block(const CpuBf16Src *src, int64_t row, int num_r,
                                    const uint16_t *x, int m0, int num_m, int64_t ldx, int64_t cols,
                                    float *y, int64_t ldy, int64_t r0, const int RT, const int MT,
                                    const bool MX) {
  const uint16_t *wr[16], *xr[16];
  const uint8_t *wb[16], *ws[16];
#pragma GCC unroll 16
  for (int j = 0; j < RT; j++) {
    const int64_t r = row + (j < num_r ? j : num_r - 1);
    if (MX) {
      wb[j] = src->blocks + r * src->groups * MXFP4_BLOCK_BYTES;
      ws[j] = src->scales + r * src->groups;
    } else {
      wr[j] = src->bf16 + r * src->ld;
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MT; i++) xr[i] = x + (int64_t)(m0 + (i < num_m ? i : num_m - 1)) * ldx;
  __m512 acc[CPU_BF16_ACCS];
#pragma GCC unroll 16
  for (int a = 0; a < CPU_BF16_ACCS; a++) acc[a] = _mm512_setzero_ps();
  int64_t c = 0;
  for (; c + 32 <= cols; c += 32)
    cpu_bf16_step(acc, wr, wb, ws, xr, c, 0xffffffffu, src->ld, RT, MT, MX);
  if (c < cols)  // the last cols % 32 columns (bf16 only)
    cpu_bf16_step(acc, wr, wb, ws, xr, c, (__mmask32)((1u << (cols - c)) - 1), src->ld, RT, MT, MX);
  float sums[CPU_BF16_ACCS];
  _mm512_storeu_ps(sums, cpu_sum16(acc));
  for (int j = 0; j < num_r; j++)
    for (int i = 0; i < num_m; i++) y[(int64_t)(m0 + i) * ldy + r0 + j] += sums[j * MT + i];
}

#define CPU_BF16_BLOCK(rt, mt, mx) \
  cpu_bf16_block(src, row + j, nr, x, m0, nm, cols, cols, y, ldy, r0 + j, rt, mt, mx)

// y[:, r0 .. r0 + num_r) += x (weight rows row .. row + num_r - 1 of src)^T for every input row.
// x: [num_rows, cols] bf16, y: [num_rows, ldy]
CPU_BF16_TARGET static void cpu_bf16_rows(const CpuBf16Src *src, int64_t row, int64_t num_r,
                                          const uint16_t *x, int num_rows, int64_t cols, float *y,
                                          int64_t ldy, int64_t r0) {
  const int mt = num_rows == 1 ? 1 : num_rows == 2 ? 2 : 4, rt = CPU_BF16_ACCS / mt;
  const bool mx = src->bf16 == NULL;
  for (int c0 = 0; c0 < num_rows; c0 += CPU_BF16_CHUNK) {
    const int c1 = num_rows - c0 < CPU_BF16_CHUNK ? num_rows : c0 + CPU_BF16_CHUNK;
    for (int64_t j = 0; j < num_r; j += rt) {
      const int nr = num_r - j < rt ? (int)(num_r - j) : rt;
      for (int m0 = c0; m0 < c1; m0 += mt) {
        const int nm = c1 - m0 < mt ? c1 - m0 : mt;
        if (mt == 1 && mx)
          CPU_BF16_BLOCK(16, 1, true);
        else if (mt == 1)
          CPU_BF16_BLOCK(16, 1, false);
        else if (mt == 2 && mx)
          CPU_BF16_BLOCK(8, 2, true);
        else if (mt == 2)
          CPU_BF16_BLOCK(8, 2, false);
        else if (mx)
          CPU_BF16_BLOCK(4, 4, true);
        else
          CPU_BF16_BLOCK(4, 4, false);
      }
    }
  }
}

typedef struct {
  const WeightMatrix *w;
  const float *x;  // [num_rows, w->cols]
  int num_rows;
  float *y;         // [num_rows, w->rows]
  uint16_t *xb;     // [num_rows, w->cols] x in bf16
  uint16_t *tiles;  // [num_threads, piece, w->cols] decoded MXFP4 rows (or transposed bf16
                    // rows for AMX), or NULL
  int64_t piece;    // weight rows per piece
  bool amx;         // the rows through cpu_bf16amx.c (which adds bias and y's values itself)
  const float *bias;
  bool accumulate;
  int64_t num_pieces;
  int64_t chunk;  // AMX: input rows per task
} CpuBf16Ctx;

static void cpu_bf16_round_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuBf16Ctx *c = ctx;
  for (int64_t m = begin; m < end; m++)
    cpu_bf16_round_row(c->x + m * c->w->cols, c->w->cols, c->xb + m * c->w->cols);
}

// Tasks begin .. end - 1. On AMX, task p is piece p % num_pieces of the weight rows for input
// chunk p / num_pieces (cpu_bf16amx.c transposes the piece, decoding MXFP4 as it goes, and
// stores with the bias). Otherwise task p is piece p for every input row: MXFP4 rows are
// decoded as they are read for up to CPU_BF16_FUSED_MAX_ROWS input rows, else into the thread's
// tile first (decoded once for all the input rows).
static void cpu_bf16_rows_task(void *ctx, int64_t begin, int64_t end, int tid) {
  const CpuBf16Ctx *c = ctx;
  const WeightMatrix *w = c->w;
  const int64_t cols = w->cols;
  for (int64_t p = begin; p < end; p++) {
    if (c->amx) {  // task p: piece p % num_pieces of input chunk p / num_pieces
      const int64_t r0 = p % c->num_pieces * c->piece, m0 = p / c->num_pieces * c->chunk;
      const int64_t nr = w->rows - r0 < c->piece ? w->rows - r0 : c->piece;
      const int nm = c->num_rows - m0 < c->chunk ? (int)(c->num_rows - m0) : (int)c->chunk;
      uint16_t *bt = c->tiles + (size_t)tid * (size_t)(c->piece * cols);  // [piece, cols]
      cpu_bf16_amx_rows(w, r0, nr, c->xb + m0 * cols, nm, c->y + m0 * w->rows, c->bias,
                        c->accumulate, (uint32_t *)bt);
      continue;
    }
    const int64_t r0 = p * c->piece, nr = w->rows - r0 < c->piece ? w->rows - r0 : c->piece;
    CpuBf16Src src = {.bf16 = w->data, .ld = cols};
    int64_t row = r0;  // of src
    if (w->format == WEIGHT_MXFP4 && c->tiles) {
      src.bf16 = c->tiles + (size_t)tid * (size_t)(c->piece * cols);  // [piece, cols]
      cpu_mxfp4_decode_bf16(w, r0, nr, (uint16_t *)src.bf16);
      row = 0;
    } else if (w->format == WEIGHT_MXFP4) {
      src = (CpuBf16Src){.blocks = w->data, .scales = w->scales, .groups = cols / MXFP4_BLOCK_SIZE};
    }
    cpu_bf16_rows(&src, row, nr, c->xb, c->num_rows, cols, c->y, w->rows, r0);
  }
}

void cpu_bf16_linear(Backend *be, const WeightMatrix *w, const float *bias, const float *x,
                     int num_rows, float *y, bool accumulate, bool serial) {
  CHECK(w->format == WEIGHT_BF16 || w->format == WEIGHT_MXFP4);
  const int64_t rows = w->rows, cols = w->cols;
  const int num_threads = cpu_state(be)->num_threads;
  CpuBf16Ctx c = {
      .w = w, .x = x, .num_rows = num_rows, .y = y, .bias = bias, .accumulate = accumulate};
  // AMX-BF16 where it has tiles' worth of input rows; the zero rows that pad them are never
  // stored.
  c.amx = cpu_state(be)->amx_bf16 && cols % CPU_BF16_AMX_K == 0 && num_rows >= CPU_BF16_AMX_ROWS;
  if (!c.amx) cpu_linear_prepare(y, bias, num_rows, rows, accumulate);  // the kernels add to y
  const int64_t padded_rows =
      c.amx ? (num_rows + CPU_BF16_AMX_ROWS - 1) / CPU_BF16_AMX_ROWS * CPU_BF16_AMX_ROWS : num_rows;
  c.xb = cpu_scratch(be, CPU_SCRATCH_INPUT, (size_t)padded_rows * (size_t)cols * 2);
  memset(c.xb + (size_t)num_rows * (size_t)cols, 0,
         (size_t)(padded_rows - num_rows) * (size_t)cols * 2);
  // Pieces of rows go to whichever thread is free (a preempted thread holds up one piece, not
  // half the matrix); an MXFP4 piece, decoded, must fit the thread's tile.
  int64_t max_piece = (int64_t)(CPU_BF16_TILE_BYTES / ((size_t)cols * 2));
  max_piece = max_piece < 16 ? 16 : max_piece / 16 * 16;
  c.piece = rows / ((int64_t)num_threads * CPU_BF16_PIECES_PER_THREAD);
  c.piece = c.piece < 16 ? 16 : c.piece > max_piece ? max_piece : c.piece / 16 * 16;
  if ((w->format == WEIGHT_MXFP4 && num_rows > CPU_BF16_FUSED_MAX_ROWS) || c.amx)
    c.tiles =
        cpu_scratch(be, CPU_SCRATCH_DECODE, (size_t)num_threads * (size_t)(c.piece * cols) * 2);
  c.num_pieces = (rows + c.piece - 1) / c.piece;
  c.chunk = (int64_t)(CPU_BF16_AMX_CHUNK_BYTES / ((size_t)cols * 2)) / 32 * 32;
  c.chunk = c.chunk < CPU_BF16_AMX_MIN_CHUNK ? CPU_BF16_AMX_MIN_CHUNK : c.chunk;
  // AMX tasks: every piece of the first chunk of input rows, then of the next, ...
  const int64_t num_tasks = c.num_pieces * (c.amx ? (num_rows + c.chunk - 1) / c.chunk : 1);
  cpu_parallel(be, num_rows, serial ? num_rows : cpu_grain(be, num_rows, cols, 1 << 14),
               cpu_bf16_round_task, &c);
  cpu_parallel(be, num_tasks, serial ? num_tasks : 1, cpu_bf16_rows_task, &c);
}
