// test_cpu_ops.c: every op of the CPU backend (engine/backend/cpu) through its Backend table,
// against naive double-precision references written here (never the backend's own helpers) and
// against hand-computed values: linear in F32, BF16, MXFP4 (hand-made bytes) and Q8 on both of
// its paths (and AMX-INT8 against VNNI, bit for bit, where the CPU has AMX), embed, RMSNorm, RoPE,
// kv_write, gather_rows, paged attention with sinks (sliding window boundary, GQA, block layout,
// batching, decode after prefill, GPT-OSS's own shape) and MoE (top-k and softmax over the k,
// SwiGLU clamp, experts shared by several tokens) and sample (against the host sampler, whose
// picks it must equal). Every test runs three times: on the portable backend (float32 inputs:
// near-exact bounds), on the AVX2 one where the CPU has AVX2 (AVX2 kernels alone) and on the
// default one (the AVX-512 kernels where this CPU has them: inputs rounded to bf16 or int8,
// bounds to match; AVX2 against VNNI for Q8, bit for bit).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_internal.h"
#include "common/check.h"
#include "common/pick.h"
#include "core/sampler.h"
#include "model/q8.h"
#include "test_rng.h"

// Whether the group running now uses the default backend (the AVX-512 kernels where the CPU has
// them) rather than the portable one, and whether that backend has AMX-BF16.
// The kernels the backend under test may choose from (cpu_backend.c's three constructors).
typedef enum { KERNELS_PORTABLE, KERNELS_AVX2, KERNELS_ALL } Kernels;
static Kernels g_kernels;
static bool g_amx_bf16;

// ---------------------------------------------------------------------------------------------
// Helpers: comparisons, weights in each format (random numbers: test_rng.h).

// Fails at the first i where |got[i] - want[i]| > atol + rtol |want[i]| (or either is NaN).
static void expect_close(const float *got, const double *want, size_t n, double atol, double rtol,
                         const char *what) {
  for (size_t i = 0; i < n; i++) {
    if (!(fabs(got[i] - want[i]) <= atol + rtol * fabs(want[i]))) {
      print_error("%s[%zu]: got %.9g, want %.9g\n", what, i, (double)got[i], want[i]);
      fail();
    }
  }
}

static uint16_t bf16_from_float(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return (uint16_t)(u >> 16);
}

static double bf16_to_double(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

static const double E2M1[16] = {0.0,  0.5,  1.0,  1.5,  2.0,  3.0,  4.0,  6.0,
                                -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};

// A weight matrix in one format and its exact values in double.
typedef struct {
  WeightMatrix m;
  double *dense;  // [rows, cols]
  void *data;
  void *scales;  // MXFP4: uint8_t; Q8: float
} TestWeight;

static TestWeight weight_make(WeightFormat f, int64_t rows, int64_t cols, Rng *r, float scale) {
  TestWeight w = {.m = {.format = f, .rows = rows, .cols = cols}};
  const size_t n = (size_t)(rows * cols);
  w.dense = xmalloc(n * sizeof(double));
  if (f == WEIGHT_F32) {
    float *d = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) w.dense[i] = d[i] = rng_float(r) * scale;
    w.data = d;
  } else if (f == WEIGHT_BF16) {
    uint16_t *d = xmalloc(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++) {
      d[i] = bf16_from_float(rng_float(r) * scale);
      w.dense[i] = bf16_to_double(d[i]);
    }
    w.data = d;
  } else if (f == WEIGHT_Q8) {
    uint8_t *d = xmalloc(q8_data_bytes(rows, cols));
    w.scales = xmalloc(q8_num_scales(rows) * sizeof(float));
    float *row = xmalloc((size_t)cols * sizeof(float));
    q8_clear(rows, cols, d, (float *)w.scales);
    for (int64_t i = 0; i < rows; i++) {
      fill(r, row, (size_t)cols, scale);
      q8_quantize_row(row, i, cols, d, (float *)w.scales);
      q8_decode_row(d, (float *)w.scales, i, cols, row);
      for (int64_t c = 0; c < cols; c++) w.dense[i * cols + c] = row[c];
    }
    free(row);
    w.data = d;
    w.m.scales = w.scales;
  } else {
    assert_int_equal(cols % 32, 0);
    const size_t num_groups = (size_t)rows * (size_t)(cols / 32);
    uint8_t *blocks = xmalloc(num_groups * 16), *scales = xmalloc(num_groups);
    w.scales = scales;
    for (size_t g = 0; g < num_groups; g++) {
      scales[g] = (uint8_t)(124 + rng_next(r) % 6);  // 2^-3 .. 2^2
      for (int j = 0; j < 16; j++) {
        uint8_t byte = (uint8_t)rng_next(r);
        blocks[g * 16 + j] = byte;
        w.dense[g * 32 + 2 * j] = ldexp(E2M1[byte & 15], scales[g] - 127);
        w.dense[g * 32 + 2 * j + 1] = ldexp(E2M1[byte >> 4], scales[g] - 127);
      }
    }
    w.data = blocks;
    w.m.scales = w.scales;
  }
  w.m.data = w.data;
  return w;
}

static void weight_free(TestWeight *w) {
  free(w->dense);
  free(w->data);
  free(w->scales);
}

// out[m, r] = (y0 ? y0[m, r] : 0) + sum_c x[m, c] W[r, c] + (bias ? bias[r] : 0); returns the
// largest sum_c |x[m, c] W[r, c]| (float32 rounding error grows with it).
static double ref_linear(const double *w, int64_t rows, int64_t cols, const float *x, int num_rows,
                         const float *bias, const float *y0, double *out) {
  double magnitude = 0;
  for (int m = 0; m < num_rows; m++)
    for (int64_t r = 0; r < rows; r++) {
      double s = 0, abs_sum = 0;
      for (int64_t c = 0; c < cols; c++) {
        s += (double)x[m * cols + c] * w[r * cols + c];
        abs_sum += fabs((double)x[m * cols + c] * w[r * cols + c]);
      }
      if (bias) s += bias[r];
      if (y0) s += y0[m * rows + r];
      out[m * rows + r] = s;
      magnitude = fmax(magnitude, abs_sum);
    }
  return magnitude;
}

static int setup_portable(void **state) {
  g_kernels = KERNELS_PORTABLE, g_amx_bf16 = false;
  *state = cpu_backend_create_portable(2);
  return *state ? 0 : -1;
}

static int setup_avx2(void **state) {
  g_kernels = KERNELS_AVX2, g_amx_bf16 = false;
  *state = cpu_backend_create_avx2(2);
  return *state ? 0 : -1;
}

static int setup_fast(void **state) {
  g_kernels = KERNELS_ALL;
  *state = cpu_backend_create(2);
  g_amx_bf16 = *state && cpu_backend_uses_amx_bf16(*state);
  return *state ? 0 : -1;
}

static int teardown_backend(void **state) {
  Backend *be = *state;
  be->destroy(be);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// linear

// How the backend under test rounds num_rows input rows of format f: not at all (float32
// products), to bf16, or to int8 with one scale per `int8_span` columns (the same question
// cpu_backend_create asks the CPU, answered independently; MXFP4 from CPU_MXFP4_AMX_MIN_ROWS rows
// goes through AMX-BF16 where the backend has it; the AVX2 kernels round Q8's inputs as VNNI's,
// and MXFP4's as cpu_mx8.c's up to CPU_ROWSAVX2_MAX_ROWS rows).
typedef enum { ROUND_NONE, ROUND_BF16, ROUND_INT8 } InputRounding;

static InputRounding kernel_rounding(WeightFormat f, int num_rows, int64_t cols,
                                     int64_t *int8_span) {
  *int8_span = cols;  // Q8: one scale per row
  if (g_kernels == KERNELS_PORTABLE) return ROUND_NONE;
  const bool avx512 = g_kernels == KERNELS_ALL && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  const bool vnni = avx512 && __builtin_cpu_supports("avx512vnni");
  const bool bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const char *mxfp4 = getenv("GPTOSS_CPU_MXFP4");
  if (f == WEIGHT_Q8) return vnni || avx2 ? ROUND_INT8 : ROUND_NONE;
  if (f == WEIGHT_MXFP4) {
    const bool mx8 = vnni && !(mxfp4 && strcmp(mxfp4, "bf16") == 0) &&
                     !(g_amx_bf16 && num_rows >= CPU_MXFP4_AMX_MIN_ROWS);
    *int8_span = 32;  // cpu_mx8.c and cpu_rowsavx2.c: one scale per 32-column block
    if (mx8) return ROUND_INT8;
    if (bf16) return ROUND_BF16;
    return avx2 && num_rows <= CPU_ROWSAVX2_MAX_ROWS ? ROUND_INT8 : ROUND_NONE;
  }
  return f == WEIGHT_BF16 && bf16 ? ROUND_BF16 : ROUND_NONE;
}

// Rounds the first num_rows of a product's batch_rows input rows in place as the kernel for
// format f does: not at all, to bf16 (nearest even), or to int8 steps of max |x| / 127 over each
// span of columns (cpu_q8.c's and cpu_mx8.c's arithmetic, in float).  x: [num_rows, cols]
static void round_rows_like_kernel(WeightFormat f, float *x, int num_rows, int batch_rows,
                                   int64_t cols) {
  int64_t span = cols;
  const InputRounding rounding = kernel_rounding(f, batch_rows, cols, &span);
  for (int64_t c0 = 0; rounding != ROUND_NONE && c0 < (int64_t)num_rows * cols; c0 += span) {
    float *part = x + c0, amax = 0;  // [span] within one row
    for (int64_t c = 0; c < span; c++) amax = fmaxf(amax, fabsf(part[c]));
    const float inv = amax > 0 ? 127.0f / amax : 0.0f, step = amax / 127.0f;
    for (int64_t c = 0; c < span; c++)
      part[c] = rounding == ROUND_INT8 ? (float)((double)nearbyintf(part[c] * inv) * step)
                                       : (float)bf16_to_double(bf16_from_float(part[c]));
  }
}

// The same for all the input rows of a product.  x: [num_rows, cols]
static void round_like_kernel(WeightFormat f, float *x, int num_rows, int64_t cols) {
  round_rows_like_kernel(f, x, num_rows, num_rows, cols);
}

// The input the backend multiplies: x rounded as the kernel rounds it (a copy).
// x: [num_rows, cols]; returns [num_rows, cols]
static float *kernel_input(WeightFormat f, const float *x, int num_rows, int64_t cols) {
  float *out = xmalloc((size_t)(num_rows * cols + 1) * sizeof(float));
  memcpy(out, x, (size_t)(num_rows * cols) * sizeof(float));
  round_like_kernel(f, out, num_rows, cols);
  return out;
}

// One linear call against the reference: bias or not, accumulate or not.
static void check_linear(Backend *be, WeightFormat f, int num_rows, int64_t rows, int64_t cols,
                         bool with_bias, bool accumulate, uint64_t seed) {
  Rng r = {seed};
  TestWeight w = weight_make(f, rows, cols, &r, 1.0f);
  float *x = random_floats(&r, (size_t)(num_rows * cols), 1.0f);   // [num_rows, cols]
  float *bias = random_floats(&r, (size_t)rows, 1.0f);             // [rows]
  float *y = random_floats(&r, (size_t)(num_rows * rows), 1.0f);   // [num_rows, rows]
  float *y0 = xmalloc((size_t)(num_rows * rows) * sizeof(float));  // [num_rows, rows]
  memcpy(y0, y, (size_t)(num_rows * rows) * sizeof(float));
  double *want = xmalloc((size_t)(num_rows * rows) * sizeof(double));
  float *x_seen = kernel_input(f, x, num_rows, cols);  // [num_rows, cols]
  double magnitude = ref_linear(w.dense, rows, cols, x_seen, num_rows, with_bias ? bias : NULL,
                                accumulate ? y0 : NULL, want);
  free(x_seen);
  be->linear(be, &w.m, with_bias ? bias : NULL, x, num_rows, y, accumulate);
  char what[96];
  snprintf(what, sizeof what, "linear fmt %d [%d x %lld] x [%lld]^T", (int)f, num_rows,
           (long long)cols, (long long)rows);
  expect_close(y, want, (size_t)(num_rows * rows), 1e-5 + 1e-6 * magnitude, 1e-5, what);
  weight_free(&w);
  free(x), free(bias), free(y), free(y0), free(want);
}

static void test_linear_f32(void **state) {
  Backend *be = *state;
  const int shapes[][3] = {{1, 1, 1}, {1, 7, 5}, {2, 5, 3}, {3, 17, 33}, {9, 13, 7}, {37, 129, 70}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int v = 0; v < 4; v++)
      check_linear(be, WEIGHT_F32, shapes[i][0], shapes[i][1], shapes[i][2], v & 1, v & 2,
                   100 + i * 4 + v);
}

static void test_linear_bf16(void **state) {
  Backend *be = *state;
  // Up to 2 rows decode row by row; more go through decoded tiles (several at 4096 columns).
  // From 16 input rows and columns a multiple of 32, AMX-BF16 where the CPU has it: one and two
  // row blocks of 16, one and two groups of 16 weight rows, partial ones, several pieces.
  const int shapes[][3] = {{1, 1, 1},     {1, 7, 5},      {3, 17, 33},     {4, 9, 64},
                           {5, 9, 7},     {37, 70, 96},   {6, 300, 4096},  {16, 16, 32},
                           {33, 47, 128}, {64, 100, 512}, {20, 300, 2880}, {300, 48, 2880}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int v = 0; v < 4; v++)
      check_linear(be, WEIGHT_BF16, shapes[i][0], shapes[i][1], shapes[i][2], v & 1, v & 2,
                   200 + i * 4 + v);
}

static void test_linear_mxfp4(void **state) {
  Backend *be = *state;
  // With VNNI, products of up to CPU_MX8ROW_MAX_ROWS input rows read the weight rows in place
  // (the first eight shapes, {1, 64, 32} and {2, 64, 64}: groups of 16 rows with a short last
  // one, 64-byte chunks of 4 blocks with a short last one, the scales of 16 blocks reloaded);
  // more rows decode tiles. From CPU_MXFP4_AMX_MIN_ROWS input rows, AMX-BF16 where the CPU has it
  // (the last four; the last in two chunks of input rows, 256 and 44).
  const int shapes[][3] = {{1, 1, 32},    {1, 5, 64},     {3, 9, 96},     {4, 33, 32},
                           {1, 40, 2880}, {2, 17, 576},   {4, 33, 544},   {3, 20, 1056},
                           {6, 33, 128},  {7, 200, 4096}, {7, 64, 64},    {13, 64, 64},
                           {5, 64, 32},   {1, 64, 32},    {2, 64, 64},    {64, 16, 32},
                           {65, 33, 96},  {300, 40, 512}, {300, 48, 2880}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int v = 0; v < 4; v++)
      check_linear(be, WEIGHT_MXFP4, shapes[i][0], shapes[i][1], shapes[i][2], v & 1, v & 2,
                   300 + i * 4 + v);
}

// Q8 weights (model/q8.h), padding rows and columns included: tile and group tails, one and two
// tiles of 16 rows, several register blocks of 8 input rows, more than 256 input rows.
static void test_linear_q8(void **state) {
  Backend *be = *state;
  // From 16 input rows and columns a multiple of 64, the default backend takes AMX where the CPU
  // has it: one and two row blocks of 16, one and two tiles, a padded last block.
  const int shapes[][3] = {{1, 1, 1},     {1, 7, 5},      {2, 16, 4},   {3, 17, 33},
                           {9, 33, 96},   {1, 65, 512},   {8, 48, 130}, {37, 70, 96},
                           {300, 40, 20}, {6, 300, 2880}, {16, 16, 64}, {17, 33, 128},
                           {33, 48, 192}, {100, 70, 2880}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int v = 0; v < 4; v++)
      check_linear(be, WEIGHT_Q8, shapes[i][0], shapes[i][1], shapes[i][2], v & 1, v & 2,
                   900 + i * 4 + v);
}

// Runs format f's products at each shape {input rows, weight rows, columns} on backends a and b
// from the same random bias and y (accumulate at every other shape, no bias at every third).
// exact: bit for bit; else within float32 rounding of sums of |terms| <= 1 (1e-5 per column).
static void expect_backends_agree(Backend *a, Backend *b, WeightFormat f, const int (*shapes)[3],
                                  size_t num_shapes, uint64_t seed, bool exact) {
  for (size_t i = 0; i < num_shapes; i++) {
    const int m = shapes[i][0];
    const int64_t rows = shapes[i][1], cols = shapes[i][2];
    Rng r = {seed + i};
    TestWeight w = weight_make(f, rows, cols, &r, 1.0f);
    float *x = random_floats(&r, (size_t)(m * cols), 1.0f);
    float *bias = random_floats(&r, (size_t)rows, 1.0f);
    float *ya = random_floats(&r, (size_t)(m * rows), 1.0f);
    float *yb = xmalloc((size_t)(m * rows) * sizeof(float));
    memcpy(yb, ya, (size_t)(m * rows) * sizeof(float));
    const float *with = i % 3 == 2 ? NULL : bias;
    a->linear(a, &w.m, with, x, m, ya, i % 2 == 1);
    b->linear(b, &w.m, with, x, m, yb, i % 2 == 1);
    if (exact)
      assert_memory_equal(ya, yb, (size_t)(m * rows) * sizeof(float));
    else
      for (size_t j = 0; j < (size_t)(m * rows); j++)
        assert_float_equal(ya[j], yb[j], 1e-5 * (double)cols);
    weight_free(&w);
    free(x), free(bias), free(ya), free(yb);
  }
}

// Runs format f's products at each shape on a backend with AMX (the default) and one without
// (GPTOSS_CPU_AMX=0, as on a CPU without it): expect_backends_agree. Prints "skipped" where
// uses_amx says the default backend has no AMX for f (this CPU has none, or Linux refused its
// tiles).
static void check_amx_against_plain(WeightFormat f, bool (*uses_amx)(Backend *),
                                    const int (*shapes)[3], size_t num_shapes, uint64_t seed,
                                    bool exact, const char *what) {
  if (g_kernels != KERNELS_ALL) return;  // the other groups have neither
  // MXFP4: both backends on bf16 inputs (cpu_mx8.c's int8 inputs would differ by more). The
  // user's own settings of both variables are put back afterwards.
  char *user_mxfp4 = getenv("GPTOSS_CPU_MXFP4"), *user_amx = getenv("GPTOSS_CPU_AMX");
  user_mxfp4 = user_mxfp4 ? strdup(user_mxfp4) : NULL;
  user_amx = user_amx ? strdup(user_amx) : NULL;
  if (f == WEIGHT_MXFP4) setenv("GPTOSS_CPU_MXFP4", "bf16", 1);
  setenv("GPTOSS_CPU_AMX", "0", 1);
  Backend *plain = cpu_backend_create(2);
  unsetenv("GPTOSS_CPU_AMX");
  Backend *amx = cpu_backend_create(2);
  if (user_mxfp4)
    setenv("GPTOSS_CPU_MXFP4", user_mxfp4, 1);
  else
    unsetenv("GPTOSS_CPU_MXFP4");
  if (user_amx) setenv("GPTOSS_CPU_AMX", user_amx, 1);
  free(user_mxfp4), free(user_amx);
  assert_false(uses_amx(plain));
  if (!uses_amx(amx)) {
    print_message("# skipped: no %s (this CPU has none, or Linux refused its tiles)\n", what);
  } else {
    expect_backends_agree(amx, plain, f, shapes, num_shapes, seed, exact);
    print_message("# %s against the AVX-512 kernel, %s, at %zu shapes\n", what,
                  exact ? "bit for bit" : "within float32 rounding", num_shapes);
  }
  amx->destroy(amx);
  plain->destroy(plain);
}

// Q8 on AMX-INT8 gives the VNNI path's results bit for bit (the same int32 sums, the same
// epilogue), input rows and weight rows at every kind of edge, from 8 input rows (cpu_q8.c's
// CPU_Q8_AMX_MIN_ROWS: 8 .. 15 are padded to one tile).
static void test_linear_q8_amx_matches_vnni(void **state) {
  (void)state;
  const int shapes[][3] = {{8, 16, 64},     {11, 33, 512},  {16, 16, 64},  {17, 33, 128},
                           {31, 16, 64},    {32, 32, 64},   {33, 48, 192}, {47, 17, 2880},
                           {100, 70, 2880}, {300, 100, 512}};
  check_amx_against_plain(WEIGHT_Q8, cpu_backend_uses_amx, shapes, sizeof shapes / sizeof shapes[0],
                          1300, true, "AMX-INT8");
}

// Q8 on AVX2 gives the default backend's results (VNNI, or AMX-INT8 from 8 rows) bit for bit:
// the same int8 inputs, the same integer sums, the same epilogue. Register blocks of 4 and 2
// tiles by 1 row and 1 tile by up to 4, short last tiles and groups, several chunks of 256 input
// rows.
static void test_linear_q8_avx2_matches_vnni(void **state) {
  if (g_kernels != KERNELS_ALL) return;  // the default group has both
  Backend *fast = *state, *avx2 = cpu_backend_create_avx2(2);
  if (!avx2 || !__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512vnni")) {
    print_message("# skipped: this CPU lacks AVX2 or AVX-512 VNNI\n");
    if (avx2) avx2->destroy(avx2);
    return;
  }
  const int shapes[][3] = {{1, 16, 64},    {1, 33, 2880}, {1, 100, 130}, {1, 1100, 64},
                           {2, 17, 96},    {3, 40, 5},    {4, 64, 512},  {5, 48, 130},
                           {9, 100, 2880}, {300, 70, 512}};
  expect_backends_agree(fast, avx2, WEIGHT_Q8, shapes, sizeof shapes / sizeof shapes[0], 1500,
                        true);
  avx2->destroy(avx2);
}

// BF16 on AMX-BF16: other summation orders than vdpbf16ps on the same rounded inputs.
static void test_linear_bf16_amx_near_avx512(void **state) {
  (void)state;
  const int shapes[][3] = {{16, 16, 32}, {31, 33, 64}, {64, 200, 2880}, {300, 48, 512}};
  check_amx_against_plain(WEIGHT_BF16, cpu_backend_uses_amx_bf16, shapes,
                          sizeof shapes / sizeof shapes[0], 1400, false, "AMX-BF16");
}

// MXFP4 on AMX-BF16 (each block decoded to bf16 as the weights are transposed): within float32
// rounding of the AVX-512 BF16 kernel on the same rounded inputs.
static void test_linear_mxfp4_amx_near_avx512(void **state) {
  (void)state;
  // The last two in two chunks of input rows (256 + 44 at 2880 columns; 512 + 88 at 1024).
  const int shapes[][3] = {{16, 16, 32},   {31, 33, 64},    {64, 200, 2880},
                           {300, 48, 512}, {300, 48, 2880}, {600, 40, 1024}};
  check_amx_against_plain(WEIGHT_MXFP4, cpu_backend_uses_amx_bf16, shapes,
                          sizeof shapes / sizeof shapes[0], 1450, false, "AMX-BF16 (MXFP4)");
}

// Hand-made MXFP4 bytes: low nibble = even element, scale bias 127, blocks along the columns.
static void test_linear_mxfp4_hand(void **state) {
  Backend *be = *state;
  uint8_t blocks[2][2][16] = {{{0}}};               // [rows, cols / 32, 16]
  uint8_t scales[2][2] = {{128, 126}, {127, 127}};  // [rows, cols / 32]
  // W[0][0] = 0.5 * 2 = 1, W[0][1] = 1.0 * 2 = 2; W[0][62] = -0.5 / 2, W[0][63] = -6 / 2;
  // W[1][6] = -4, W[1][7] = 6; every other weight 0.
  blocks[0][0][0] = 0x21;
  blocks[0][1][15] = 0xF9;
  blocks[1][0][3] = 0x7E;
  WeightMatrix w = {
      .format = WEIGHT_MXFP4, .rows = 2, .cols = 64, .data = blocks, .scales = scales};
  // x = 1, 2, ..., with 127 ending each block: exact in bf16 and in int8 steps of max / 127.
  float x[5][64], y[5][2];
  for (int m = 0; m < 5; m++)
    for (int c = 0; c < 64; c++) x[m][c] = c % 32 == 31 ? 127.0f : (float)(c + 1);
  for (int num_rows = 1; num_rows <= 5; num_rows += 4) {  // row-by-row and tiled paths
    be->linear(be, &w, NULL, &x[0][0], num_rows, &y[0][0], false);
    for (int m = 0; m < num_rows; m++) {
      assert_true(y[m][0] == 1.0f * 1 + 2.0f * 2 - 0.25f * 63 - 3.0f * 127);  // -391.75
      assert_true(y[m][1] == -4.0f * 7 + 6.0f * 8);                           // 20
    }
  }
}

// ---------------------------------------------------------------------------------------------
// embed, rmsnorm, rope, kv_write, gather_rows

static void test_embed(void **state) {
  Backend *be = *state;
  for (WeightFormat f = WEIGHT_F32; f <= WEIGHT_MXFP4; f++) {
    Rng r = {7 + f};
    TestWeight table = weight_make(f, 11, 64, &r, 1.0f);
    const uint32_t ids[] = {3, 0, 10, 3};
    float out[4 * 64];
    be->embed(be, &table.m, ids, 4, out);
    for (int t = 0; t < 4; t++)
      for (int c = 0; c < 64; c++) assert_true(out[t * 64 + c] == table.dense[ids[t] * 64 + c]);
    weight_free(&table);
  }
}

static void test_rmsnorm(void **state) {
  Backend *be = *state;
  const int shapes[][2] = {{1, 1}, {3, 7}, {2, 33}, {5, 2880}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const int rows = shapes[i][0], dim = shapes[i][1];
    Rng r = {400 + i};
    float *x = random_floats(&r, (size_t)rows * dim, 3.0f);
    float *scale = random_floats(&r, (size_t)dim, 2.0f);
    float *out = xmalloc((size_t)rows * dim * sizeof(float));
    double *want = xmalloc((size_t)rows * dim * sizeof(double));
    for (int row = 0; row < rows; row++) {
      double ss = 0;
      for (int c = 0; c < dim; c++) ss += (double)x[row * dim + c] * x[row * dim + c];
      double inv = 1.0 / sqrt(ss / dim + 1e-5);
      for (int c = 0; c < dim; c++) want[row * dim + c] = x[row * dim + c] * inv * scale[c];
    }
    be->rmsnorm(be, x, scale, rows, dim, out);
    expect_close(out, want, (size_t)rows * dim, 1e-5, 1e-5, "rmsnorm");
    be->rmsnorm(be, x, scale, rows, dim, x);  // in place
    expect_close(x, want, (size_t)rows * dim, 1e-5, 1e-5, "rmsnorm in place");
    free(x), free(scale), free(out), free(want);
  }
}

static void test_rope_hand(void **state) {
  Backend *be = *state;
  // head_dim 8: pairs (i, i + 4). Three heads rotated in rows of stride 29 (5 spare floats).
  RopeTable rope = {
      .half_dim = 4, .inv_freq = {(float)M_PI_2, 0.5f, 0.25f, 0.01f}, .concentration = 1.25f};
  enum { ROWS = 4, STRIDE = 29, HEADS = 3, D = 8 };
  const int32_t positions[ROWS] = {0, 1, 3, 1000};
  Rng r = {500};
  float x[ROWS * STRIDE], x0[ROWS * STRIDE];
  fill(&r, x, ROWS * STRIDE, 1.0f);
  memcpy(x0, x, sizeof x);
  be->rope(be, x, ROWS, STRIDE, HEADS, D, positions, &rope);
  double want[ROWS * STRIDE];
  for (int row = 0; row < ROWS; row++) {
    for (int c = HEADS * D; c < STRIDE; c++) want[row * STRIDE + c] = x0[row * STRIDE + c];
    for (int h = 0; h < HEADS; h++)
      for (int i = 0; i < 4; i++) {
        // The angle in float32, as the reference computes it (at position 1000 a float angle
        // near 1571 is only good to 1e-4); cos and sin in double.
        double angle = (float)positions[row] * rope.inv_freq[i];
        double co = cos(angle) * 1.25, si = sin(angle) * 1.25;
        const float *u = x0 + row * STRIDE + h * D;
        want[row * STRIDE + h * D + i] = u[i] * co - u[i + 4] * si;
        want[row * STRIDE + h * D + i + 4] = u[i + 4] * co + u[i] * si;
      }
  }
  expect_close(x, want, ROWS * STRIDE, 1e-5, 1e-5, "rope");
  // Position 0 only scales by the concentration; spare floats are untouched.
  for (int c = 0; c < HEADS * D; c++) assert_true(x[c] == x0[c] * 1.25f);
  for (int row = 0; row < ROWS; row++)
    for (int c = HEADS * D; c < STRIDE; c++)
      assert_true(x[row * STRIDE + c] == x0[row * STRIDE + c]);
  // Position 1, pair 0 turns by pi/2: (a, b) -> (-b, a) times the concentration.
  const float *u0 = x0 + STRIDE, *u1 = x + STRIDE;
  assert_float_equal(u1[0], -u0[4] * 1.25f, 1e-6);
  assert_float_equal(u1[4], u0[0] * 1.25f, 1e-6);
}

static void test_kv_write_and_gather(void **state) {
  Backend *be = *state;
  enum { LAYERS = 2, BLOCKS = 3, BS = 8, KVH = 2, D = 4, KV_DIM = KVH * D, STRIDE = 13 };
  float *k[LAYERS], *v[LAYERS];
  void *k_layers[LAYERS], *v_layers[LAYERS];
  for (int l = 0; l < LAYERS; l++) {
    k_layers[l] = k[l] = xcalloc(BLOCKS * BS * KV_DIM, sizeof(float));
    v_layers[l] = v[l] = xcalloc(BLOCKS * BS * KV_DIM, sizeof(float));
  }
  KvCache kv = {.backend = be,
                .num_layers = LAYERS,
                .num_blocks = BLOCKS,
                .block_size = BS,
                .num_kv_heads = KVH,
                .head_dim = D,
                .dtype = KV_F32,
                .k = k_layers,
                .v = v_layers};
  Rng r = {600};
  float kin[4 * STRIDE], vin[4 * STRIDE];
  fill(&r, kin, 4 * STRIDE, 1.0f);
  fill(&r, vin, 4 * STRIDE, 1.0f);
  const int64_t slots[4] = {5, 0, 17, -1};  // the last token is padding: not stored
  be->kv_write(be, &kv, 1, kin, vin, STRIDE, slots, 4);
  for (int s = 0; s < BLOCKS * BS; s++)
    for (int c = 0; c < KV_DIM; c++) {
      int t = s == 5 ? 0 : s == 0 ? 1 : s == 17 ? 2 : -1;
      assert_true(k[1][s * KV_DIM + c] == (t < 0 ? 0.0f : kin[t * STRIDE + c]));
      assert_true(v[1][s * KV_DIM + c] == (t < 0 ? 0.0f : vin[t * STRIDE + c]));
      assert_true(k[0][s * KV_DIM + c] == 0.0f && v[0][s * KV_DIM + c] == 0.0f);
    }
  const int32_t rows[3] = {2, 2, 0};
  float out[3 * STRIDE];
  be->gather_rows(be, kin, rows, 3, STRIDE, out);
  for (int i = 0; i < 3; i++)
    assert_memory_equal(out + i * STRIDE, kin + rows[i] * STRIDE, STRIDE * sizeof(float));
  for (int l = 0; l < LAYERS; l++) free(k[l]), free(v[l]);
}

// ---------------------------------------------------------------------------------------------
// attention: a harness with per-sequence K, V, Q (the truth), a paged cache written through
// kv_write from a qkv-shaped buffer, and a naive reference over the unpaged arrays.

enum { ATTN_MAX_SEQS = 4, ATTN_LAYERS = 2, ATTN_LAYER = 1 };

typedef struct {
  int num_heads, num_kv_heads, head_dim, window, block_size;
  float scale;
  int num_seqs;
  int len[ATTN_MAX_SEQS];   // tokens of each sequence (all of them have K, V and Q)
  float *k[ATTN_MAX_SEQS];  // [len, kv_dim]
  float *v[ATTN_MAX_SEQS];  // [len, kv_dim]
  float *q[ATTN_MAX_SEQS];  // [len, q_dim]
  float *sinks;             // [num_heads]
  // the paged cache and where each sequence's blocks are
  KvCache kv;
  int32_t *tables;  // [num_seqs, max_blocks]
  int max_blocks;
} Attn;

static void attn_init(Attn *a, int heads, int kv_heads, int head_dim, int window, const int *lens,
                      int num_seqs, uint64_t seed) {
  memset(a, 0, sizeof(*a));
  a->num_heads = heads, a->num_kv_heads = kv_heads, a->head_dim = head_dim;
  a->window = window, a->block_size = 16, a->num_seqs = num_seqs;
  a->scale = 1.0f / sqrtf((float)head_dim);
  Rng r = {seed};
  for (int s = 0; s < num_seqs; s++) {
    a->len[s] = lens[s];
    a->k[s] = random_floats(&r, (size_t)lens[s] * kv_heads * head_dim, 2.0f);
    a->v[s] = random_floats(&r, (size_t)lens[s] * kv_heads * head_dim, 1.0f);
    a->q[s] = random_floats(&r, (size_t)lens[s] * heads * head_dim, 2.0f);
  }
  a->sinks = random_floats(&r, (size_t)heads, 2.0f);
}

// Allocates the cache; block ids are handed out in order, or shuffled when shuffle_seed != 0.
static void attn_cache_init(Attn *a, uint64_t shuffle_seed) {
  const int bs = a->block_size, kv_dim = a->num_kv_heads * a->head_dim;
  int total = 3;  // a few spare blocks that nobody uses
  a->max_blocks = 1;
  for (int s = 0; s < a->num_seqs; s++) {
    int nb = (a->len[s] + bs - 1) / bs;
    total += nb;
    if (nb > a->max_blocks) a->max_blocks = nb;
  }
  int32_t *ids = xmalloc((size_t)total * sizeof(int32_t));
  for (int i = 0; i < total; i++) ids[i] = i;
  Rng r = {shuffle_seed};
  for (int i = total - 1; shuffle_seed && i > 0; i--) {
    int j = (int)(rng_next(&r) % (uint64_t)(i + 1));
    int32_t t = ids[i];
    ids[i] = ids[j], ids[j] = t;
  }
  a->tables = xcalloc((size_t)a->num_seqs * a->max_blocks, sizeof(int32_t));
  for (int s = 0, next = 0; s < a->num_seqs; s++)
    for (int b = 0; b < (a->len[s] + bs - 1) / bs; b++)
      a->tables[s * a->max_blocks + b] = ids[next++];
  free(ids);
  a->kv = (KvCache){.num_layers = ATTN_LAYERS,
                    .num_blocks = total,
                    .block_size = bs,
                    .num_kv_heads = a->num_kv_heads,
                    .head_dim = a->head_dim,
                    .dtype = KV_F32};
  a->kv.k = xcalloc(ATTN_LAYERS, sizeof(float *));
  a->kv.v = xcalloc(ATTN_LAYERS, sizeof(float *));
  for (int l = 0; l < ATTN_LAYERS; l++) {
    a->kv.k[l] = xcalloc((size_t)total * bs * kv_dim, sizeof(float));
    a->kv.v[l] = xcalloc((size_t)total * bs * kv_dim, sizeof(float));
  }
}

static void attn_cache_free(Attn *a) {
  for (int l = 0; l < ATTN_LAYERS; l++) free(a->kv.k[l]), free(a->kv.v[l]);
  free(a->kv.k), free(a->kv.v), free(a->tables);
  a->kv.k = a->kv.v = NULL, a->tables = NULL;
}

static void attn_free(Attn *a) {
  if (a->tables) attn_cache_free(a);
  for (int s = 0; s < a->num_seqs; s++) free(a->k[s]), free(a->v[s]), free(a->q[s]);
  free(a->sinks);
}

// One forward step: sequences which[i] get new tokens start[i] .. end[i] - 1 (the earlier ones
// are already cached). Writes their K/V through kv_write and their attention output into out
// [sum of new tokens, q_dim], in the order of which.
static void attn_step(Backend *be, Attn *a, const int *which, const int *start, const int *end,
                      int n, float *out) {
  const int q_dim = a->num_heads * a->head_dim, kv_dim = a->num_kv_heads * a->head_dim;
  const int qkv_dim = q_dim + 2 * kv_dim, bs = a->block_size;
  int num_tokens = 0;
  for (int i = 0; i < n; i++) num_tokens += end[i] - start[i];
  float *qkv = xmalloc((size_t)num_tokens * qkv_dim * sizeof(float));  // [T, q | k | v]
  int32_t *positions = xmalloc((size_t)num_tokens * sizeof(int32_t));
  int64_t *slots = xmalloc((size_t)num_tokens * sizeof(int64_t));
  int32_t query_start[ATTN_MAX_SEQS + 1], seq_lens[ATTN_MAX_SEQS];
  int32_t *tables = xmalloc((size_t)n * a->max_blocks * sizeof(int32_t));
  int t = 0;
  for (int i = 0; i < n; i++) {
    const int s = which[i];
    query_start[i] = t;
    seq_lens[i] = end[i];
    memcpy(tables + i * a->max_blocks, a->tables + s * a->max_blocks,
           (size_t)a->max_blocks * sizeof(int32_t));
    for (int p = start[i]; p < end[i]; p++, t++) {
      memcpy(qkv + (size_t)t * qkv_dim, a->q[s] + (size_t)p * q_dim, q_dim * sizeof(float));
      memcpy(qkv + (size_t)t * qkv_dim + q_dim, a->k[s] + (size_t)p * kv_dim,
             kv_dim * sizeof(float));
      memcpy(qkv + (size_t)t * qkv_dim + q_dim + kv_dim, a->v[s] + (size_t)p * kv_dim,
             kv_dim * sizeof(float));
      positions[t] = p;
      slots[t] = (int64_t)a->tables[s * a->max_blocks + p / bs] * bs + p % bs;
    }
  }
  query_start[n] = t;
  Batch batch = {.num_seqs = n,
                 .num_tokens = num_tokens,
                 .positions = positions,
                 .slot_mapping = slots,
                 .query_start = query_start,
                 .seq_lens = seq_lens,
                 .block_tables = tables,
                 .max_blocks_per_seq = a->max_blocks};
  be->kv_write(be, &a->kv, ATTN_LAYER, qkv + q_dim, qkv + q_dim + kv_dim, qkv_dim, slots,
               num_tokens);
  AttentionArgs args = {.q = qkv,
                        .q_stride = qkv_dim,
                        .kv = &a->kv,
                        .layer = ATTN_LAYER,
                        .sinks = a->sinks,
                        .batch = &batch,
                        .num_heads = a->num_heads,
                        .num_kv_heads = a->num_kv_heads,
                        .head_dim = a->head_dim,
                        .sliding_window = a->window,
                        .scale = a->scale,
                        .out = out};
  be->attention(be, &args);
  free(qkv), free(positions), free(slots), free(tables);
}

// Naive attention with sinks of sequence s's query at position p.   out: [q_dim]
static void attn_ref(const Attn *a, int s, int p, double *out) {
  const int D = a->head_dim, group = a->num_heads / a->num_kv_heads, kv_dim = a->num_kv_heads * D;
  const int lo = a->window > 0 && p - a->window + 1 > 0 ? p - a->window + 1 : 0;
  double *logit = xmalloc((size_t)(p + 1) * sizeof(double));
  for (int h = 0; h < a->num_heads; h++) {
    const int kvh = h / group;
    const float *q = a->q[s] + (size_t)p * a->num_heads * D + h * D;
    double m = a->sinks[h];
    for (int j = lo; j <= p; j++) {
      double dot = 0;
      for (int d = 0; d < D; d++) dot += (double)q[d] * a->k[s][(size_t)j * kv_dim + kvh * D + d];
      logit[j] = dot * a->scale;
      if (logit[j] > m) m = logit[j];
    }
    double denom = exp(a->sinks[h] - m);
    for (int j = lo; j <= p; j++) denom += exp(logit[j] - m);
    for (int d = 0; d < D; d++) {
      double o = 0;
      for (int j = lo; j <= p; j++)
        o += exp(logit[j] - m) * a->v[s][(size_t)j * kv_dim + kvh * D + d];
      out[h * D + d] = o / denom;
    }
  }
  free(logit);
}

// Checks out (from attn_step with the same which/start/end) against the reference.
static void attn_expect_ref(const Attn *a, const int *which, const int *start, const int *end,
                            int n, const float *out) {
  const int q_dim = a->num_heads * a->head_dim;
  double *want = xmalloc((size_t)q_dim * sizeof(double));
  for (int i = 0, t = 0; i < n; i++)
    for (int p = start[i]; p < end[i]; p++, t++) {
      attn_ref(a, which[i], p, want);
      char what[64];
      snprintf(what, sizeof what, "attention seq %d pos %d", which[i], p);
      expect_close(out + (size_t)t * q_dim, want, (size_t)q_dim, 1e-5, 1e-4, what);
    }
  free(want);
}

// All tokens of sequences which[0..n) as one prefill call.
static float *attn_prefill(Backend *be, Attn *a, const int *which, int n) {
  int start[ATTN_MAX_SEQS] = {0}, end[ATTN_MAX_SEQS], total = 0;
  for (int i = 0; i < n; i++) end[i] = a->len[which[i]], total += end[i];
  float *out = xmalloc((size_t)total * a->num_heads * a->head_dim * sizeof(float));
  attn_step(be, a, which, start, end, n, out);
  return out;
}

static void test_attention_single_sequence(void **state) {
  Backend *be = *state;
  const int lens[] = {37};
  const int which[] = {0}, start[] = {0}, end[] = {37};
  Attn a;
  attn_init(&a, 4, 2, 16, 0, lens, 1, 700);
  attn_cache_init(&a, 0);
  float *out = attn_prefill(be, &a, which, 1);
  attn_expect_ref(&a, which, start, end, 1, out);
  free(out);
  attn_free(&a);
}

// With every value 1 the output is the keys' share of the softmax: 1 - P(sink) < 1; a sink of
// -1e30 takes nothing.
static void test_attention_sinks(void **state) {
  Backend *be = *state;
  const int lens[] = {20}, which[] = {0}, start[] = {0}, end[] = {20};
  Attn a;
  attn_init(&a, 2, 1, 8, 0, lens, 1, 710);
  for (int i = 0; i < 20 * 8; i++) a.v[0][i] = 1.0f;
  a.sinks[0] = 3.0f, a.sinks[1] = -1e30f;
  attn_cache_init(&a, 0);
  float *out = attn_prefill(be, &a, which, 1);
  attn_expect_ref(&a, which, start, end, 1, out);
  for (int p = 0; p < 20; p++) {
    double want0 = 0;  // 1 - P(sink) for head 0, in double
    double m = 3.0, logit[20];
    for (int j = 0; j <= p; j++) {
      double dot = 0;
      for (int d = 0; d < 8; d++) dot += (double)a.q[0][p * 16 + d] * a.k[0][j * 8 + d];
      logit[j] = dot * a.scale;
      if (logit[j] > m) m = logit[j];
    }
    double keys = 0;
    for (int j = 0; j <= p; j++) keys += exp(logit[j] - m);
    want0 = keys / (keys + exp(3.0 - m));
    for (int d = 0; d < 8; d++) {
      assert_true(out[p * 16 + d] < 1.0f);
      assert_float_equal(out[p * 16 + d], want0, 1e-5);
      assert_float_equal(out[p * 16 + 8 + d], 1.0, 1e-6);
    }
  }
  free(out);
  attn_free(&a);
}

// Window w: for the query at position i, key i - w is invisible and key i - w + 1 visible. With
// zero keys every visible key has the same weight, and one-hot values show which ones count.
static void test_attention_window_boundary(void **state) {
  Backend *be = *state;
  enum { L = 40, W = 4, D = 48 };
  const int lens[] = {L}, which[] = {0};
  Attn a;
  attn_init(&a, 1, 1, D, W, lens, 1, 720);
  memset(a.k[0], 0, L * D * sizeof(float));
  memset(a.v[0], 0, L * D * sizeof(float));
  for (int j = 0; j < L && j < D; j++) a.v[0][j * D + j] = 1.0f;
  a.sinks[0] = 0.0f;
  attn_cache_init(&a, 0);
  float *out = attn_prefill(be, &a, which, 1);
  for (int i = 0; i < L; i++) {
    const int visible = i + 1 < W ? i + 1 : W;
    for (int j = 0; j < D; j++) {
      const bool seen = j <= i && i - j < W;
      assert_float_equal(out[i * D + j], seen ? 1.0 / (visible + 1) : 0.0, 1e-6);
    }
  }
  assert_true(out[9 * D + 5] == 0.0f && out[9 * D + 6] > 0.0f);  // i = 9: key 5 out, key 6 in
  free(out);
  attn_free(&a);

  // Random data across block boundaries against the reference.
  const int lens2[] = {45}, start[] = {0}, end[] = {45};
  attn_init(&a, 4, 2, 16, 5, lens2, 1, 721);
  attn_cache_init(&a, 9);
  out = attn_prefill(be, &a, which, 1);
  attn_expect_ref(&a, which, start, end, 1, out);
  free(out);
  attn_free(&a);
}

// Query head h reads kv head h / (num_heads / num_kv_heads): heads 0, 1 -> kv 0; 2, 3 -> kv 1.
static void test_attention_gqa(void **state) {
  Backend *be = *state;
  enum { L = 9, D = 8 };
  const int lens[] = {L}, which[] = {0}, start[] = {0}, end[] = {L};
  Attn a;
  attn_init(&a, 4, 2, D, 0, lens, 1, 730);
  for (int j = 0; j < L; j++)
    for (int d = 0; d < D; d++) a.v[0][j * 2 * D + d] = 1.0f, a.v[0][j * 2 * D + D + d] = 2.0f;
  for (int h = 0; h < 4; h++) a.sinks[h] = -1e30f;
  attn_cache_init(&a, 0);
  float *out = attn_prefill(be, &a, which, 1);
  for (int t = 0; t < L; t++)
    for (int h = 0; h < 4; h++)
      for (int d = 0; d < D; d++) assert_float_equal(out[(t * 4 + h) * D + d], h < 2 ? 1 : 2, 1e-6);
  free(out);
  attn_free(&a);

  attn_init(&a, 8, 2, 16, 0, lens, 1, 731);  // groups of 4, random data
  attn_cache_init(&a, 0);
  out = attn_prefill(be, &a, which, 1);
  attn_expect_ref(&a, which, start, end, 1, out);
  free(out);
  attn_free(&a);

  attn_init(&a, 24, 2, 16, 0, lens, 1, 732);  // groups of 12: a block of 8 heads and one of 4
  attn_cache_init(&a, 0);
  out = attn_prefill(be, &a, which, 1);
  attn_expect_ref(&a, which, start, end, 1, out);
  free(out);
  attn_free(&a);
}

// Shuffled, non-contiguous blocks give bit-identical results to blocks in order.
static void test_attention_paged_equals_contiguous(void **state) {
  Backend *be = *state;
  const int lens[] = {50, 17}, which[] = {0, 1};
  const size_t n = (size_t)(50 + 17) * 4 * 16;
  Attn a;
  attn_init(&a, 4, 2, 16, 0, lens, 2, 740);
  attn_cache_init(&a, 0);
  float *contiguous = attn_prefill(be, &a, which, 2);
  attn_cache_free(&a);
  attn_cache_init(&a, 12345);
  assert_true(a.tables[0] != 0 || a.tables[1] != 1);  // really shuffled
  float *paged = attn_prefill(be, &a, which, 2);
  assert_memory_equal(contiguous, paged, n * sizeof(float));
  free(contiguous), free(paged);
  attn_free(&a);
}

// Three sequences in one call give bit-identical rows to each run alone.
static void test_attention_batch_equals_alone(void **state) {
  Backend *be = *state;
  const int lens[] = {23, 1, 40}, all[] = {0, 1, 2}, start[] = {0, 0, 0}, end[] = {23, 1, 40};
  const int row = 4 * 16;
  Attn a;
  attn_init(&a, 4, 1, 16, 7, lens, 3, 750);
  attn_cache_init(&a, 77);
  float *together = attn_prefill(be, &a, all, 3);
  attn_expect_ref(&a, all, start, end, 3, together);
  for (int s = 0, offset = 0; s < 3; offset += lens[s], s++) {
    float *alone = attn_prefill(be, &a, &all[s], 1);
    assert_memory_equal(alone, together + (size_t)offset * row,
                        (size_t)lens[s] * row * sizeof(float));
    free(alone);
  }
  free(together);
  attn_free(&a);
}

// Prefill 20 tokens, then decode the 21st against the cache: equal to the reference and to the
// last row of a 21-token prefill.
static void test_attention_decode_after_prefill(void **state) {
  Backend *be = *state;
  const int lens[] = {21}, which[] = {0};
  const int row = 8 * 16;
  Attn a;
  attn_init(&a, 8, 2, 16, 0, lens, 1, 760);
  attn_cache_init(&a, 5);
  float *prefill = xmalloc(20 * row * sizeof(float));
  float decode[8 * 16];
  int start[] = {0}, end[] = {20};
  attn_step(be, &a, which, start, end, 1, prefill);
  start[0] = 20, end[0] = 21;
  attn_step(be, &a, which, start, end, 1, decode);
  attn_expect_ref(&a, which, start, end, 1, decode);
  float *full = attn_prefill(be, &a, which, 1);
  assert_memory_equal(decode, full + 20 * row, row * sizeof(float));
  free(prefill), free(full);
  attn_free(&a);
}

// One call mixing a prefill chunk after a cached prefix with two decode tokens (sliding window).
static void test_attention_mixed_batch(void **state) {
  Backend *be = *state;
  const int lens[] = {40, 6, 34}, which[] = {0, 1, 2};
  const int row = 4 * 32;
  Attn a;
  attn_init(&a, 4, 2, 32, 8, lens, 3, 770);
  attn_cache_init(&a, 3);
  const int start1[] = {0, 0, 0}, end1[] = {18, 5, 33};
  float *out1 = xmalloc((18 + 5 + 33) * row * sizeof(float));
  attn_step(be, &a, which, start1, end1, 3, out1);
  attn_expect_ref(&a, which, start1, end1, 3, out1);
  const int start2[] = {18, 5, 33}, end2[] = {40, 6, 34};
  float *out2 = xmalloc((22 + 1 + 1) * row * sizeof(float));
  attn_step(be, &a, which, start2, end2, 3, out2);
  attn_expect_ref(&a, which, start2, end2, 3, out2);
  free(out1), free(out2);
  attn_free(&a);
}

// GPT-OSS's own shape (16 query heads, 2 KV heads of 64, a window of 128 on sliding layers) over
// more than one window: a prefill of 150 tokens, a chunk of 30, then two decode steps.
static void test_attention_gpt_oss_shape(void **state) {
  Backend *be = *state;
  const int lens[] = {182, 37}, which[] = {0, 1};
  for (int window = 0; window <= 128; window += 128) {
    Attn a;
    attn_init(&a, 16, 2, 64, window, lens, 2, 780 + window);
    for (int h = 0; h < 16; h++) a.sinks[h] *= 0.25f;  // keys, not the sink, take most weight
    attn_cache_init(&a, 11);
    const int start[3][2] = {{0, 0}, {150, 30}, {180, 35}},
              end[3][2] = {{150, 30}, {180, 35}, {182, 37}};
    float *out = xmalloc((150 + 30) * 16 * 64 * sizeof(float));
    for (int step = 0; step < 3; step++) {
      attn_step(be, &a, which, start[step], end[step], 2, out);
      attn_expect_ref(&a, which, start[step], end[step], 2, out);
    }
    free(out);
    attn_free(&a);
  }
}

// ---------------------------------------------------------------------------------------------
// moe: a layer of random experts in one format, and a naive per-token reference.

typedef struct {
  GptOssConfig c;
  LayerWeights layer;
  TestWeight gate;
  TestWeight *mlp1, *mlp2;  // [num_experts]
  WeightMatrix *m1, *m2;    // [num_experts] views for LayerWeights
  float *gate_bias;         // [num_experts]
  float *mlp1_bias;         // [num_experts, 2 * inter]
  float *mlp2_bias;         // [num_experts, hidden]
} Moe;

static void moe_init(Moe *m, int hidden, int experts, int k, int inter, WeightFormat f, Rng *r) {
  memset(m, 0, sizeof(*m));
  m->c = (GptOssConfig){.num_experts = experts,
                        .experts_per_token = k,
                        .hidden_size = hidden,
                        .intermediate_size = inter,
                        .swiglu_limit = 7.0f};
  // The default backend rounds a BF16 router's input to bf16, which may swap two nearly tied
  // experts of this random data: its router is float32, so routing is exact on both backends.
  const WeightFormat router =
      g_kernels == KERNELS_ALL || f == WEIGHT_F32 ? WEIGHT_F32 : WEIGHT_BF16;
  m->gate = weight_make(router, experts, hidden, r, 1.0f);
  m->gate_bias = random_floats(r, (size_t)experts, 1.0f);
  m->mlp1 = xcalloc((size_t)experts, sizeof(TestWeight));
  m->mlp2 = xcalloc((size_t)experts, sizeof(TestWeight));
  m->m1 = xcalloc((size_t)experts, sizeof(WeightMatrix));
  m->m2 = xcalloc((size_t)experts, sizeof(WeightMatrix));
  for (int e = 0; e < experts; e++) {
    m->mlp1[e] = weight_make(f, 2 * inter, hidden, r, 1.0f);
    m->mlp2[e] = weight_make(f, hidden, inter, r, 1.0f);
    m->m1[e] = m->mlp1[e].m, m->m2[e] = m->mlp2[e].m;
  }
  m->mlp1_bias = random_floats(r, (size_t)experts * 2 * inter, 1.0f);
  m->mlp2_bias = random_floats(r, (size_t)experts * hidden, 1.0f);
  m->layer = (LayerWeights){.gate = m->gate.m,
                            .gate_bias = m->gate_bias,
                            .mlp1 = m->m1,
                            .mlp1_bias = m->mlp1_bias,
                            .mlp2 = m->m2,
                            .mlp2_bias = m->mlp2_bias};
}

static void moe_free(Moe *m) {
  weight_free(&m->gate);
  for (int e = 0; e < m->c.num_experts; e++) weight_free(&m->mlp1[e]), weight_free(&m->mlp2[e]);
  free(m->mlp1), free(m->mlp2), free(m->m1), free(m->m2);
  free(m->gate_bias), free(m->mlp1_bias), free(m->mlp2_bias);
}

static double ref_swiglu(double g, double lin, double limit) {
  g = g < limit ? g : limit;
  lin = lin < -limit ? -limit : lin > limit ? limit : lin;
  return g / (1.0 + exp(-1.702 * g)) * (lin + 1.0);
}

// out[t] = residual[t] + sum over token t's top-k experts e of w_e (mlp2_e(swiglu(mlp1_e x)) + b),
// with mlp1's and mlp2's inputs rounded as the backend's kernels round them for an expert with
// that many tokens.  x, residual, out: [num_tokens, hidden]
static void ref_moe(const Moe *m, const float *x, const float *residual, int num_tokens,
                    double limit, double *out) {
  const int H = m->c.hidden_size, E = m->c.num_experts, k = m->c.experts_per_token;
  const int I = m->c.intermediate_size;
  double *logit = xmalloc((size_t)num_tokens * E * sizeof(double));  // [num_tokens, E]
  double *h = xmalloc(2 * (size_t)I * sizeof(double)), *act = xmalloc((size_t)I * sizeof(double));
  float *xr = xmalloc((size_t)H * sizeof(float)), *ar = xmalloc((size_t)I * sizeof(float));
  int *top = xmalloc((size_t)num_tokens * k * sizeof(int));  // [num_tokens, k]
  int tokens_of[64] = {0};                                   // [E]
  for (int t = 0; t < num_tokens; t++) {
    const float *xt = x + (size_t)t * H;
    double *lt = logit + (size_t)t * E;
    int *tt = top + (size_t)t * k;
    for (int e = 0; e < E; e++) {
      lt[e] = m->gate_bias[e];
      for (int c = 0; c < H; c++) lt[e] += (double)xt[c] * m->gate.dense[(size_t)e * H + c];
    }
    for (int r = 0; r < k; r++) {  // the largest not yet taken; the lower index on ties
      tt[r] = -1;
      for (int e = 0; e < E; e++) {
        bool taken = false;
        for (int q = 0; q < r; q++) taken = taken || tt[q] == e;
        if (!taken && (tt[r] < 0 || lt[e] > lt[tt[r]])) tt[r] = e;
      }
      tokens_of[tt[r]]++;
    }
  }
  for (int t = 0; t < num_tokens; t++) {
    const double *lt = logit + (size_t)t * E;
    const int *tt = top + (size_t)t * k;
    double sum = 0;
    for (int r = 0; r < k; r++) sum += exp(lt[tt[r]] - lt[tt[0]]);
    for (int c = 0; c < H; c++) out[(size_t)t * H + c] = residual[(size_t)t * H + c];
    for (int r = 0; r < k; r++) {
      const int e = tt[r];
      const double w = exp(lt[e] - lt[tt[0]]) / sum;
      memcpy(xr, x + (size_t)t * H, (size_t)H * sizeof(float));
      round_rows_like_kernel(m->mlp1[0].m.format, xr, 1, tokens_of[e], H);
      for (int o = 0; o < 2 * I; o++) {
        h[o] = m->mlp1_bias[(size_t)e * 2 * I + o];
        for (int c = 0; c < H; c++) h[o] += (double)xr[c] * m->mlp1[e].dense[(size_t)o * H + c];
      }
      for (int i = 0; i < I; i++) ar[i] = (float)ref_swiglu(h[2 * i], h[2 * i + 1], limit);
      round_rows_like_kernel(m->mlp2[0].m.format, ar, 1, tokens_of[e], I);
      for (int i = 0; i < I; i++) act[i] = ar[i];
      for (int o = 0; o < H; o++) {
        double y = m->mlp2_bias[(size_t)e * H + o];
        for (int i = 0; i < I; i++) y += act[i] * m->mlp2[e].dense[(size_t)o * I + i];
        out[(size_t)t * H + o] += w * y;
      }
    }
  }
  free(logit), free(h), free(act), free(xr), free(ar), free(top);
}

// Runs the op on x (scaled by x_scale) and checks it against the reference; returns the largest
// difference between the reference with and without the clamp (to show it was exercised).
static double check_moe(Backend *be, const Moe *m, int num_tokens, float x_scale, uint64_t seed) {
  const int H = m->c.hidden_size;
  Rng r = {seed};
  float *x = random_floats(&r, (size_t)num_tokens * H, x_scale);
  float *res = random_floats(&r, (size_t)num_tokens * H, 1.0f);
  double *want = xmalloc((size_t)num_tokens * H * sizeof(double));
  double *unclamped = xmalloc((size_t)num_tokens * H * sizeof(double));
  ref_moe(m, x, res, num_tokens, m->c.swiglu_limit, want);
  ref_moe(m, x, res, num_tokens, INFINITY, unclamped);
  MoeArgs args = {.config = &m->c,
                  .layer = &m->layer,
                  .x = x,
                  .num_tokens = num_tokens,
                  .expert_end = m->c.num_experts,
                  .residual = res};
  be->moe(be, &args);
  double scale = 0, clamp_effect = 0;
  for (size_t i = 0; i < (size_t)num_tokens * H; i++) {
    scale = fmax(scale, fabs(want[i]));
    clamp_effect = fmax(clamp_effect, fabs(want[i] - unclamped[i]));
  }
  // Quantized experts on the default backend: the reference rounds their inputs as the kernels
  // do, but a value next to a rounding boundary may still round the other way.
  const bool rounded = g_kernels != KERNELS_PORTABLE && m->mlp1[0].m.format != WEIGHT_F32;
  expect_close(res, want, (size_t)num_tokens * H, (rounded ? 4e-3 : 1e-5) * scale, 1e-4, "moe");
  free(x), free(res), free(want), free(unclamped);
  return clamp_effect;
}

static void test_moe_vs_naive(void **state) {
  Backend *be = *state;
  Rng r = {800};
  Moe m;
  moe_init(&m, 24, 6, 2, 10, WEIGHT_F32, &r);
  check_moe(be, &m, 1, 1.0f, 801);
  check_moe(be, &m, 9, 1.0f, 802);
  moe_free(&m);
  moe_init(&m, 33, 8, 4, 7, WEIGHT_F32, &r);  // k = 4 as in GPT-OSS, odd sizes
  check_moe(be, &m, 17, 1.0f, 803);
  moe_free(&m);
}

// Experts in BF16 and MXFP4 (router BF16): experts with few tokens decode row by row, experts
// with more go through decoded tiles. With VNNI, MXFP4 experts of at most 4 tokens each run phase
// by phase for all the experts (3 tokens, k = 2; 1 and 2 tokens, k = 4 of 8 as in GPT-OSS).
static void test_moe_quantized_experts(void **state) {
  Backend *be = *state;
  for (WeightFormat f = WEIGHT_BF16; f <= WEIGHT_MXFP4; f++) {
    Rng r = {810 + f};
    Moe m;
    moe_init(&m, 64, 4, 2, 32, f, &r);
    check_moe(be, &m, 13, 0.3f, 811);
    check_moe(be, &m, 3, 0.3f, 812);
    moe_free(&m);
    moe_init(&m, 96, 8, 4, 64, f, &r);
    check_moe(be, &m, 1, 0.3f, 813);
    check_moe(be, &m, 2, 0.3f, 814);
    moe_free(&m);
  }
}

// Large inputs push many mlp1 outputs past +-7: the op matches the clamped reference, and the
// clamp really changes the answer.
static void test_moe_clamp_random(void **state) {
  Backend *be = *state;
  Rng r = {820};
  Moe m;
  moe_init(&m, 24, 4, 2, 16, WEIGHT_F32, &r);
  assert_true(check_moe(be, &m, 8, 4.0f, 821) > 1.0);
  moe_free(&m);
}

// One expert, hidden 2, inter 1, mlp1 = identity (row 0 gate, row 1 linear), mlp2 = [1; 0]:
// the residual gains exactly swiglu(x0, x1): gate clamped above only, linear both sides.
static void test_moe_clamp_hand(void **state) {
  Backend *be = *state;
  float w1[4] = {1, 0, 0, 1}, w2[2] = {1, 0}, zero2[2] = {0, 0}, gate_w[2] = {0, 0},
        gate_b[1] = {0};
  WeightMatrix m1 = {WEIGHT_F32, 2, 2, w1, NULL}, m2 = {WEIGHT_F32, 2, 1, w2, NULL};
  LayerWeights layer = {.gate = {WEIGHT_F32, 1, 2, gate_w, NULL},
                        .gate_bias = gate_b,
                        .mlp1 = &m1,
                        .mlp1_bias = zero2,
                        .mlp2 = &m2,
                        .mlp2_bias = zero2};
  GptOssConfig c = {.num_experts = 1,
                    .experts_per_token = 1,
                    .hidden_size = 2,
                    .intermediate_size = 1,
                    .swiglu_limit = 7.0f};
  enum { T = 6 };
  const float x[T][2] = {{10, 10}, {-10, -10}, {3, -20}, {6.5f, 6.9f}, {8, -8}, {-0.5f, 0.25f}};
  float res[T][2] = {{0}};
  MoeArgs args = {.config = &c,
                  .layer = &layer,
                  .x = &x[0][0],
                  .num_tokens = T,
                  .expert_end = c.num_experts,
                  .residual = &res[0][0]};
  be->moe(be, &args);
  const double want[T] = {
      7 / (1 + exp(-1.702 * 7)) * 8,         // both clamped to 7
      -10 / (1 + exp(1.702 * 10)) * -6,      // gate not clamped below, linear to -7
      3 / (1 + exp(-1.702 * 3)) * -6,        // linear clamped to -7
      6.5 / (1 + exp(-1.702 * 6.5)) * 7.9,   // inside the limits
      7 / (1 + exp(-1.702 * 7)) * -6,        // gate 8 -> 7, linear -8 -> -7
      -0.5 / (1 + exp(1.702 * 0.5)) * 1.25,  // small values
  };
  for (int t = 0; t < T; t++) {
    assert_float_equal(res[t][0], want[t], 1e-5 * fmax(1.0, fabs(want[t])));
    assert_true(res[t][1] == 0.0f);
  }
}

// Five experts on hidden 5 whose outputs are told apart: every weight is zero, so the router's
// logits are its biases, and expert e adds (e + 1) to dimension e through its mlp2 bias.
enum { MARKED_E = 5, MARKED_H = 5 };
typedef struct {
  float zeros[MARKED_E * MARKED_H], mlp2_bias[MARKED_E * MARKED_H];
  WeightMatrix m1[MARKED_E], m2[MARKED_E];
  GptOssConfig c;
} MarkedExperts;

static void marked_experts_init(MarkedExperts *m) {
  *m = (MarkedExperts){.c = {.num_experts = MARKED_E,
                             .experts_per_token = 2,
                             .hidden_size = MARKED_H,
                             .intermediate_size = 1,
                             .swiglu_limit = 7.0f}};
  for (int e = 0; e < MARKED_E; e++) {
    m->mlp2_bias[e * MARKED_H + e] = (float)(e + 1);
    m->m1[e] = (WeightMatrix){WEIGHT_F32, 2, MARKED_H, m->zeros, NULL};
    m->m2[e] = (WeightMatrix){WEIGHT_F32, MARKED_H, 1, m->zeros, NULL};
  }
}

// The MoE op over num_tokens random rows (MARKED_T at most) with the router biases
// biases[MARKED_E]: res [num_tokens, MARKED_H] gets the marked experts' sum.
enum { MARKED_T = 4 };
static void marked_moe(Backend *be, MarkedExperts *m, const float *biases, int num_tokens,
                       const MoeProbe *probe, float *res) {
  assert_true(num_tokens <= MARKED_T);
  LayerWeights layer = {.gate = {WEIGHT_F32, MARKED_E, MARKED_H, m->zeros, NULL},
                        .gate_bias = biases,
                        .mlp1 = m->m1,
                        .mlp1_bias = m->zeros,
                        .mlp2 = m->m2,
                        .mlp2_bias = m->mlp2_bias};
  float x[MARKED_T * MARKED_H];
  Rng r = {830};
  fill(&r, x, num_tokens * MARKED_H, 1.0f);
  MoeArgs args = {.config = &m->c,
                  .layer = &layer,
                  .x = x,
                  .num_tokens = num_tokens,
                  .expert_end = MARKED_E,
                  .residual = res,
                  .probe = probe};
  be->moe(be, &args);
}

// Router: top-k on the logits (ties to the lower index), softmax over the k only.
static void test_moe_topk_ties_and_softmax(void **state) {
  Backend *be = *state;
  enum { E = MARKED_E, H = MARKED_H };
  MarkedExperts m;
  marked_experts_init(&m);
  const float biases[2][E] = {{1, 3, 3, 2, 3}, {2, 0, 1, -1, 0}};
  const double e1 = exp(1.0);
  const double want[2][H] = {{0, 0.5 * 2, 0.5 * 3, 0, 0},  // ties: experts 1 and 2, not 4
                             {1 * e1 / (e1 + 1), 0, 3 / (e1 + 1), 0, 0}};
  for (int i = 0; i < 2; i++) {
    float res[3 * H] = {0};
    marked_moe(be, &m, biases[i], 3, NULL, res);
    for (int t = 0; t < 3; t++) expect_close(res + t * H, want[i], H, 1e-6, 1e-6, "moe top-k");
  }
}

// The router probe: every token's margin between its k-th and (k+1)-th logit, and one token
// flipped to its (k+1)-th expert while the others keep theirs. Biases 2, 0, 1, -1, 0.25 with
// k = 2: experts 0 and 2, margin 1 - 0.25; flipped, experts 0 and 4 (softmax of 2 and 0.25).
static void test_moe_probe_margins_and_flip(void **state) {
  Backend *be = *state;
  enum { H = MARKED_H, T = 3 };
  MarkedExperts m;
  marked_experts_init(&m);
  const float biases[MARKED_E] = {2, 0, 1, -1, 0.25f};
  float res[T * H] = {0}, margins[T];
  MoeProbe probe = {.margins = margins, .flip_token = 1};
  marked_moe(be, &m, biases, T, &probe, res);
  const double e1 = exp(1.0), e175 = exp(1.75);
  const double kept[H] = {1 * e1 / (e1 + 1), 0, 3 / (e1 + 1), 0, 0};
  const double flipped[H] = {1 * e175 / (e175 + 1), 0, 0, 0, 5 / (e175 + 1)};
  for (int t = 0; t < T; t++) {
    assert_float_equal(margins[t], 0.75, 1e-6);
    expect_close(res + t * H, t == 1 ? flipped : kept, H, 1e-6, 1e-6, "moe probe");
  }
}

// Few experts, many tokens: every expert is picked by several tokens. The batched op equals the
// reference and each token run alone.
static void test_moe_grouping(void **state) {
  Backend *be = *state;
  enum { T = 16, H = 20 };
  Rng r = {840};
  Moe m;
  moe_init(&m, H, 3, 2, 9, WEIGHT_F32, &r);
  check_moe(be, &m, T, 1.0f, 841);
  float *x = random_floats(&r, T * H, 1.0f);
  float res[T * H] = {0}, alone[H];
  MoeArgs args = {.config = &m.c,
                  .layer = &m.layer,
                  .x = x,
                  .num_tokens = T,
                  .expert_end = m.c.num_experts,
                  .residual = res};
  be->moe(be, &args);
  for (int t = 0; t < T; t++) {
    memset(alone, 0, sizeof alone);
    MoeArgs one = args;
    one.x = x + t * H;
    one.num_tokens = 1;
    one.residual = alone;
    be->moe(be, &one);
    for (int c = 0; c < H; c++) assert_float_equal(res[t * H + c], alone[c], 1e-5);
  }
  // Expert parallelism: expert 0 on one rank, experts 1 and 2 on another (each rank's layer
  // holds only its experts); the two partial sums add up to the whole.
  float part[2][T * H];
  memset(part, 0, sizeof part);
  LayerWeights ranks[2] = {m.layer, m.layer};
  ranks[1].mlp1 = m.layer.mlp1 + 1;
  ranks[1].mlp2 = m.layer.mlp2 + 1;
  ranks[1].mlp1_bias = m.layer.mlp1_bias + 2 * m.c.intermediate_size;
  ranks[1].mlp2_bias = m.layer.mlp2_bias + H;
  for (int rank = 0; rank < 2; rank++) {
    MoeArgs shard = args;
    shard.layer = &ranks[rank];
    shard.expert_begin = rank == 0 ? 0 : 1;
    shard.expert_end = rank == 0 ? 1 : 3;
    shard.residual = part[rank];
    be->moe(be, &shard);
  }
  for (int i = 0; i < T * H; i++) assert_float_equal(part[0][i] + part[1][i], res[i], 1e-5);
  free(x);
  moe_free(&m);
}

// ---------------------------------------------------------------------------------------------
// sample

// The sample op picks each row's token as the host sampler picks it (common/pick.h on both
// sides): greedy rows the argmax (a tie to the lower id), rows with a temperature the draw's id
// over the whole row or its top-k / top-p kept set, exactly, and the raw row's logprobs when
// asked (against a float64 log-softmax); a negative temperature leaves the row to the host (-1).
static void test_sample_matches_host(void **state) {
  Backend *be = *state;
  enum { ROWS = 13, VOCAB = 1000 };
  Rng r = {1600};
  float *logits = random_floats(&r, (size_t)ROWS * VOCAB, 4.0f);  // [ROWS, VOCAB]
  logits[2 * VOCAB + 700] = logits[2 * VOCAB + 10] = 50.0f;       // row 2: a tie
  const float temps[ROWS] = {0, 0.5f, 0, 1.0f, -1, 1.7f, 2.5f, 0.9f, -1, 1.0f, 1.0f, 0.7f, 2.0f};
  const int top_k[ROWS] = {[9] = 50, [11] = 20, [12] = 1};
  const float top_p[ROWS] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0.8f, 0.5f, 1};
  SampleRow rows[ROWS];
  for (int i = 0; i < ROWS; i++)
    rows[i] = (SampleRow){.temperature = temps[i],
                          .top_k = top_k[i],
                          .top_p = top_p[i],
                          .draw = (rng_float(&r) + 1.0) / 2};
  rows[3].logprobs = rows[10].logprobs = rows[0].logprobs = true;  // temperature, top-p, greedy
  rows[3].num_top_logprobs = 5, rows[10].num_top_logprobs = 20, rows[0].num_top_logprobs = 0;
  int32_t ids[ROWS];
  PickLogprobs lp[ROWS];
  be->sample(be, logits, ROWS, VOCAB, rows, ids, lp);
  SamplerScratch scratch = {0};
  for (int i = 0; i < ROWS; i++) {
    if (temps[i] < 0) {
      assert_int_equal(ids[i], -1);
      continue;
    }
    const SamplingParams p = {.temperature = temps[i], .top_p = top_p[i], .top_k = top_k[i]};
    const uint32_t want =
        sampler_sample_drawn(logits + (size_t)i * VOCAB, VOCAB, &p, rows[i].draw, &scratch);
    assert_int_equal(ids[i], want);
  }
  assert_int_equal(ids[2], 10);
  assert_int_equal(ids[12], pick_argmax(logits + 12 * VOCAB, VOCAB));  // top-k 1: the argmax
  // logprobs: the raw row's log-softmax in double, the most probable first
  for (int i = 0; i < ROWS; i++) {
    if (!rows[i].logprobs) continue;
    const float *x = logits + (size_t)i * VOCAB;
    double max = x[0], sum = 0;
    for (int j = 1; j < VOCAB; j++) max = fmax(max, x[j]);
    for (int j = 0; j < VOCAB; j++) sum += exp(x[j] - max);
    const double log_norm = max + log(sum);
    assert_float_equal(lp[i].logprob, x[ids[i]] - log_norm, 1e-5);
    assert_int_equal(lp[i].num_top, rows[i].num_top_logprobs);
    for (int j = 0; j < lp[i].num_top; j++) {
      assert_float_equal(lp[i].top_logprobs[j], x[lp[i].top_ids[j]] - log_norm, 1e-5);
      if (j > 0) assert_true(x[lp[i].top_ids[j]] < x[lp[i].top_ids[j - 1]]);
    }
    if (lp[i].num_top > 0) assert_int_equal(lp[i].top_ids[0], pick_argmax(x, VOCAB));
  }
  sampler_scratch_free(&scratch);
  free(logits);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_linear_f32),
      cmocka_unit_test(test_linear_bf16),
      cmocka_unit_test(test_linear_mxfp4),
      cmocka_unit_test(test_linear_mxfp4_hand),
      cmocka_unit_test(test_linear_q8),
      cmocka_unit_test(test_linear_q8_amx_matches_vnni),
      cmocka_unit_test(test_linear_q8_avx2_matches_vnni),
      cmocka_unit_test(test_linear_bf16_amx_near_avx512),
      cmocka_unit_test(test_linear_mxfp4_amx_near_avx512),
      cmocka_unit_test(test_embed),
      cmocka_unit_test(test_rmsnorm),
      cmocka_unit_test(test_rope_hand),
      cmocka_unit_test(test_kv_write_and_gather),
      cmocka_unit_test(test_attention_single_sequence),
      cmocka_unit_test(test_attention_sinks),
      cmocka_unit_test(test_attention_window_boundary),
      cmocka_unit_test(test_attention_gqa),
      cmocka_unit_test(test_attention_paged_equals_contiguous),
      cmocka_unit_test(test_attention_batch_equals_alone),
      cmocka_unit_test(test_attention_decode_after_prefill),
      cmocka_unit_test(test_attention_mixed_batch),
      cmocka_unit_test(test_attention_gpt_oss_shape),
      cmocka_unit_test(test_moe_vs_naive),
      cmocka_unit_test(test_moe_quantized_experts),
      cmocka_unit_test(test_moe_clamp_random),
      cmocka_unit_test(test_moe_clamp_hand),
      cmocka_unit_test(test_moe_topk_ties_and_softmax),
      cmocka_unit_test(test_moe_probe_margins_and_flip),
      cmocka_unit_test(test_moe_grouping),
      cmocka_unit_test(test_sample_matches_host),
  };
  int failed =
      cmocka_run_group_tests_name("portable backend", tests, setup_portable, teardown_backend);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    failed += cmocka_run_group_tests_name("avx2 backend", tests, setup_avx2, teardown_backend);
  else
    printf("# avx2 backend: skipped: no AVX2 and FMA on this CPU\n");
  return failed +
         cmocka_run_group_tests_name("default backend", tests, setup_fast, teardown_backend);
}
