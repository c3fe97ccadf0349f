// cpu_q8.c: y += x W^T for WEIGHT_Q8 weights (layout in model/q8.h) with AVX-512 VNNI. Each
// input row is quantized to int8 once per call (one scale per row, max |x| -> 127); then
// vpdpbusd multiplies a 64-byte group (16 weight rows by 4 columns, unsigned q + 128) by 4
// int8 inputs broadcast to every lane, adding into 16 int32 sums, one per weight row: no
// horizontal sums. The +128 offset is taken out per input row (128 * its sum of q) before the
// int32 sums are scaled into float. Register blocks are up to 4 tiles of 16 weight rows by up to
// 8 input rows; a tile's bytes are read from memory once per chunk of 256 input rows. Threads
// take pieces of the tiles as they come free. With AMX-INT8 and at least 8 input rows the tiles
// go through cpu_q8amx.c instead (the same sums and epilogue). Compiled for AVX-512 with target
// attributes: cpu_linear calls it only when the CPU has VNNI. Reads the weights, writes only y
// and its scratch.
#include <float.h>
#include <immintrin.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "common/check.h"
#include "model/q8.h"

#define CPU_Q8_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define CPU_Q8_INLINE static inline __attribute__((always_inline)) CPU_Q8_TARGET
#define CPU_Q8_MAX_MT 8             // input rows of a register block
#define CPU_Q8_CHUNK 256            // input rows per pass over a piece's weight tiles (L2-sized)
#define CPU_Q8_PIECES_PER_THREAD 8  // pieces of the weight tiles handed out per thread
#define CPU_Q8_GROUP_BYTES (Q8_TILE_ROWS * Q8_GROUP_COLS)
// Fewer input rows stay on VNNI (memory-bound there: AMX gains nothing).
#define CPU_Q8_AMX_MIN_ROWS 8

// Quantizes one input row.  x: [cols], q: [ld]
CPU_Q8_TARGET static void cpu_q8_quantize_row(const float *x, int64_t cols, int64_t ld, int8_t *q,
                                              float *scale, int32_t *corr) {
  __m512 amax = _mm512_setzero_ps();
  for (int64_t c = 0; c < cols; c += 16) {
    const __mmask16 m = cols - c >= 16 ? 0xffff : (__mmask16)((1u << (cols - c)) - 1);
    amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_maskz_loadu_ps(m, x + c)));
  }
  const float a = _mm512_reduce_max_ps(amax);
  // A row below the smallest normal float is taken as zeros (127 / a would overflow).
  const __m512 inv = _mm512_set1_ps(a >= FLT_MIN ? (float)Q8_MAX / a : 0.0f);
  __m512i sum = _mm512_setzero_si512();
  for (int64_t c = 0; c < ld; c += 16) {
    const __mmask16 load = cols - c >= 16 ? 0xffff
                           : cols <= c    ? 0
                                          : (__mmask16)((1u << (cols - c)) - 1);
    const __mmask16 store = ld - c >= 16 ? 0xffff : (__mmask16)((1u << (ld - c)) - 1);
    const __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(load, x + c), inv));
    sum = _mm512_add_epi32(sum, v);
    _mm512_mask_cvtsepi32_storeu_epi8(q + c, store, v);
  }
  *scale = a / (float)Q8_MAX;
  *corr = Q8_ZERO * _mm512_reduce_add_epi32(sum);
}

// y[m][row0 + lane] = (acc[lane] - corr[m]) * (wscale[lane] * scale[m]) + (y's value with
// in->accumulate, else 0) + in->bias[row0 + lane] (with a bias) for the first num_valid lanes:
// one input row's int32 sums over a tile of 16 weight rows, into float. One fma onto
// (y + bias), the rounding cpu_linear_prepare and += would give.
CPU_Q8_INLINE void cpu_q8_store_vec(__m512i acc, const float *wscale, const CpuQ8Input *in, int m,
                                    float *y, int64_t ldy, int64_t row0, int64_t num_valid) {
  const __mmask16 mask = num_valid >= 16 ? 0xffff : (__mmask16)((1u << num_valid) - 1);
  const __m512 dot = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc, _mm512_set1_epi32(in->corr[m])));
  float *yr = y + (int64_t)m * ldy + row0;
  const __m512 s = _mm512_mul_ps(_mm512_loadu_ps(wscale), _mm512_set1_ps(in->scale[m]));
  __m512 base = in->accumulate ? _mm512_maskz_loadu_ps(mask, yr) : _mm512_setzero_ps();
  if (in->bias) base = _mm512_add_ps(base, _mm512_maskz_loadu_ps(mask, in->bias + row0));
  _mm512_mask_storeu_ps(yr, mask, _mm512_fmadd_ps(dot, s, base));
}

// y[m0 + i][row0 + 16 z + lane] += (x row m0 + i) . (weight row) for z < RZ tiles from w and
// i < MT input rows; only the first num_valid of the RZ * 16 rows are written.
// w: RZ tiles of [groups, 16, 4], wscale: [RZ * 16], y: [*, ldy]
CPU_Q8_INLINE void cpu_q8_block(const uint8_t *w, int64_t groups, const float *wscale,
                                const CpuQ8Input *in, int m0, float *y, int64_t ldy, int64_t row0,
                                int64_t num_valid, const int RZ, const int MT) {
  __m512i acc[4][CPU_Q8_MAX_MT];
#pragma GCC unroll 4
  for (int z = 0; z < RZ; z++)
#pragma GCC unroll 8
    for (int i = 0; i < MT; i++) acc[z][i] = _mm512_setzero_si512();
  const int8_t *xq = in->q + (int64_t)m0 * in->ld;
  for (int64_t g = 0; g < groups; g++) {
    __m512i wv[4];
#pragma GCC unroll 4
    for (int z = 0; z < RZ; z++)
      wv[z] = _mm512_loadu_si512(w + (z * groups + g) * CPU_Q8_GROUP_BYTES);
#pragma GCC unroll 8
    for (int i = 0; i < MT; i++) {
      int32_t four;
      memcpy(&four, xq + i * in->ld + g * Q8_GROUP_COLS, sizeof four);
      const __m512i xb = _mm512_set1_epi32(four);
#pragma GCC unroll 4
      for (int z = 0; z < RZ; z++) acc[z][i] = _mm512_dpbusd_epi32(acc[z][i], wv[z], xb);
    }
  }
#pragma GCC unroll 4
  for (int z = 0; z < RZ; z++) {
    const int64_t left = num_valid - z * Q8_TILE_ROWS;
    if (left <= 0) break;
#pragma GCC unroll 8
    for (int i = 0; i < MT; i++)
      cpu_q8_store_vec(acc[z][i], wscale + z * Q8_TILE_ROWS, in, m0 + i, y, ldy,
                       row0 + z * Q8_TILE_ROWS, left);
  }
}

CPU_Q8_TARGET void cpu_q8_store(const int32_t *dot, const float *wscale, const CpuQ8Input *in,
                                int m, float *y, int64_t ldy, int64_t row0, int64_t num_valid) {
  cpu_q8_store_vec(_mm512_loadu_si512(dot), wscale, in, m, y, ldy, row0, num_valid);
}

#define CPU_Q8_CASE(rz, mt)                                                   \
  case (rz)*16 + (mt):                                                        \
    cpu_q8_block(w, groups, wscale, in, m0, y, ldy, row0, num_valid, rz, mt); \
    return;

// cpu_q8_block with run-time rz (1, 2 or 4; 4 only with mt 1) and mt (1 .. 8).
CPU_Q8_TARGET static void cpu_q8_dispatch(const uint8_t *w, int64_t groups, const float *wscale,
                                          const CpuQ8Input *in, int m0, float *y, int64_t ldy,
                                          int64_t row0, int64_t num_valid, int rz, int mt) {
  switch (rz * 16 + mt) {
    CPU_Q8_CASE(1, 1)
    CPU_Q8_CASE(1, 2)
    CPU_Q8_CASE(1, 3)
    CPU_Q8_CASE(1, 4)
    CPU_Q8_CASE(1, 5)
    CPU_Q8_CASE(1, 6)
    CPU_Q8_CASE(1, 7)
    CPU_Q8_CASE(1, 8)
    CPU_Q8_CASE(2, 1)
    CPU_Q8_CASE(2, 2)
    CPU_Q8_CASE(2, 3)
    CPU_Q8_CASE(2, 4) CPU_Q8_CASE(2, 5) CPU_Q8_CASE(2, 6) CPU_Q8_CASE(2, 7) CPU_Q8_CASE(2, 8)
        CPU_Q8_CASE(4, 1)
  }
  CHECK(!"unsupported q8 register block");
}

// A kernel's register blocks: its block function, the tiles a block holds for one input row and
// for more, and the most input rows a block holds.
typedef struct {
  CpuQ8Block block;
  int rz_one_row, rz_rows, max_mt;
} CpuQ8Kernel;

static const CpuQ8Kernel CPU_Q8_VNNI = {cpu_q8_dispatch, 4, 2, CPU_Q8_MAX_MT};
static const CpuQ8Kernel CPU_Q8_AVX2 = {cpu_q8avx2_block, CPU_Q8AVX2_RZ_ONE_ROW, 1,
                                        CPU_Q8AVX2_MAX_MT};

// Tiles t0 .. t1 of w times every input row, in k's register blocks.  y: [num_rows, w->rows]
static void cpu_q8_tiles(const CpuQ8Kernel *k, const WeightMatrix *w, int64_t t0, int64_t t1,
                         const CpuQ8Input *in, int num_rows, float *y) {
  const int64_t groups = q8_groups(w->cols), tile_bytes = groups * CPU_Q8_GROUP_BYTES;
  const uint8_t *data = w->data;
  const float *scales = w->scales;
  const int rz_max = num_rows == 1 ? k->rz_one_row : k->rz_rows;
  for (int c0 = 0; c0 < num_rows; c0 += CPU_Q8_CHUNK) {
    const int c1 = num_rows - c0 < CPU_Q8_CHUNK ? num_rows : c0 + CPU_Q8_CHUNK;
    for (int64_t t = t0; t < t1;) {
      const int rz = t1 - t >= rz_max ? rz_max : 1;
      const int64_t row0 = t * Q8_TILE_ROWS;
      for (int m0 = c0; m0 < c1; m0 += k->max_mt) {
        const int mt = c1 - m0 < k->max_mt ? c1 - m0 : k->max_mt;
        k->block(data + t * tile_bytes, groups, scales + row0, in, m0, y, w->rows, row0,
                 w->rows - row0, rz, mt);
      }
      t += rz;
    }
  }
}

typedef struct {
  const WeightMatrix *w;
  const float *x;  // [num_rows, w->cols]
  int num_rows;
  float *y;       // [num_rows, w->rows]
  int8_t *q;      // [num_rows, ld] quantized x
  float *scale;   // [num_rows]
  int32_t *corr;  // [num_rows]
  int64_t ld;
  bool amx;   // the tiles through cpu_q8amx.c
  bool avx2;  // no VNNI: quantized and multiplied by cpu_q8avx2.c
  const float *bias;
  bool accumulate;
} CpuQ8Ctx;

static void cpu_q8_quantize_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuQ8Ctx *c = ctx;
  for (int64_t m = begin; m < end; m++)
    (c->avx2 ? cpu_q8avx2_quantize_row : cpu_q8_quantize_row)(
        c->x + m * c->w->cols, c->w->cols, c->ld, c->q + m * c->ld, &c->scale[m], &c->corr[m]);
}

// Weight tiles begin .. end - 1.
static void cpu_q8_tiles_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuQ8Ctx *c = ctx;
  const CpuQ8Input in = {.q = c->q,
                         .scale = c->scale,
                         .corr = c->corr,
                         .ld = c->ld,
                         .bias = c->bias,
                         .accumulate = c->accumulate};
  if (c->amx)
    cpu_q8_amx_tiles(c->w, begin, end, &in, c->num_rows, c->y);
  else
    cpu_q8_tiles(c->avx2 ? &CPU_Q8_AVX2 : &CPU_Q8_VNNI, c->w, begin, end, &in, c->num_rows, c->y);
}

void cpu_q8_linear(Backend *be, const WeightMatrix *w, const float *bias, const float *x,
                   int num_rows, float *y, bool accumulate, bool serial) {
  CHECK(w->format == WEIGHT_Q8);
  const int64_t ld = q8_groups(w->cols) * Q8_GROUP_COLS;
  // AMX where it has tiles' worth of input rows; the zero rows that pad them are never stored.
  const bool amx =
      cpu_state(be)->amx_int8 && w->cols % CPU_Q8_AMX_K == 0 && num_rows >= CPU_Q8_AMX_MIN_ROWS;
  const int64_t padded_rows =
      amx ? (num_rows + CPU_Q8_AMX_ROWS - 1) / CPU_Q8_AMX_ROWS * CPU_Q8_AMX_ROWS : num_rows;
  const size_t q_bytes = ((size_t)padded_rows * (size_t)ld + 63) & ~(size_t)63;
  char *buf = cpu_scratch(be, CPU_SCRATCH_INPUT, q_bytes + (size_t)num_rows * 8);
  CpuQ8Ctx c = {.w = w,
                .x = x,
                .num_rows = num_rows,
                .y = y,
                .ld = ld,
                .amx = amx,
                .avx2 = !cpu_state(be)->avx512_vnni,
                .bias = bias,
                .accumulate = accumulate};
  memset(buf + (size_t)num_rows * (size_t)ld, 0, (size_t)(padded_rows - num_rows) * (size_t)ld);
  c.q = (int8_t *)buf;                       // [padded_rows, ld]
  c.scale = (float *)(buf + q_bytes);        // [num_rows]
  c.corr = (int32_t *)(c.scale + num_rows);  // [num_rows]
  const int64_t num_tiles = q8_tiles(w->rows);
  cpu_parallel(be, num_rows, serial ? num_rows : cpu_grain(be, num_rows, w->cols, 1 << 14),
               cpu_q8_quantize_task, &c);
  // Pieces of several tiles go to whichever thread is free: one the OS preempts (the cores may
  // be shared) holds up one piece, not half the matrix.
  const int64_t pieces = (int64_t)cpu_state(be)->num_threads * CPU_Q8_PIECES_PER_THREAD;
  cpu_parallel(be, num_tiles, serial ? num_tiles : (num_tiles + pieces - 1) / pieces,
               cpu_q8_tiles_task, &c);
}
