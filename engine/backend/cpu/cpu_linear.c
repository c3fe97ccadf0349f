// cpu_linear.c: y = x W^T + b for every weight format. Q8, BF16 and MXFP4 weights go to the
// AVX-512 kernels (cpu_q8.c, cpu_bf16.c, cpu_mx8.c) when the CPU has them, else to the AVX2 ones
// (cpu_q8avx2.c through cpu_q8.c, cpu_rowsavx2.c for a few input rows). Otherwise, and for F32,
// the output features are split across the backend's threads; each runs single-threaded OpenBLAS on
// its slice: F32 weights directly, the others either decoded a tile of rows at a time (many input
// rows) or one row at a time dotted with every input row (a few input rows, where reading the
// weights is the whole cost). One function per path, chosen in cpu_linear, so a faster kernel for
// one format or shape slots in beside them. Never writes the weights.
#include <cblas.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"
#include "common/check.h"

// Up to this many input rows, decoded formats use the row-at-a-time path (at 4 rows decoded
// tiles and sgemm were already faster, measured on 2880-column BF16 and MXFP4 weights).
#define CPU_LINEAR_FUSED_MAX_ROWS 2
// Decoded weight tile of one thread, handed to one sgemm call (float bytes; about one L2; of
// 256 KiB, 1 MiB and 4 MiB the fastest at 64-256 input rows).
#define CPU_LINEAR_TILE_BYTES ((size_t)1 << 20)
// Below this many multiply-adds a linear runs on the calling thread.
#define CPU_LINEAR_PARALLEL_MIN ((int64_t)1 << 16)

void cpu_linear_prepare(float *y, const float *bias, int num_rows, int64_t n, bool accumulate) {
  for (int r = 0; r < num_rows; r++) {
    float *yr = y + r * n;  // [n]
    if (!accumulate) {
      if (bias)
        memcpy(yr, bias, (size_t)n * sizeof(float));
      else
        memset(yr, 0, (size_t)n * sizeof(float));
    } else if (bias) {
      for (int64_t i = 0; i < n; i++) yr[i] += bias[i];
    }
  }
}

// y[:, r0 .. r1) += x W[r0 .. r1)^T, with a float32 weight slice.
// wf: [r1 - r0, k], x: [num_rows, k], y: [num_rows, ldy] from column r0
static void cpu_linear_sgemm(const float *wf, int64_t r0, int64_t r1, int64_t k, const float *x,
                             int num_rows, float *y, int64_t ldy) {
  const blasint n = (blasint)(r1 - r0);
  if (num_rows == 1)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, (blasint)k, 1.0f, wf, (blasint)k, x, 1, 1.0f,
                y + r0, 1);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, num_rows, n, (blasint)k, 1.0f, x,
                (blasint)k, wf, (blasint)k, 1.0f, y + r0, (blasint)ldy);
}

// Rows r0 .. r1 of y += x W^T, decoding one weight row at a time into row and dotting it with
// every x row. row: [cols], x: [num_rows, cols], y: [num_rows, w->rows]
static void cpu_linear_rowwise(const WeightMatrix *w, int64_t r0, int64_t r1, const float *x,
                               int num_rows, float *y, float *row) {
  const int64_t cols = w->cols;
  for (int64_t r = r0; r < r1; r++) {
    cpu_decode_rows(w, r, 1, row);
    for (int m = 0; m < num_rows; m++) y[m * w->rows + r] += cpu_dot(x + m * cols, row, cols);
  }
}

// Rows r0 .. r1 of y += x W^T, decoding tiles of weight rows into tile and multiplying each
// with sgemm. tile: [tile_rows, cols], x: [num_rows, cols], y: [num_rows, w->rows]
static void cpu_linear_tiled(const WeightMatrix *w, int64_t r0, int64_t r1, const float *x,
                             int num_rows, float *y, float *tile, int64_t tile_rows) {
  for (int64_t t0 = r0; t0 < r1; t0 += tile_rows) {
    const int64_t t1 = r1 - t0 < tile_rows ? r1 : t0 + tile_rows;
    cpu_decode_rows(w, t0, t1 - t0, tile);
    cpu_linear_sgemm(tile, t0, t1, w->cols, x, num_rows, y, w->rows);
  }
}

typedef struct {
  const WeightMatrix *w;
  const float *x;  // [num_rows, w->cols]
  int num_rows;
  float *y;  // [num_rows, w->rows]
  bool rowwise;
  int64_t tile_rows;
  float *bufs;  // [num_threads, per_thread] decoded rows or tiles
  int64_t per_thread;
} CpuLinearCtx;

// Output features begin .. end - 1 on one thread, single-threaded OpenBLAS.
static void cpu_linear_task(void *ctx, int64_t begin, int64_t end, int tid) {
  const CpuLinearCtx *c = ctx;
  const WeightMatrix *w = c->w;
  float *buf = c->bufs + tid * c->per_thread;  // [per_thread]
  if (w->format == WEIGHT_F32)
    cpu_linear_sgemm((const float *)w->data + begin * w->cols, begin, end, w->cols, c->x,
                     c->num_rows, c->y, w->rows);
  else if (c->rowwise)
    cpu_linear_rowwise(w, begin, end, c->x, c->num_rows, c->y, buf);
  else
    cpu_linear_tiled(w, begin, end, c->x, c->num_rows, c->y, buf, c->tile_rows);
}

// MXFP4: int8 inputs (cpu_mx8.c) where the CPU has VNNI, but AMX-BF16 from
// CPU_MXFP4_AMX_MIN_ROWS rows where it has that.
bool cpu_linear_uses_mx8(Backend *be, const WeightMatrix *w, int num_rows) {
  const CpuState *st = cpu_state(be);
  return w->format == WEIGHT_MXFP4 && st->mxfp4_int8 &&
         !(st->amx_bf16 && num_rows >= CPU_MXFP4_AMX_MIN_ROWS);
}

void cpu_linear(Backend *be, const WeightMatrix *w, const float *bias, const float *x, int num_rows,
                float *y, bool accumulate) {
  CHECK(num_rows >= 0 && w->rows > 0 && w->cols > 0);
  if (num_rows == 0) return;
  const int64_t rows = w->rows, cols = w->cols;
  const CpuState *st = cpu_state(be);
  const bool serial = rows * cols * num_rows < CPU_LINEAR_PARALLEL_MIN;
  if (w->format == WEIGHT_Q8 && (st->avx512_vnni || st->avx2)) {
    cpu_q8_linear(be, w, bias, x, num_rows, y, accumulate, serial);  // adds the bias itself
    return;
  }
  const bool mx8 = cpu_linear_uses_mx8(be, w, num_rows);
  if ((w->format == WEIGHT_BF16 || w->format == WEIGHT_MXFP4) && st->avx512_bf16 && !mx8) {
    cpu_bf16_linear(be, w, bias, x, num_rows, y, accumulate, serial);  // adds the bias itself
    return;
  }
  cpu_linear_prepare(y, bias, num_rows, w->rows, accumulate);
  if (mx8) {
    cpu_mx8_linear(be, w, x, num_rows, y, serial);
    return;
  }
  if ((w->format == WEIGHT_BF16 || w->format == WEIGHT_MXFP4) && st->avx2 &&
      num_rows <= CPU_ROWSAVX2_MAX_ROWS) {
    cpu_rowsavx2_linear(be, w, x, num_rows, y, serial);
    return;
  }
  int64_t tile_rows = (int64_t)(CPU_LINEAR_TILE_BYTES / ((size_t)cols * sizeof(float)));
  if (tile_rows < 1) tile_rows = 1;
  CpuLinearCtx c = {.w = w,
                    .x = x,
                    .num_rows = num_rows,
                    .y = y,
                    .rowwise = num_rows <= CPU_LINEAR_FUSED_MAX_ROWS,
                    .tile_rows = tile_rows};
  c.per_thread = w->format == WEIGHT_F32 ? 0 : c.rowwise ? cols : tile_rows * cols;
  c.bufs = cpu_scratch(be, CPU_SCRATCH_DECODE,
                       (size_t)(st->num_threads * c.per_thread + 1) * sizeof(float));
  // Each piece is a contiguous range of output features with single-threaded BLAS on it: one
  // pool of threads for every op, no hand-off to OpenBLAS's own.
  const int64_t pieces = (int64_t)st->num_threads * CPU_PIECES_PER_THREAD;
  cpu_parallel(be, rows, serial ? rows : (rows + pieces - 1) / pieces, cpu_linear_task, &c);
}
