// test_cuda_ops.c: every op of the CUDA backend (engine/backend/cuda) against its CPU twin (the
// portable CPU backend, float32 throughout) on the same inputs, at several shapes: embed, RMSNorm,
// RoPE, kv_write, gather_rows, copy_rows, add, zero, alloc, upload_batch, linear (F32 and BF16
// weights, with and without bias and accumulate, MXFP4), paged attention (block boundaries,
// sliding-window edges, several sequences mixing prefill chunks and decode tokens, GQA groups of 1
// to 16, head dims 16 to 256) and MoE (MXFP4, BF16 and F32 experts, uneven expert loads with idle
// experts, an expert range, top-k ties, the SwiGLU clamp; the tile and the wide MXFP4 kernels and
// the cuBLAS path, the last two also forced by GPTOSS_CUDA_MOE_KERNEL) and sample (greedy and
// temperature draws against a float64 reference and the host sampler), dummy weights generated on
// the device (the host's, uploaded, byte for byte), and a decode step recorded into a CUDA graph
// (against the same step run op by op). Each comparison prints its errors. Without a CUDA device
// (or in a CUDA=0 build) every GPU test prints "skipped: no CUDA device" and skips.
//
// Tolerances (why each is what it is):
//   exact     embed, gather_rows, copy_rows, kv_write, add, zero, alloc, upload_batch: copies,
//             bit for bit (kv_write into a bf16 cache: the host's round-to-nearest-even of each
//             value, bit for bit; attention over it is then compared with a CPU twin whose
//             float32 cache holds those same rounded values, at the fp32 tolerance; and with
//             the tensor-core kernels, which take a bf16 cache with heads of 64 (prefill and
//             decode) and round queries and probabilities to bf16, at the "moe" tolerance
//             below).
//   fp32      RMSNorm, RoPE, attention, F32 linear: both sides compute in float32 with other
//             summation orders and libm vs CUDA expf/sinf/cosf (a few ulp): |d| <= 2e-5 + 1e-4
//             |want| for O(1) values; linear: |d| <= 1e-6 + 2e-5 * sum_c |x_c w_c| per row.
//   bf16-in   BF16/MXFP4 linear on inputs already bf16 (so the GPU's rounding changes nothing):
//             the same products as the CPU's, float32 sums: |d| <= 1e-6 + 2e-5 * sum_c |x_c w_c|.
//   bf16      BF16/MXFP4 linear on float32 inputs: the GPU rounds each x_c to bf16 (relative
//             error <= 2^-9), so |d| <= 2^-9 sum_c |x_c w_c| is a hard bound; we allow 2^-8.
//   moe       MXFP4/BF16 experts: the GPU rounds the MoE input and the SwiGLU output to bf16 for
//             its tensor cores, and on the cuBLAS path mlp1's products too, before their bias
//             (as vLLM's fused MoE does; the CPU twin keeps float32): on the MoE's contribution to
//             the residual, ||d|| / ||want|| <= 1e-2 and |d| <= 2e-2 (max |want| + |want|). F32
//             experts run in float32 on both: ||d|| / ||want|| <= 2e-5 and |d| <= 2e-5 max |want| +
//             1e-4 |want|. Routers here are F32 (or BF16 on bf16 inputs), so both sides pick the
//             same experts.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "common/check.h"
#include "core/sampler.h"
#include "decode_calls.h"
#include "dist/decode_batch.h"
#include "model/bf16.h"
#include "model/forward.h"
#include "model/rope.h"
#include "test_rng.h"

typedef struct {
  Backend *cpu;  // the twin: cpu_backend_create_portable
  Backend *gpu;
  Backend *gpu_cuda_cores;  // GPTOSS_CUDA_ATTN_KERNEL=cuda-cores: attention on the CUDA cores only
} Twins;

// Without a device a GPU test prints why and returns. It does not call cmocka's skip(): cmocka
// 1.1's TAP writer prints a skipped test as "not ok N # SKIP", which scripts/run-tests.sh counts
// as a failure (and CI has no GPU).
#define NEED_GPU(state)                             \
  do {                                              \
    if (!*(state)) {                                \
      print_message("# skipped: no CUDA device\n"); \
      return;                                       \
    }                                               \
  } while (0)

// ---------------------------------------------------------------------------------------------
// Helpers: device copies, comparisons (random numbers: test_rng.h).

static void round_to_bf16(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = bf16_to_f32(bf16_from_f32(x[i]));
}

// A device copy of bytes of host memory.
static void *dev_copy(Backend *gpu, const void *host, size_t bytes) {
  void *d = gpu->alloc(gpu, bytes);
  assert_non_null(d);
  cuda_to_device(gpu, d, host, bytes);
  return d;
}

// A host copy of bytes of device memory (free it).
static void *host_copy(Backend *gpu, const void *dev, size_t bytes) {
  void *h = xmalloc(bytes ? bytes : 1);
  gpu->to_host(gpu, h, dev, bytes);
  return h;
}

// Prints the errors of got against want and fails at the first element past atol + rtol |want|
// (atol_rows: per-row absolute tolerances of rows of `cols`, added to atol) or when the relative
// L2 error exceeds l2 (l2 <= 0: not checked).
static void expect_close(const char *what, const float *got, const float *want, size_t n,
                         double atol, double rtol, const double *atol_rows, size_t cols,
                         double l2) {
  double max_abs = 0, diff2 = 0, norm2 = 0;
  size_t worst = 0, bad = n;
  for (size_t i = 0; i < n; i++) {
    const double d = fabs((double)got[i] - want[i]);
    const double tol = atol + rtol * fabs(want[i]) + (atol_rows ? atol_rows[i / cols] : 0);
    if (!(d <= tol) && bad == n) bad = i;
    if (!(d <= max_abs)) max_abs = d, worst = i;
    diff2 += d * d;
    norm2 += (double)want[i] * want[i];
  }
  const double rel_l2 = norm2 > 0 ? sqrt(diff2 / norm2) : sqrt(diff2);
  print_message("# %-58s max_abs_err %.3g (at %zu) rel_l2_err %.3g\n", what, max_abs, worst,
                rel_l2);
  if (bad < n) {
    print_error("%s[%zu]: got %.9g, want %.9g\n", what, bad, (double)got[bad], (double)want[bad]);
    fail();
  }
  if (l2 > 0 && !(rel_l2 <= l2)) {
    print_error("%s: relative L2 error %.3g above %.3g\n", what, rel_l2, l2);
    fail();
  }
}

static void expect_equal(const char *what, const void *got, const void *want, size_t bytes) {
  print_message("# %-58s %s\n", what, memcmp(got, want, bytes) ? "DIFFERS" : "bit-identical");
  assert_memory_equal(got, want, bytes);
}

// Device memory dev equals host memory want, bit for bit.
static void expect_device_equal(Backend *gpu, const char *what, const void *dev, const void *want,
                                size_t bytes) {
  void *got = host_copy(gpu, dev, bytes);
  expect_equal(what, got, want, bytes);
  free(got);
}

// cuda_backend_create(0) with the setting var=value, the caller's environment put back after.
static Backend *gpu_with(const char *var, const char *value, char *err, size_t err_size) {
  const char *old = getenv(var);
  char *saved = old ? strdup(old) : NULL;
  setenv(var, value, 1);
  Backend *be = cuda_backend_create(0, err, err_size);
  if (saved)
    setenv(var, saved, 1);
  else
    unsetenv(var);
  free(saved);
  return be;
}

static int setup(void **state) {
  *state = NULL;
  if (cuda_device_count() == 0) return 0;
  char err[512];
  Twins *t = xcalloc(1, sizeof *t);
  t->gpu = cuda_backend_create(0, err, sizeof err);
  if (!t->gpu) {
    print_error("cuda_backend_create: %s\n", err);
    free(t);
    return -1;
  }
  t->gpu_cuda_cores = gpu_with("GPTOSS_CUDA_ATTN_KERNEL", "cuda-cores", err, sizeof err);
  if (!t->gpu_cuda_cores) {
    print_error("cuda_backend_create (cuda-cores): %s\n", err);
    t->gpu->destroy(t->gpu);
    free(t);
    return -1;
  }
  print_message("# device: %s\n", cuda_device_name(t->gpu));
  // TEST_CPU_TWIN_THREADS=1 on the emulator's race-checking build (make test-cuda-emu
  // SIMT_SANITIZER=thread): ThreadSanitizer cannot see the twin's thread pool synchronise, and
  // checking its copies as races would take most of the run
  const char *twin_threads = getenv("TEST_CPU_TWIN_THREADS");
  t->cpu = cpu_backend_create_portable(twin_threads ? atoi(twin_threads) : 2);
  *state = t;
  return 0;
}

static int teardown(void **state) {
  Twins *t = *state;
  if (!t) return 0;
  t->gpu->destroy(t->gpu);
  t->gpu_cuda_cores->destroy(t->gpu_cuda_cores);
  t->cpu->destroy(t->cpu);
  free(t);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Without a device: discovery never crashes and creation says why it fails.

static void test_no_device_is_reported(void **state) {
  (void)state;
  if (cuda_device_count() > 0) {
    print_message("# a CUDA device is present: nothing to check here\n");
    return;
  }
  char err[512] = "";
  assert_null(cuda_backend_create(0, err, sizeof err));
  print_message("# cuda_backend_create without a device: %s\n", err);
  assert_true(strlen(err) > 0);
  // A CUDA build reads its settings before it looks for a device: a bad one is named.
  assert_null(gpu_with("GPTOSS_CUDA_MOE_KERNEL", "widest", err, sizeof err));
  print_message("# with GPTOSS_CUDA_MOE_KERNEL=widest: %s\n", err);
  if (!strstr(err, "built without CUDA"))
    assert_non_null(
        strstr(err, "GPTOSS_CUDA_MOE_KERNEL=widest: expected auto, tile, wide, wide32 or cublas"));
  assert_null(gpu_with("GPTOSS_CUDA_MOE_CUBLAS_ROWS", "-1", err, sizeof err));
  print_message("# with GPTOSS_CUDA_MOE_CUBLAS_ROWS=-1: %s\n", err);
  if (!strstr(err, "built without CUDA"))
    assert_non_null(strstr(err, "GPTOSS_CUDA_MOE_CUBLAS_ROWS=-1: expected the pairs an expert"));
  assert_null(gpu_with("GPTOSS_CUDA_MOE_WIDE_ROWS", "64x", err, sizeof err));
  if (!strstr(err, "built without CUDA"))
    assert_non_null(strstr(err, "GPTOSS_CUDA_MOE_WIDE_ROWS=64x: expected"));
  assert_null(gpu_with("GPTOSS_CUDA_ATTN_KERNEL", "flashy", err, sizeof err));
  print_message("# with GPTOSS_CUDA_ATTN_KERNEL=flashy: %s\n", err);
  if (!strstr(err, "built without CUDA"))
    assert_non_null(strstr(err, "GPTOSS_CUDA_ATTN_KERNEL=flashy: expected auto or cuda-cores"));
}

// ---------------------------------------------------------------------------------------------
// Memory, copies, element-wise ops.

static void test_alloc_is_zeroed_and_batch_uploads(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  const size_t bytes = (3 << 20) + 5;
  unsigned char *d = t->gpu->alloc(t->gpu, bytes);
  assert_non_null(d);
  unsigned char *h = host_copy(t->gpu, d, bytes);
  unsigned char *zeros = xcalloc(1, bytes);
  expect_equal("alloc: zeroed", h, zeros, bytes);
  t->gpu->free(t->gpu, d);
  free(h), free(zeros);

  const uint32_t ids[5] = {1, 2, 3, 4, 5};
  const int32_t pos[5] = {0, 1, 2, 7, 0}, qs[4] = {0, 3, 4, 5}, lens[3] = {3, 8, 1};
  const int64_t slots[5] = {16, 17, 18, 39, -1};
  const int32_t tables[6] = {1, 0, 9, 2, 3, 0}, logits[2] = {2, 4};
  const int64_t window_slots[5] = {80, 81, 82, 103, -1};  // a hybrid cache's
  const int32_t window_tables[6] = {5, 0, 0, 6, 7, 0};
  const Batch hb = {.num_seqs = 3,
                    .num_tokens = 5,
                    .token_ids = ids,
                    .positions = pos,
                    .slot_mapping = slots,
                    .query_start = qs,
                    .seq_lens = lens,
                    .block_tables = tables,
                    .max_blocks_per_seq = 2,
                    .window_slot_mapping = window_slots,
                    .window_block_tables = window_tables,
                    .logits_indices = logits,
                    .num_logits = 2};
  for (int round = 0; round < 2; round++) {  // the second call reuses the buffers
    const Batch *db = t->gpu->upload_batch(t->gpu, &hb);
    assert_int_equal(db->num_seqs, 3);
    assert_int_equal(db->num_tokens, 5);
    assert_int_equal(db->max_blocks_per_seq, 2);
    assert_int_equal(db->num_logits, 2);
    expect_device_equal(t->gpu, "batch: token_ids", db->token_ids, ids, sizeof ids);
    expect_device_equal(t->gpu, "batch: positions", db->positions, pos, sizeof pos);
    expect_device_equal(t->gpu, "batch: slot_mapping", db->slot_mapping, slots, sizeof slots);
    expect_device_equal(t->gpu, "batch: query_start", db->query_start, qs, sizeof qs);
    expect_device_equal(t->gpu, "batch: seq_lens", db->seq_lens, lens, sizeof lens);
    expect_device_equal(t->gpu, "batch: block_tables", db->block_tables, tables, sizeof tables);
    expect_device_equal(t->gpu, "batch: logits_indices", db->logits_indices, logits, sizeof logits);
    expect_device_equal(t->gpu, "batch: window_slot_mapping", db->window_slot_mapping, window_slots,
                        sizeof window_slots);
    expect_device_equal(t->gpu, "batch: window_block_tables", db->window_block_tables,
                        window_tables, sizeof window_tables);
  }
  Batch plain = hb;  // no window arrays: none on the device either
  plain.window_slot_mapping = NULL;
  plain.window_block_tables = NULL;
  const Batch *db = t->gpu->upload_batch(t->gpu, &plain);
  assert_null(db->window_slot_mapping);
  assert_null(db->window_block_tables);
  expect_device_equal(t->gpu, "batch: block_tables", db->block_tables, tables, sizeof tables);
}

static void test_add_zero_gather(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  Rng r = {11};
  const size_t n = 100003;
  float *a = random_floats(&r, n, 1.0f), *b = random_floats(&r, n, 1.0f);
  float *da = dev_copy(t->gpu, a, n * sizeof(float)), *db = dev_copy(t->gpu, b, n * sizeof(float));
  t->gpu->add(t->gpu, da, db, n);
  t->cpu->add(t->cpu, a, b, n);
  float *got = host_copy(t->gpu, da, n * sizeof(float));
  expect_equal("add [100003]", got, a, n * sizeof(float));
  free(got);

  const int dim = 2880;
  const int32_t rows[5] = {7, 0, 7, 33, 12};
  float *out = xmalloc(5 * dim * sizeof(float));
  int32_t *drows = dev_copy(t->gpu, rows, sizeof rows);
  float *dout = t->gpu->alloc(t->gpu, 5 * dim * sizeof(float));
  t->gpu->gather_rows(t->gpu, db, drows, 5, dim, dout);
  t->cpu->gather_rows(t->cpu, b, rows, 5, dim, out);
  got = host_copy(t->gpu, dout, 5 * dim * sizeof(float));
  expect_equal("gather_rows 5 of [34, 2880]", got, out, 5 * dim * sizeof(float));
  free(got);

  // copy_rows: 5 rows of 700 floats, from rows 2880 floats apart at column 100 into rows 1000
  // apart at column 300 (the tensor-parallel logits' strided copy); the rest of dst stays.
  const size_t dst_floats = 5 * 1000;
  float *dst = random_floats(&r, dst_floats, 1.0f);
  float *ddst = dev_copy(t->gpu, dst, dst_floats * sizeof(float));
  t->gpu->copy_rows(t->gpu, ddst + 300, 1000 * sizeof(float), db + 100, dim * sizeof(float),
                    700 * sizeof(float), 5);
  t->cpu->copy_rows(t->cpu, dst + 300, 1000 * sizeof(float), b + 100, dim * sizeof(float),
                    700 * sizeof(float), 5);
  assert_true(dst[300] == b[100] && dst[4 * 1000 + 300 + 699] == b[4 * dim + 100 + 699]);
  got = host_copy(t->gpu, ddst, dst_floats * sizeof(float));
  expect_equal("copy_rows 5 x 700 floats, strides 2880 -> 1000", got, dst,
               dst_floats * sizeof(float));
  free(got), free(dst);
  t->gpu->free(t->gpu, ddst);

  t->gpu->zero(t->gpu, (char *)da + 12, 4000);
  memset((char *)a + 12, 0, 4000);
  got = host_copy(t->gpu, da, n * sizeof(float));
  expect_equal("zero 4000 bytes at offset 12", got, a, n * sizeof(float));
  free(got);
  t->gpu->free(t->gpu, da), t->gpu->free(t->gpu, db), t->gpu->free(t->gpu, drows);
  t->gpu->free(t->gpu, dout);
  free(a), free(b), free(out);
}

// A matrix in format f with random values (MXFP4: random codes, scales 2^-5 .. 2^-1). Its data
// (and scales) are malloc'ed; free both.
static WeightMatrix make_matrix(WeightFormat f, int64_t rows, int64_t cols, Rng *r, float scale) {
  WeightMatrix m = {.format = f, .rows = rows, .cols = cols};
  const size_t n = (size_t)(rows * cols);
  if (f == WEIGHT_F32) {
    m.data = random_floats(r, n, scale);
  } else if (f == WEIGHT_BF16) {
    uint16_t *d = xmalloc(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++) d[i] = bf16_from_f32(rng_float(r) * scale);
    m.data = d;
  } else {
    uint8_t *blocks = xmalloc(n / 2), *scales = xmalloc(n / 32);
    for (size_t i = 0; i < n / 2; i++) blocks[i] = (uint8_t)rng_next(r);
    for (size_t i = 0; i < n / 32; i++) scales[i] = (uint8_t)(122 + rng_next(r) % 5);
    m.data = blocks;
    m.scales = scales;
  }
  return m;
}

static void free_matrix(WeightMatrix *m) {
  free((void *)m->data);
  free((void *)m->scales);
}

// The matrix in a one-matrix GptOssWeights (as the unembedding) uploaded to the device.
static void upload_matrix(Backend *gpu, const WeightMatrix *m, GptOssWeights *dev) {
  GptOssWeights host = {.unembedding = *m};
  char err[512];
  if (!cuda_weights_upload(gpu, &host, dev, err, sizeof err)) {
    print_error("cuda_weights_upload: %s\n", err);
    fail();
  }
}

static void test_embed(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  const WeightFormat formats[3] = {WEIGHT_F32, WEIGHT_BF16, WEIGHT_MXFP4};
  Rng r = {21};
  for (int f = 0; f < 3; f++) {
    WeightMatrix m = make_matrix(formats[f], 1000, 96, &r, 1.0f);
    GptOssWeights dev;
    upload_matrix(t->gpu, &m, &dev);
    const uint32_t ids[6] = {0, 999, 5, 5, 512, 1};
    float want[6 * 96];
    t->cpu->embed(t->cpu, &m, ids, 6, want);
    uint32_t *dids = dev_copy(t->gpu, ids, sizeof ids);
    float *dout = t->gpu->alloc(t->gpu, sizeof want);
    t->gpu->embed(t->gpu, &dev.unembedding, dids, 6, dout);
    float *got = host_copy(t->gpu, dout, sizeof want);
    char what[64];
    snprintf(what, sizeof what, "embed %s [1000, 96], 6 ids", weight_format_name(formats[f]));
    expect_equal(what, got, want, sizeof want);
    free(got);
    t->gpu->free(t->gpu, dids), t->gpu->free(t->gpu, dout);
    cuda_weights_free(t->gpu, &dev);
    free_matrix(&m);
  }
}

static void test_rmsnorm(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  const int shapes[][2] = {{1, 64}, {7, 2880}, {33, 100}, {3, 4096}};
  Rng r = {31};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int rows = shapes[s][0], dim = shapes[s][1];
    const size_t n = (size_t)rows * dim;
    float *x = random_floats(&r, n, 3.0f), *scale = random_floats(&r, (size_t)dim, 2.0f);
    float *want = xmalloc(n * sizeof(float));
    t->cpu->rmsnorm(t->cpu, x, scale, rows, dim, want);
    float *dx = dev_copy(t->gpu, x, n * sizeof(float));
    float *dscale = dev_copy(t->gpu, scale, dim * sizeof(float));
    t->gpu->rmsnorm(t->gpu, dx, dscale, rows, dim, dx);  // in place, as the forward pass does
    float *got = host_copy(t->gpu, dx, n * sizeof(float));
    char what[64];
    snprintf(what, sizeof what, "rmsnorm [%d, %d] in place", rows, dim);
    expect_close(what, got, want, n, 2e-5, 1e-4, NULL, 1, 0);
    free(got), free(x), free(scale), free(want);
    t->gpu->free(t->gpu, dx), t->gpu->free(t->gpu, dscale);
  }
}

static void test_rope(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  GptOssConfig c;
  assert_true(config_preset("openai/gpt-oss-20b", &c));
  // q and k heads of a qkv row, as the forward pass rotates them (64-dim heads, YaRN), and a
  // 16-dim head table (plain RoPE).
  const int cases[][4] = {{64, 8, 64 * 8 + 2 * 64 * 2, 9}, {64, 2, 64 * 2, 5}, {16, 4, 70, 6}};
  Rng r = {41};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const int head_dim = cases[k][0], heads = cases[k][1], stride = cases[k][2], rows = cases[k][3];
    GptOssConfig cc = c;
    cc.head_dim = head_dim;
    if (head_dim != 64) cc.rope_scaling_factor = 1.0f;
    RopeTable rope;
    rope_table_init(&rope, &cc);
    const int32_t positions[9] = {0, 1, 17, 127, 128, 4095, 4096, 65536, 131071};
    const size_t n = (size_t)rows * stride;
    float *x = random_floats(&r, n, 1.0f), *want = xmalloc(n * sizeof(float));
    memcpy(want, x, n * sizeof(float));
    t->cpu->rope(t->cpu, want, rows, stride, heads, head_dim, positions, &rope);
    float *dx = dev_copy(t->gpu, x, n * sizeof(float));
    int32_t *dpos = dev_copy(t->gpu, positions, sizeof positions);
    t->gpu->rope(t->gpu, dx, rows, stride, heads, head_dim, dpos, &rope);
    float *got = host_copy(t->gpu, dx, n * sizeof(float));
    char what[80];
    snprintf(what, sizeof what, "rope %d heads of %d, stride %d, positions up to %d", heads,
             head_dim, stride, positions[rows - 1]);
    expect_close(what, got, want, n, 2e-5, 1e-4, NULL, 1, 0);
    free(got), free(x), free(want);
    t->gpu->free(t->gpu, dx), t->gpu->free(t->gpu, dpos);
  }
}

// ---------------------------------------------------------------------------------------------
// linear

// Per-row sums sum_c |x[m, c] w[r, c]| maxed over r: the scale of float32 and bf16 rounding.
// x: [num_rows, cols]; returns [num_rows * rows] (row m, output r)
static double *linear_magnitudes(Backend *cpu, const WeightMatrix *w, const float *x,
                                 int num_rows) {
  const int64_t rows = w->rows, cols = w->cols;
  float *wf = xmalloc((size_t)(rows * cols) * sizeof(float));
  // The CPU embeds rows of any format exactly: decode W through it.
  uint32_t *ids = xmalloc((size_t)rows * sizeof(uint32_t));
  for (int64_t i = 0; i < rows; i++) ids[i] = (uint32_t)i;
  cpu->embed(cpu, w, ids, (int)rows, wf);
  double *mag = xmalloc((size_t)(num_rows * rows) * sizeof(double));
  for (int m = 0; m < num_rows; m++)
    for (int64_t i = 0; i < rows; i++) {
      double s = 0;
      for (int64_t c = 0; c < cols; c++) s += fabs((double)x[m * cols + c] * wf[i * cols + c]);
      mag[m * rows + i] = s;
    }
  free(wf), free(ids);
  return mag;
}

// One linear call on both backends. bf16_inputs: x rounded to bf16 first; tol_mag: tolerance per
// unit of sum_c |x_c w_c|.
static void check_linear(Twins *t, WeightFormat f, int num_rows, int64_t rows, int64_t cols,
                         bool bias, bool accumulate, bool bf16_inputs, double tol_mag,
                         uint64_t seed) {
  Rng r = {seed};
  WeightMatrix w = make_matrix(f, rows, cols, &r, 1.0f);
  const size_t nx = (size_t)num_rows * cols, ny = (size_t)num_rows * rows;
  float *x = random_floats(&r, nx, 1.0f), *b = random_floats(&r, (size_t)rows, 1.0f);
  float *y0 = random_floats(&r, ny, 1.0f), *want = xmalloc(ny * sizeof(float));
  if (bf16_inputs) round_to_bf16(x, nx);
  memcpy(want, y0, ny * sizeof(float));
  t->cpu->linear(t->cpu, &w, bias ? b : NULL, x, num_rows, want, accumulate);

  GptOssWeights dev;
  upload_matrix(t->gpu, &w, &dev);
  float *dx = dev_copy(t->gpu, x, nx * sizeof(float));
  float *db = dev_copy(t->gpu, b, (size_t)rows * sizeof(float));
  float *dy = dev_copy(t->gpu, y0, ny * sizeof(float));
  t->gpu->linear(t->gpu, &dev.unembedding, bias ? db : NULL, dx, num_rows, dy, accumulate);
  float *got = host_copy(t->gpu, dy, ny * sizeof(float));

  double *atol_rows = linear_magnitudes(t->cpu, &w, x, num_rows);
  for (size_t i = 0; i < ny; i++) atol_rows[i] *= tol_mag;
  char what[96];
  snprintf(what, sizeof what, "linear %s%s [%d x %lld] W[%lld]%s%s", weight_format_name(f),
           bf16_inputs ? " bf16-in" : "", num_rows, (long long)cols, (long long)rows,
           bias ? " +bias" : "", accumulate ? " +=" : "");
  expect_close(what, got, want, ny, 1e-6, 0, atol_rows, 1, 0);
  free(atol_rows), free(got), free(x), free(b), free(y0), free(want);
  t->gpu->free(t->gpu, dx), t->gpu->free(t->gpu, db), t->gpu->free(t->gpu, dy);
  cuda_weights_free(t->gpu, &dev);
  free_matrix(&w);
}

static const int LINEAR_SHAPES[][3] = {{1, 7, 5},       {3, 17, 33},     {37, 129, 70},
                                       {2, 130, 64},    {64, 512, 2880}, {1, 2880, 4096},
                                       {200, 1000, 512}};
#define NUM_LINEAR_SHAPES (sizeof LINEAR_SHAPES / sizeof LINEAR_SHAPES[0])

static void test_linear_f32(void **state) {
  NEED_GPU(state);
  for (size_t i = 0; i < NUM_LINEAR_SHAPES; i++)
    for (int v = 0; v < 4; v++)
      check_linear(*state, WEIGHT_F32, LINEAR_SHAPES[i][0], LINEAR_SHAPES[i][1],
                   LINEAR_SHAPES[i][2], v & 1, v & 2, false, 2e-5, 100 + i * 4 + v);
}

static void test_linear_bf16_exact_inputs(void **state) {
  NEED_GPU(state);
  for (size_t i = 0; i < NUM_LINEAR_SHAPES; i++)
    for (int v = 0; v < 4; v++)
      check_linear(*state, WEIGHT_BF16, LINEAR_SHAPES[i][0], LINEAR_SHAPES[i][1],
                   LINEAR_SHAPES[i][2], v & 1, v & 2, true, 2e-5, 200 + i * 4 + v);
}

static void test_linear_bf16(void **state) {
  NEED_GPU(state);
  for (size_t i = 0; i < NUM_LINEAR_SHAPES; i++)
    check_linear(*state, WEIGHT_BF16, LINEAR_SHAPES[i][0], LINEAR_SHAPES[i][1], LINEAR_SHAPES[i][2],
                 true, i % 2, false, 0x1p-8, 300 + i);
}

static void test_linear_mxfp4(void **state) {
  NEED_GPU(state);
  const int shapes[][3] = {{3, 64, 96}, {17, 256, 2880}, {1, 5760, 2880}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    check_linear(*state, WEIGHT_MXFP4, shapes[i][0], shapes[i][1], shapes[i][2], true, false, true,
                 2e-5, 400 + i);
    check_linear(*state, WEIGHT_MXFP4, shapes[i][0], shapes[i][1], shapes[i][2], false, true, false,
                 0x1p-8, 410 + i);
  }
}

// ---------------------------------------------------------------------------------------------
// kv_write and attention: one scenario (sequences with cached and new tokens) on both backends.
// Every token's K/V goes into the cache through kv_write (with a padding token), then the new
// tokens attend.

enum { ATT_MAX_SEQS = 40, ATT_LAYERS = 2, ATT_LAYER = 1 };

typedef struct {
  const char *name;
  int num_heads, num_kv_heads, head_dim, window, block_size;
  int num_seqs;
  int cached[ATT_MAX_SEQS];  // tokens already in the cache before the call
  int fresh[ATT_MAX_SEQS];   // new tokens of the call
} AttnCase;

// A KvCache of dtype whose per-layer arrays come from be->alloc (zeroed). Free with kv_release.
static KvCache kv_make(Backend *be, int num_blocks, int block_size, int kv_heads, int head_dim,
                       KvDtype dtype) {
  KvCache kv = {.backend = be,
                .num_layers = ATT_LAYERS,
                .num_blocks = num_blocks,
                .block_size = block_size,
                .num_kv_heads = kv_heads,
                .head_dim = head_dim,
                .dtype = dtype,
                .k = xcalloc(ATT_LAYERS, sizeof(void *)),
                .v = xcalloc(ATT_LAYERS, sizeof(void *))};
  const size_t bytes = (size_t)num_blocks * block_size * kv_heads * head_dim * kv_dtype_size(dtype);
  for (int l = 0; l < ATT_LAYERS; l++) {
    kv.k[l] = be->alloc(be, bytes);
    kv.v[l] = be->alloc(be, bytes);
    assert_true(kv.k[l] && kv.v[l]);
  }
  return kv;
}

static void kv_release(Backend *be, KvCache *kv) {
  for (int l = 0; l < kv->num_layers; l++) be->free(be, kv->k[l]), be->free(be, kv->v[l]);
  free(kv->k), free(kv->v);
}

// The float32 CPU cache's bytes as a bf16 cache holds them. want: [n]
static uint16_t *bf16_cache_of(const float *cache, size_t n) {
  uint16_t *out = xmalloc(n * sizeof(uint16_t));
  for (size_t i = 0; i < n; i++) out[i] = bf16_from_f32(cache[i]);
  return out;
}

// The case on both backends with the GPU's cache in dtype. A bf16 cache: the CPU twin's float32
// cache gets K and V rounded to bf16 first, the GPU's kv_write gets them unrounded and must
// store exactly those roundings (to nearest even); attention then reads the same values on both.
// hybrid (a windowed case): the GPU attends as a hybrid cache's sliding layer does
// (model/forward.c): through a copy of the uploaded batch with its window arrays swapped in,
// whose block-table entries wholly before each sequence's first window name a spare block
// nobody writes (the null block: zeros).
static void check_attention_kv(Twins *t, Backend *gpu, const AttnCase *ac, uint64_t seed,
                               KvDtype dtype, bool hybrid) {
  Rng r = {seed};
  const int S = ac->num_seqs, bs = ac->block_size, hd = ac->head_dim;
  const int kv_dim = ac->num_kv_heads * hd, q_dim = ac->num_heads * hd;
  // Blocks: each sequence's in a shuffled pool with a few spare.
  int max_blocks = 1, num_blocks = 3, all_tokens = 0, num_new = 0;
  for (int s = 0; s < S; s++) {
    const int nb = (ac->cached[s] + ac->fresh[s] + bs - 1) / bs;
    max_blocks = nb > max_blocks ? nb : max_blocks;
    num_blocks += nb;
    all_tokens += ac->cached[s] + ac->fresh[s];
    num_new += ac->fresh[s];
  }
  int32_t *pool = xmalloc((size_t)num_blocks * sizeof(int32_t));
  for (int i = 0; i < num_blocks; i++) pool[i] = i;
  for (int i = num_blocks - 1; i > 0; i--) {
    const int j = (int)(rng_next(&r) % (uint64_t)(i + 1));
    const int32_t tmp = pool[i];
    pool[i] = pool[j], pool[j] = tmp;
  }
  int32_t *tables = xcalloc((size_t)S * max_blocks, sizeof(int32_t));
  for (int s = 0, next = 0; s < S; s++)
    for (int b = 0; b < (ac->cached[s] + ac->fresh[s] + bs - 1) / bs; b++)
      tables[s * max_blocks + b] = pool[next++];

  // Every token's K and V (stride kv_dim + 3) and slot, plus one padding token (slot -1).
  const int stride = kv_dim + 3, fill_n = all_tokens + 1;
  float *k = random_floats(&r, (size_t)fill_n * stride, 2.0f);
  float *v = random_floats(&r, (size_t)fill_n * stride, 1.0f);
  int64_t *fill_slots = xmalloc((size_t)fill_n * sizeof(int64_t));
  // The call's batch: the new tokens.
  uint32_t *ids = xcalloc((size_t)num_new, sizeof(uint32_t));
  int32_t *pos = xmalloc((size_t)num_new * sizeof(int32_t)),
          *lens = xmalloc((size_t)S * sizeof(int32_t));
  int32_t *qs = xmalloc((size_t)(S + 1) * sizeof(int32_t));
  int64_t *slots = xmalloc((size_t)num_new * sizeof(int64_t));
  qs[0] = 0;
  for (int s = 0, f = 0, n = 0; s < S; s++) {
    lens[s] = ac->cached[s] + ac->fresh[s];
    for (int j = 0; j < lens[s]; j++) {
      const int64_t slot = (int64_t)tables[s * max_blocks + j / bs] * bs + j % bs;
      fill_slots[f++] = slot;
      if (j >= ac->cached[s]) pos[n] = j, slots[n] = slot, n++;
    }
    qs[s + 1] = n;
    if (s == S / 2) fill_slots[f++] = -1;  // the padding token, mid-call
  }
  // The window tables: a sequence's first new token at position cached[s] sees keys from
  // cached[s] - window + 1 on; blocks wholly before name the spare block pool[num_blocks - 1].
  int32_t *window_tables = xmalloc((size_t)S * max_blocks * sizeof(int32_t));
  memcpy(window_tables, tables, (size_t)S * max_blocks * sizeof(int32_t));
  for (int s = 0; hybrid && s < S; s++) {
    const int first_key = ac->cached[s] - ac->window + 1;
    for (int b = 0; b < (first_key > 0 ? first_key : 0) / bs; b++)
      window_tables[s * max_blocks + b] = pool[num_blocks - 1];
  }
  const Batch hb = {.num_seqs = S,
                    .num_tokens = num_new,
                    .token_ids = ids,
                    .positions = pos,
                    .slot_mapping = slots,
                    .query_start = qs,
                    .seq_lens = lens,
                    .block_tables = tables,
                    .max_blocks_per_seq = max_blocks,
                    .window_slot_mapping = hybrid ? slots : NULL,
                    .window_block_tables = hybrid ? window_tables : NULL};
  const int q_stride = q_dim + 2 * kv_dim;
  float *q = random_floats(&r, (size_t)num_new * q_stride, 2.0f);
  float *sinks = random_floats(&r, (size_t)ac->num_heads, 2.0f);
  const float scale = 1.0f / sqrtf((float)hd);

  // CPU twin.
  KvCache hkv = kv_make(t->cpu, num_blocks, bs, ac->num_kv_heads, hd, KV_F32);
  if (dtype == KV_BF16) {
    float *k16 = xmalloc((size_t)fill_n * stride * sizeof(float));
    float *v16 = xmalloc((size_t)fill_n * stride * sizeof(float));
    memcpy(k16, k, (size_t)fill_n * stride * sizeof(float));
    memcpy(v16, v, (size_t)fill_n * stride * sizeof(float));
    round_to_bf16(k16, (size_t)fill_n * stride), round_to_bf16(v16, (size_t)fill_n * stride);
    t->cpu->kv_write(t->cpu, &hkv, ATT_LAYER, k16, v16, stride, fill_slots, fill_n);
    free(k16), free(v16);
  } else {
    t->cpu->kv_write(t->cpu, &hkv, ATT_LAYER, k, v, stride, fill_slots, fill_n);
  }
  float *want = xmalloc((size_t)num_new * q_dim * sizeof(float));
  AttentionArgs a = {q,
                     q_stride,
                     &hkv,
                     ATT_LAYER,
                     sinks,
                     t->cpu->upload_batch(t->cpu, &hb),
                     ac->num_heads,
                     ac->num_kv_heads,
                     hd,
                     ac->window,
                     scale,
                     want};
  t->cpu->attention(t->cpu, &a);

  // GPU.
  KvCache dkv = kv_make(gpu, num_blocks, bs, ac->num_kv_heads, hd, dtype);
  float *dk = dev_copy(gpu, k, (size_t)fill_n * stride * sizeof(float));
  float *dv = dev_copy(gpu, v, (size_t)fill_n * stride * sizeof(float));
  int64_t *dslots = dev_copy(gpu, fill_slots, (size_t)fill_n * sizeof(int64_t));
  gpu->kv_write(gpu, &dkv, ATT_LAYER, dk, dv, stride, dslots, fill_n);
  const size_t cache_n = (size_t)num_blocks * bs * kv_dim,
               cache_bytes = cache_n * kv_dtype_size(dtype);
  void *got_k = host_copy(gpu, dkv.k[ATT_LAYER], cache_bytes);
  void *got_v = host_copy(gpu, dkv.v[ATT_LAYER], cache_bytes);
  void *want_k = hkv.k[ATT_LAYER], *want_v = hkv.v[ATT_LAYER];
  if (dtype == KV_BF16)
    want_k = bf16_cache_of(hkv.k[ATT_LAYER], cache_n),
    want_v = bf16_cache_of(hkv.v[ATT_LAYER], cache_n);
  char what[140];
  snprintf(what, sizeof what, "kv_write %s, %s cache: K", ac->name, kv_dtype_name(dtype));
  expect_equal(what, got_k, want_k, cache_bytes);
  snprintf(what, sizeof what, "kv_write %s, %s cache: V", ac->name, kv_dtype_name(dtype));
  expect_equal(what, got_v, want_v, cache_bytes);
  if (dtype == KV_BF16) free(want_k), free(want_v);
  float *dq = dev_copy(gpu, q, (size_t)num_new * q_stride * sizeof(float));
  float *dsinks = dev_copy(gpu, sinks, (size_t)ac->num_heads * sizeof(float));
  float *dout = gpu->alloc(gpu, (size_t)num_new * q_dim * sizeof(float));
  const Batch *db = gpu->upload_batch(gpu, &hb);
  Batch window_batch = *db;  // what forward.c hands a hybrid cache's sliding layer
  window_batch.slot_mapping = db->window_slot_mapping;
  window_batch.block_tables = db->window_block_tables;
  AttentionArgs da = {dq,
                      q_stride,
                      &dkv,
                      ATT_LAYER,
                      dsinks,
                      hybrid ? &window_batch : db,
                      ac->num_heads,
                      ac->num_kv_heads,
                      hd,
                      ac->window,
                      scale,
                      dout};
  gpu->attention(gpu, &da);
  float *got = host_copy(gpu, dout, (size_t)num_new * q_dim * sizeof(float));
  // The tensor-core kernels take a bf16 cache with heads of 64 (unless GPTOSS_CUDA_ATTN_KERNEL=
  // cuda-cores): bf16 queries and probabilities.
  const bool tensor_cores = dtype == KV_BF16 && gpu == t->gpu && hd == 64;
  snprintf(what, sizeof what, "attention %s, %s cache%s%s", ac->name, kv_dtype_name(dtype),
           tensor_cores ? ", tensor cores" : "", hybrid ? ", hybrid window tables" : "");
  if (tensor_cores) {
    double max_want = 0;
    for (size_t i = 0; i < (size_t)num_new * q_dim; i++) max_want = fmax(max_want, fabs(want[i]));
    expect_close(what, got, want, (size_t)num_new * q_dim, 1e-2 * max_want, 1e-2, NULL, 1, 1e-2);
  } else {
    expect_close(what, got, want, (size_t)num_new * q_dim, 2e-5, 1e-4, NULL, 1, 0);
  }

  free(got), free(got_k), free(got_v), free(want);
  gpu->free(gpu, dk), gpu->free(gpu, dv), gpu->free(gpu, dslots);
  gpu->free(gpu, dq), gpu->free(gpu, dsinks), gpu->free(gpu, dout);
  kv_release(gpu, &dkv);
  kv_release(t->cpu, &hkv);
  free(pool), free(tables), free(window_tables), free(k), free(v), free(fill_slots), free(ids);
  free(pos), free(lens);
  free(qs), free(slots), free(q), free(sinks);
}

// The case with a float32 GPU cache, and with a bf16 one both on the CUDA cores and on the
// tensor cores (heads of 64); a windowed case also through hybrid window tables.
static void check_attention(Twins *t, const AttnCase *ac, uint64_t seed) {
  for (int hybrid = 0; hybrid <= (ac->window > 0); hybrid++) {
    check_attention_kv(t, t->gpu, ac, seed, KV_F32, hybrid);
    check_attention_kv(t, t->gpu_cuda_cores, ac, seed, KV_BF16, hybrid);
    check_attention_kv(t, t->gpu, ac, seed, KV_BF16, hybrid);
  }
}

static void test_attention_prefill(void **state) {
  NEED_GPU(state);
  // One prefill across block boundaries (16-token blocks), full and windowed.
  const AttnCase cases[] = {
      {"prefill 37, 8/2 heads of 64, full", 8, 2, 64, 0, 16, 1, {0}, {37}},
      {"prefill 40, 8/2 heads of 16, window 8", 8, 2, 16, 8, 16, 1, {0}, {40}},
      {"prefill 33, 4/4 heads of 32, window 1", 4, 4, 32, 1, 16, 1, {0}, {33}},
      // The tensor-core prefill kernel (bf16 cache): two head chunks of a group of 16, several
      // 64-key chunks, a window that moves within a 16-token tile, a chunk after a prefix.
      {"prefill 150, 32/2 heads of 64, window 50", 32, 2, 64, 50, 16, 1, {0}, {150}},
      {"chunk of 70 after 130 cached, 64/8 heads of 64, full", 64, 8, 64, 0, 16, 1, {130}, {70}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    check_attention(*state, &cases[i], 500 + i);
}

static void test_attention_mixed_batch(void **state) {
  NEED_GPU(state);
  // GPT-OSS's shape (64 query heads, 8 KV heads of 64): a prefill chunk after a cached prefix,
  // decode tokens (one at a block boundary and one at the window's edge), a fresh prefill.
  AttnCase c = {"mixed 4 seqs, 64/8 heads of 64, window 128",
                64,
                8,
                64,
                128,
                16,
                4,
                {20, 100, 0, 127},
                {17, 1, 5, 1}};
  check_attention(*state, &c, 600);
  c.name = "mixed 4 seqs, 64/8 heads of 64, full";
  c.window = 0;
  check_attention(*state, &c, 601);
  // Window edges crossed by a prefill chunk: positions 120 .. 139 with a window of 128.
  AttnCase e = {"chunk 120..139 after a prefix, 16/2 heads of 64, window 128",
                16,
                2,
                64,
                128,
                16,
                2,
                {120, 3},
                {20, 9}};
  check_attention(*state, &e, 602);
}

static void test_attention_groups_and_dims(void **state) {
  NEED_GPU(state);
  const AttnCase cases[] = {
      {"group 16 (two head chunks), heads of 128, blocks of 4",
       16,
       1,
       128,
       0,
       4,
       2,
       {9, 30},
       {7, 1}},
      {"group 1, heads of 256, window 5", 4, 4, 256, 5, 16, 2, {0, 11}, {13, 2}},
      {"group 4, heads of 16, blocks of 1", 8, 2, 16, 0, 1, 3, {3, 0, 8}, {1, 6, 2}},
      {"group 8, heads of 64, window 1000 beyond the keys", 16, 2, 64, 1000, 16, 1, {50}, {10}},
      // Heads of 64 on the tensor cores (bf16 cache): groups of 1, 3 and 16, decode tiles of
      // 1-4 tokens (up to 32 rows: two m16 tiles a warp), blocks of 8.
      {"group 1, heads of 64, blocks of 8", 4, 4, 64, 0, 8, 3, {70, 0, 9}, {3, 4, 1}},
      {"group 3, heads of 64, window 20", 6, 2, 64, 20, 16, 2, {45, 100}, {4, 2}},
      {"group 16 (two head chunks), heads of 64", 32, 2, 64, 0, 16, 2, {200, 17}, {1, 4}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    check_attention(*state, &cases[i], 700 + i);
}

static void test_attention_many_decodes(void **state) {
  NEED_GPU(state);
  AttnCase c = {"33 decodes, 64/8 heads of 64, window 128", 64, 8, 64, 128, 16, 33, {0}, {0}};
  for (int s = 0; s < c.num_seqs; s++) c.cached[s] = (s * 37) % 300, c.fresh[s] = 1;
  check_attention(*state, &c, 800);
  c.name = "33 decodes, 64/8 heads of 64, full";
  c.window = 0;
  check_attention(*state, &c, 801);
}

// ---------------------------------------------------------------------------------------------
// MoE: one layer of random experts on both backends; the MoE's contribution to the residual is
// compared.

typedef struct {
  GptOssConfig c;
  GptOssWeights host;  // one layer: the router and the experts
  LayerWeights layer;
  WeightMatrix *mlp1, *mlp2;  // [num_experts]
  GptOssWeights dev;
} Moe;

// router: F32 or BF16; experts: f. Router bias biased by router_bias[e] (NULL: random).
static void moe_init(Twins *t, Moe *m, int hidden, int inter, int experts, int k,
                     WeightFormat router, WeightFormat f, const float *router_bias, uint64_t seed) {
  memset(m, 0, sizeof *m);
  Rng r = {seed};
  GptOssConfig *c = &m->c;
  assert_true(config_preset("gpt-oss-tiny", c));
  c->num_layers = 1, c->hidden_size = hidden, c->intermediate_size = inter;
  c->num_experts = experts, c->experts_per_token = k;
  LayerWeights *L = &m->layer;
  L->gate = make_matrix(router, experts, hidden, &r, 1.0f);
  float *gb = random_floats(&r, (size_t)experts, 0.5f);
  for (int e = 0; router_bias && e < experts; e++) gb[e] = router_bias[e];
  L->gate_bias = gb;
  m->mlp1 = xcalloc((size_t)experts, sizeof(WeightMatrix));
  m->mlp2 = xcalloc((size_t)experts, sizeof(WeightMatrix));
  const float w_scale = f == WEIGHT_MXFP4 ? 1.0f : 0.25f;
  for (int e = 0; e < experts; e++) {
    m->mlp1[e] = make_matrix(f, 2 * inter, hidden, &r, w_scale);
    m->mlp2[e] = make_matrix(f, hidden, inter, &r, w_scale);
  }
  L->mlp1 = m->mlp1, L->mlp2 = m->mlp2;
  L->mlp1_bias = random_floats(&r, (size_t)experts * 2 * inter, 0.5f);
  L->mlp2_bias = random_floats(&r, (size_t)experts * hidden, 0.5f);
  m->host = (GptOssWeights){.config = *c, .shard = shard_whole(c), .layers = &m->layer};
  char err[512];
  if (!cuda_weights_upload(t->gpu, &m->host, &m->dev, err, sizeof err)) {
    print_error("cuda_weights_upload: %s\n", err);
    fail();
  }
}

static void moe_free(Twins *t, Moe *m) {
  cuda_weights_free(t->gpu, &m->dev);
  free_matrix(&m->layer.gate);
  for (int e = 0; e < m->c.num_experts; e++) free_matrix(&m->mlp1[e]), free_matrix(&m->mlp2[e]);
  free(m->mlp1), free(m->mlp2);
  free((void *)m->layer.gate_bias), free((void *)m->layer.mlp1_bias);
  free((void *)m->layer.mlp2_bias);
}

// The layer seen by a rank holding experts [begin, end): its first expert is begin.
static LayerWeights moe_range(const LayerWeights *L, const GptOssConfig *c, int begin) {
  LayerWeights r = *L;
  r.mlp1 += begin, r.mlp2 += begin;
  r.mlp1_bias += (size_t)begin * 2 * c->intermediate_size;
  r.mlp2_bias += (size_t)begin * c->hidden_size;
  return r;
}

// Runs num_tokens tokens (x scaled by x_scale; rounded to bf16 when bf16_x) through experts
// [begin, end) on both backends and compares: the tolerances of the header's "moe" (bf16 tensor
// cores: MXFP4 and BF16 experts) or "fp32" (F32 experts).
static void check_moe(Twins *t, const Moe *m, const char *name, int num_tokens, float x_scale,
                      bool bf16_x, int begin, int end, uint64_t seed) {
  const bool fp32 = m->mlp1[0].format == WEIGHT_F32;
  Rng r = {seed};
  const int hidden = m->c.hidden_size;
  const size_t n = (size_t)num_tokens * hidden;
  float *x = random_floats(&r, n, x_scale), *res0 = random_floats(&r, n, 1.0f);
  if (bf16_x) round_to_bf16(x, n);
  float *want = xmalloc(n * sizeof(float));
  memcpy(want, res0, n * sizeof(float));
  const LayerWeights hl = moe_range(&m->layer, &m->c, begin);
  MoeArgs a = {&m->c, &hl, x, num_tokens, begin, end, want, NULL};
  t->cpu->moe(t->cpu, &a);

  const LayerWeights dl = moe_range(&m->dev.layers[0], &m->c, begin);
  float *dx = dev_copy(t->gpu, x, n * sizeof(float)),
        *dres = dev_copy(t->gpu, res0, n * sizeof(float));
  MoeArgs da = {&m->c, &dl, dx, num_tokens, begin, end, dres, NULL};
  t->gpu->moe(t->gpu, &da);
  float *got = host_copy(t->gpu, dres, n * sizeof(float));
  double max_want = 0;
  for (size_t i = 0; i < n; i++) {
    got[i] -= res0[i];
    want[i] -= res0[i];
    max_want = fmax(max_want, fabs(want[i]));
  }
  char what[128];
  snprintf(what, sizeof what, "moe %s, %d tokens, experts [%d, %d)", name, num_tokens, begin, end);
  if (fp32)
    expect_close(what, got, want, n, 2e-5 * max_want, 1e-4, NULL, 1, 2e-5);
  else
    expect_close(what, got, want, n, 2e-2 * max_want, 2e-2, NULL, 1, 1e-2);
  free(x), free(res0), free(want), free(got);
  t->gpu->free(t->gpu, dx), t->gpu->free(t->gpu, dres);
}

static void test_moe_mxfp4(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  Moe m;
  // hidden 128, intermediate 96: mlp2's 96 columns end in half a 64-column tile.
  moe_init(t, &m, 128, 96, 8, 4, WEIGHT_F32, WEIGHT_MXFP4, NULL, 900);
  const int tokens[] = {1, 2, 5, 37, 300};
  for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++)
    check_moe(t, &m, "mxfp4 128/96 8x top-4", tokens[i], 1.0f, false, 0, 8, 910 + i);
  check_moe(t, &m, "mxfp4 128/96 8x top-4, large x (clamps)", 64, 8.0f, false, 0, 8, 920);
  moe_free(t, &m);
}

// Every expert block's scale drawn from [lo, hi], the device copy uploaded again.
static void moe_set_scales(Twins *t, Moe *m, int lo, int hi, uint64_t seed) {
  Rng r = {seed};
  for (int e = 0; e < m->c.num_experts; e++) {
    const WeightMatrix *w[2] = {&m->mlp1[e], &m->mlp2[e]};
    for (int i = 0; i < 2; i++) {
      uint8_t *scales = (uint8_t *)w[i]->scales;
      for (int64_t b = 0; b < w[i]->rows * w[i]->cols / 32; b++)
        scales[b] = (uint8_t)(lo + (int)(rng_next(&r) % (uint64_t)(hi - lo + 1)));
    }
  }
  cuda_weights_free(t->gpu, &m->dev);
  char err[512];
  assert_true(cuda_weights_upload(t->gpu, &m->host, &m->dev, err, sizeof err));
}

// The decode's two paths (cuda_decode.cuh): block scales 2 .. 128 take one bf16x2 product,
// others the float path. Scales up to 2^4 cross from one to the other within a row; 2^63 .. 2^67
// take the float path only. x is small enough that mlp1's products stay inside the SwiGLU's clamp.
// 37 tokens go through the tile kernel, 600 through the cuBLAS path (intermediate 96: widths of
// whole 32-column blocks that the wide kernel's 64-column stages do not fit).
static void test_moe_mxfp4_scale_paths(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  const int ranges[2][2] = {{126, 131}, {190, 194}};
  for (int i = 0; i < 2; i++) {
    Moe m;
    moe_init(t, &m, 128, 96, 8, 4, WEIGHT_F32, WEIGHT_MXFP4, NULL, 940 + i);
    moe_set_scales(t, &m, ranges[i][0], ranges[i][1], 950 + i);
    char name[64];
    snprintf(name, sizeof name, "mxfp4 scales %d .. %d", ranges[i][0], ranges[i][1]);
    const float x_scale = ldexpf(1.0f, 127 - ranges[i][1] - 4);
    check_moe(t, &m, name, 37, x_scale, false, 0, 8, 960 + i);
    check_moe(t, &m, name, 600, x_scale, false, 0, 8, 970 + i);  // the cuBLAS path's decode
    moe_free(t, &m);
  }
}

static void test_moe_formats(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  const WeightFormat formats[2] = {WEIGHT_BF16, WEIGHT_F32};
  for (int f = 0; f < 2; f++) {
    Moe m;
    moe_init(t, &m, 96, 64, 6, 2, WEIGHT_BF16, formats[f], NULL, 1000 + f);
    char name[64];
    snprintf(name, sizeof name, "%s experts, bf16 router on bf16 x",
             weight_format_name(formats[f]));
    check_moe(t, &m, name, 45, 1.0f, true, 0, 6, 1010 + f);
    moe_free(t, &m);
    moe_init(t, &m, 128, 96, 8, 4, WEIGHT_F32, formats[f], NULL, 1020 + f);
    snprintf(name, sizeof name, "%s experts, f32 router", weight_format_name(formats[f]));
    check_moe(t, &m, name, 70, 1.0f, false, 1, 7, 1030 + f);
    moe_free(t, &m);
  }
}

// Uneven loads: the router bias sends every token to experts 0, 1 and 2 (several 32-row tiles
// each), its fourth pick to one of 3, 4 and 5, and none to experts 6 and 7.
static void test_moe_uneven_and_range(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  const float bias[8] = {3.0f, 2.9f, 2.8f, 0.5f, 0.4f, 0.3f, -40.0f, -40.0f};
  Moe m;
  moe_init(t, &m, 64, 64, 8, 4, WEIGHT_F32, WEIGHT_MXFP4, bias, 1100);
  check_moe(t, &m, "uneven (idle experts 6, 7)", 150, 0.1f, false, 0, 8, 1110);
  check_moe(t, &m, "uneven, expert range", 150, 0.1f, false, 2, 5, 1111);
  check_moe(t, &m, "uneven, range of idle experts only", 20, 0.1f, false, 6, 8, 1112);
  moe_free(t, &m);
  Moe w;
  moe_init(t, &w, 128, 96, 16, 4, WEIGHT_F32, WEIGHT_MXFP4, NULL, 1120);
  check_moe(t, &w, "16 experts, range [5, 13)", 77, 1.0f, false, 5, 13, 1121);
  check_moe(t, &w, "16 experts, range [15, 16)", 77, 1.0f, false, 15, 16, 1122);
  moe_free(t, &w);
}

// Ties in the router (all logits equal: experts 0 .. k-1 win).
static void test_moe_ties(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  const float zero_bias[8] = {0};
  Moe m;
  moe_init(t, &m, 64, 32, 8, 3, WEIGHT_F32, WEIGHT_MXFP4, zero_bias, 1200);
  memset((void *)m.layer.gate.data, 0, 8 * 64 * sizeof(float));  // every logit 0
  cuda_weights_free(t->gpu, &m.dev);
  char err[512];
  assert_true(cuda_weights_upload(t->gpu, &m.host, &m.dev, err, sizeof err));
  check_moe(t, &m, "all logits tied: experts 0, 1, 2", 9, 1.0f, false, 0, 8, 1210);
  moe_free(t, &m);
}

// GPT-OSS's own widths (minutes on the emulator).
static void test_moe_gpt_oss_widths(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  Moe g;
  moe_init(t, &g, 2880, 2880, 8, 4, WEIGHT_F32, WEIGHT_MXFP4, NULL, 1220);
  check_moe(t, &g, "gpt-oss widths 2880/2880, 8x top-4", 1, 1.0f, false, 0, 8, 1221);
  check_moe(t, &g, "gpt-oss widths 2880/2880, 8x top-4", 40, 1.0f, false, 0, 8, 1222);
  // 40 rows an expert on average: most experts take two 32-row items at GPT-OSS's widths
  check_moe(t, &g, "gpt-oss widths 2880/2880, 8x top-4", 80, 1.0f, false, 0, 8, 1223);
  moe_free(t, &g);
}

// The wide MXFP4 kernel (cuda_moe_wide.cu: 128-row items, 128 weight rows a block, 64-column
// stages). By default a call takes it when its pairs average 64 to 255 per expert and both
// widths are multiples of 64: hidden 192 and intermediate 320 give mlp1 5 whole 128-row blocks
// over 3 stages and mlp2 one and a half blocks over 5 stages.
static void test_moe_wide(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  Moe m;
  moe_init(t, &m, 192, 320, 8, 4, WEIGHT_F32, WEIGHT_MXFP4, NULL, 1400);
  // 150 rows an expert on average: items of 128 and a partial one (idle warps, partial m16 tiles)
  check_moe(t, &m, "wide 192/320 8x top-4", 300, 1.0f, false, 0, 8, 1401);
  check_moe(t, &m, "wide 192/320 8x top-4", 500, 1.0f, false, 0, 8, 1402);
  check_moe(t, &m, "wide 192/320 8x top-4, large x (clamps)", 200, 8.0f, false, 0, 8, 1403);
  check_moe(t, &m, "wide 192/320 8x top-4, expert range", 300, 1.0f, false, 3, 6, 1404);
  moe_free(t, &m);
  // Every token on experts 0, 1 and 2 (300 rows each: items of 128, 128 and 44), none on 6, 7.
  const float bias[8] = {3.0f, 2.9f, 2.8f, 0.5f, 0.4f, 0.3f, -40.0f, -40.0f};
  moe_init(t, &m, 128, 128, 8, 4, WEIGHT_F32, WEIGHT_MXFP4, bias, 1410);
  check_moe(t, &m, "wide, uneven (idle experts 6, 7)", 300, 0.1f, false, 0, 8, 1411);
  moe_free(t, &m);
}

// Whether two runs of the same MoE call on the GPU give the same bits (the grouping orders an
// expert's pairs differently each time; cuda_moe.cu says why that may matter).
static bool moe_repeats_bits(Twins *t, const Moe *m, int num_tokens, uint64_t seed) {
  Rng r = {seed};
  const size_t n = (size_t)num_tokens * m->c.hidden_size;
  float *x = random_floats(&r, n, 1.0f), *zero = xcalloc(n, sizeof(float)), *out[2];
  float *dx = dev_copy(t->gpu, x, n * sizeof(float));
  for (int run = 0; run < 2; run++) {
    float *dres = dev_copy(t->gpu, zero, n * sizeof(float));
    MoeArgs a = {&m->c, &m->dev.layers[0], dx, num_tokens, 0, m->c.num_experts, dres, NULL};
    t->gpu->moe(t->gpu, &a);
    out[run] = host_copy(t->gpu, dres, n * sizeof(float));
    t->gpu->free(t->gpu, dres);
  }
  const bool same = memcmp(out[0], out[1], n * sizeof(float)) == 0;
  free(x), free(zero), free(out[0]), free(out[1]);
  t->gpu->free(t->gpu, dx);
  return same;
}

// t's CPU twin beside a GPU backend created with var=value (fails the test if it cannot be).
// Destroy its gpu after.
static Twins twins_with(const Twins *t, const char *var, const char *value) {
  char err[512];
  Twins with = {t->cpu, gpu_with(var, value, err, sizeof err), NULL};
  if (!with.gpu) print_error("cuda_backend_create with %s=%s: %s\n", var, value, err);
  assert_non_null(with.gpu);
  return with;
}

// The cuBLAS path (cuda_moe_cublas.cu: weights decoded to bf16 a chunk of experts at a time,
// one product per expert). By default a call of MXFP4 experts takes it when its pairs average
// 256 or more per expert: 600 tokens of top-4 over 8 experts (300), with the clamps, an expert
// range (rows before and after the range's in the sorted order), idle experts (and a range of
// idle experts only: no rows), 40 experts (two chunks: 32 experts' weights decoded at a time) and
// GPT-OSS's widths (one expert's mlp1 a chunk; the call run twice says whether its bits repeat);
// then with the threshold moved (GPTOSS_CUDA_MOE_CUBLAS_ROWS): 1 (5 tokens take the path) and 0
// (never: 600 tokens take the wide kernel).
static void test_moe_cublas(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  Moe m;
  moe_init(t, &m, 192, 320, 8, 4, WEIGHT_F32, WEIGHT_MXFP4, NULL, 1440);
  check_moe(t, &m, "cublas 192/320 8x top-4", 600, 1.0f, false, 0, 8, 1441);
  check_moe(t, &m, "cublas 192/320 8x top-4, large x (clamps)", 600, 8.0f, false, 0, 8, 1442);
  check_moe(t, &m, "cublas 192/320 8x top-4, expert range", 600, 1.0f, false, 3, 6, 1443);
  moe_free(t, &m);
  const float bias[8] = {3.0f, 2.9f, 2.8f, 0.5f, 0.4f, 0.3f, -40.0f, -40.0f};
  moe_init(t, &m, 128, 128, 8, 4, WEIGHT_F32, WEIGHT_MXFP4, bias, 1450);
  check_moe(t, &m, "cublas, uneven (idle experts 6, 7)", 600, 0.1f, false, 0, 8, 1451);
  check_moe(t, &m, "cublas, range of idle experts only", 600, 0.1f, false, 6, 8, 1452);
  moe_free(t, &m);
  moe_init(t, &m, 128, 128, 40, 4, WEIGHT_F32, WEIGHT_MXFP4, NULL, 1455);
  check_moe(t, &m, "cublas, 40 experts (two chunks)", 2600, 1.0f, false, 0, 40, 1456);
  check_moe(t, &m, "cublas, 40 experts, range 3..40", 2600, 1.0f, false, 3, 40, 1457);
  moe_free(t, &m);
  moe_init(t, &m, 2880, 2880, 8, 4, WEIGHT_F32, WEIGHT_MXFP4, NULL, 1460);
  check_moe(t, &m, "cublas, gpt-oss widths 2880/2880, 8x top-4", 600, 1.0f, false, 0, 8, 1461);
  print_message(
      "# cublas path, 600 tokens at gpt-oss widths, twice: %s\n",
      moe_repeats_bits(t, &m, 600, 1462) ? "the same bits" : "other bits (see cuda_moe.cu)");
  moe_free(t, &m);
  const char *rows[] = {"1", "0"};
  const int tokens[] = {5, 600};
  for (int i = 0; i < 2; i++) {
    char name[96];
    Twins moved = twins_with(t, "GPTOSS_CUDA_MOE_CUBLAS_ROWS", rows[i]);
    moe_init(&moved, &m, 192, 320, 8, 4, WEIGHT_F32, WEIGHT_MXFP4, NULL, 1470);
    snprintf(name, sizeof name, "GPTOSS_CUDA_MOE_CUBLAS_ROWS=%s, 192/320 8x top-4", rows[i]);
    check_moe(&moved, &m, name, tokens[i], 1.0f, false, 0, 8, 1471 + i);
    moe_free(&moved, &m);
    moved.gpu->destroy(moved.gpu);
  }
}

// GPTOSS_CUDA_MOE_KERNEL=wide, wide32 or cublas: the wide kernel's 128-row or 32-row shape, or
// the cuBLAS path, for every call, at 1 to 37 rows an expert (the default gives them the tile
// kernel), several 32-row items an expert (300 tokens) and GPT-OSS's widths (45 stages).
static void check_moe_forced(Twins *t, const char *kernel) {
  char name[96];
  Twins forced = twins_with(t, "GPTOSS_CUDA_MOE_KERNEL", kernel);
  Moe m;
  moe_init(&forced, &m, 192, 320, 8, 4, WEIGHT_F32, WEIGHT_MXFP4, NULL, 1420);
  snprintf(name, sizeof name, "%s 192/320 8x top-4", kernel);
  const int tokens[] = {1, 2, 5, 37, 300};
  for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++)
    check_moe(&forced, &m, name, tokens[i], 1.0f, false, 0, 8, 1421 + i);
  moe_free(&forced, &m);
  moe_init(&forced, &m, 2880, 2880, 8, 4, WEIGHT_F32, WEIGHT_MXFP4, NULL, 1430);
  snprintf(name, sizeof name, "%s, gpt-oss widths 2880/2880, 8x top-4", kernel);
  check_moe(&forced, &m, name, 40, 1.0f, false, 0, 8, 1431);
  moe_free(&forced, &m);
  forced.gpu->destroy(forced.gpu);
}

static void test_moe_forced(void **state) {
  NEED_GPU(state);
  check_moe_forced(*state, "wide");
  check_moe_forced(*state, "wide32");
  check_moe_forced(*state, "cublas");
}

// ---------------------------------------------------------------------------------------------
// sample: each row's id against a float64 reference and the host sampler (core/sampler.h).

// Whether id is the float64 answer for row x [vocab] at temperature t and draw: the running sum
// of exp((x_i - max) / t) in id order passes draw x total at id, give or take 1e-6 of the total
// (float sums in another order move a boundary by about that).
static bool sample_is_exact(const float *x, int vocab, float t, double draw, int id) {
  double max = x[0], total = 0;
  for (int i = 1; i < vocab; i++) max = fmax(max, x[i]);
  for (int i = 0; i < vocab; i++) total += exp((x[i] - max) / t);
  const double target = draw * total, slack = 1e-6 * total;
  double before = 0;
  for (int i = 0; i < id; i++) before += exp((x[i] - max) / t);
  const double after = before + exp((x[id] - max) / t);
  return before - slack <= target && target < after + slack;
}

// A row's logprobs from the device against the host's (common/pick.h, pick_logprobs): the same
// most probable ids in the same order (ties to the lower id), the values within 1e-5 (the log
// normaliser's sum runs in another order), the sampled id's from the same normaliser.
static void check_logprobs(int row, const float *x, int vocab, int id, int num_top,
                           const PickLogprobs *got) {
  PickLogprobs want;
  const float log_norm = pick_logprobs(x, vocab, num_top, &want);
  if (got->num_top != want.num_top)
    print_error("row %d: %d top logprobs, want %d\n", row, got->num_top, want.num_top);
  assert_int_equal(got->num_top, want.num_top);
  for (int j = 0; j < want.num_top; j++) {
    if (got->top_ids[j] != want.top_ids[j])
      print_error("row %d: top %d is id %u, want %u\n", row, j, got->top_ids[j], want.top_ids[j]);
    assert_int_equal(got->top_ids[j], want.top_ids[j]);
    assert_float_equal(got->top_logprobs[j], want.top_logprobs[j], 1e-5);
  }
  assert_float_equal(got->logprob, x[id] - log_norm, 1e-5);
}

// Rows of vocab logits (uniform in [-scale, scale), every fifth row tied at its max), each
// sampled on the device at temperatures {0, 0.7, 1, 2.5, -1 (left to the host)} in turn with
// random draws; greedy must equal the host's argmax, a draw must land in its float64 interval,
// and most draws must agree with the host sampler exactly; every third row also asks for
// logprobs (check_logprobs).
static void check_sample(Twins *t, int rows, int vocab, float scale, uint64_t seed) {
  static const float temperatures[] = {0.0f, 0.7f, 1.0f, 2.5f, -1.0f};
  Rng r = {seed};
  float *x = random_floats(&r, (size_t)rows * vocab, scale);
  SampleRow *plan = xcalloc((size_t)rows, sizeof *plan);
  int32_t *ids = xmalloc((size_t)rows * sizeof *ids);
  for (int row = 0; row < rows; row++) {
    float *xr = x + (size_t)row * vocab;
    if (row % 5 == 0 && vocab > 2) xr[vocab / 2] = xr[vocab - 1] = scale;  // a tie for the max
    plan[row].temperature = temperatures[row % 5];
    plan[row].top_p = 1.0f;
    plan[row].logprobs = row % 3 == 0;  // every temperature, 0 .. 20 of the most probable
    plan[row].num_top_logprobs = row % 21;
    plan[row].draw = row == 1   ? 0.0
                     : row == 2 ? 1.0 - 0x1p-53
                                : (double)(rng_next(&r) >> 11) * 0x1p-53;
    ids[row] = 12345;  // poison: every row must be written
  }
  float *dx = dev_copy(t->gpu, x, (size_t)rows * vocab * sizeof(float));
  PickLogprobs *lp = xcalloc((size_t)rows, sizeof *lp);
  t->gpu->sample(t->gpu, dx, rows, vocab, plan, ids, lp);
  SamplerScratch scratch = {0};
  int drawn = 0, agree = 0;
  for (int row = 0; row < rows; row++) {
    const float *xr = x + (size_t)row * vocab;
    const float temp = plan[row].temperature;
    if (temp < 0) {
      assert_int_equal(ids[row], -1);
      continue;
    }
    const SamplingParams p = {.temperature = temp, .top_p = 1.0f};
    const int want = (int)sampler_sample_drawn(xr, vocab, &p, plan[row].draw, &scratch);
    if (plan[row].logprobs)
      check_logprobs(row, xr, vocab, ids[row], plan[row].num_top_logprobs, &lp[row]);
    if (temp == 0) {
      if (ids[row] != want) print_error("row %d (greedy): got %d, want %d\n", row, ids[row], want);
      assert_int_equal(ids[row], want);
      continue;
    }
    assert_true(ids[row] >= 0 && ids[row] < vocab);
    if (!sample_is_exact(xr, vocab, temp, plan[row].draw, ids[row])) {
      print_error("row %d (t %g, draw %.17g): id %d is not the float64 answer (host: %d)\n", row,
                  temp, plan[row].draw, ids[row], want);
      fail();
    }
    drawn++;
    agree += ids[row] == want;
  }
  print_message("# sample %d rows of %d (scale %g): greedy exact, %d of %d draws as the host's\n",
                rows, vocab, scale, agree, drawn);
  assert_true(agree * 10 >= drawn * 9);
  sampler_scratch_free(&scratch);
  free(x), free(plan), free(ids), free(lp);
  t->gpu->free(t->gpu, dx);
}

// Split by row length so that the short rows, seconds on the emulator, can run race-checked.
static void test_sample_short_rows(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  check_sample(t, 10, 1, 1.0f, 1300);     // one id: always 0
  check_sample(t, 25, 33, 1.0f, 1301);    // a partial last chunk in every warp's segment
  check_sample(t, 50, 1000, 4.0f, 1302);  // fewer ids than threads
}

static void test_sample_gpt_oss_rows(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  check_sample(t, 100, 201088, 1.0f, 1303);   // GPT-OSS's vocabulary, flat
  check_sample(t, 100, 201088, 16.0f, 1304);  // peaked (a few ids hold the mass)
}

// Sorts ids by weight descending, lower id first on ties (the kept set's order).
static int by_weight_desc(const void *a, const void *b, void *weights) {
  const int i = *(const int *)a, j = *(const int *)b;
  const double wi = ((const double *)weights)[i], wj = ((const double *)weights)[j];
  if (wi != wj) return wi < wj ? 1 : -1;
  return i < j ? -1 : 1;
}

// Whether id is the float64 answer for a top-k / top-p row (pick_top's rule): the weights
// exp((x_i - max) / t) most probable first (in id order when the row keeps them all), the top k,
// then the shortest run whose mass reaches top_p of theirs, then the running sum passing draw x the
// kept mass at id, give or take 1e-6 of the total.
static bool sample_top_is_exact(const float *x, int vocab, const SampleRow *r, int id) {
  double max = x[0], total = 0;
  for (int i = 1; i < vocab; i++) max = fmax(max, x[i]);
  double *w = xmalloc((size_t)vocab * sizeof *w);
  int *order = xmalloc((size_t)vocab * sizeof *order);
  for (int i = 0; i < vocab; i++) w[i] = exp((x[i] - max) / r->temperature), order[i] = i;
  for (int i = 0; i < vocab; i++) total += w[i];
  int kept = r->top_k > 0 && r->top_k < vocab ? r->top_k : vocab;
  if (kept < vocab || r->top_p < 1.0f)  // else the whole row, in id order
    qsort_r(order, (size_t)vocab, sizeof *order, by_weight_desc, w);
  double kept_mass = 0;
  for (int j = 0; j < kept; j++) kept_mass += w[order[j]];
  if (r->top_p < 1.0f) {
    const double target = r->top_p * kept_mass;
    double run = 0;
    int j = 0;
    while (j < kept && (run += w[order[j]], j++, run < target)) {
    }
    kept = j, kept_mass = run;
  }
  const double target = r->draw * kept_mass, slack = 1e-6 * total;
  bool exact = false;
  double before = 0;
  for (int j = 0; j < kept && !exact; j++) {
    const double after = before + w[order[j]];
    exact = order[j] == id && before - slack <= target && target < after + slack;
    before = after;
  }
  free(w), free(order);
  return exact;
}

// Rows with top-k and top-p at temperatures 0.7, 1 and 2.5 (random draws), each sampled on the
// device: the id must be the float64 answer and most must be the host sampler's exactly.
static void check_sample_top(Twins *t, int rows, int vocab, float scale, uint64_t seed) {
  static const struct {
    int k;
    float p;
  } cases[] = {{50, 1.0f}, {0, 0.9f}, {40, 0.8f}, {1, 1.0f}, {-2, 1.0f}, {0, 0.05f}};
  static const float temperatures[] = {0.7f, 1.0f, 2.5f};
  enum { NUM_CASES = sizeof cases / sizeof cases[0] };
  Rng r = {seed};
  float *x = random_floats(&r, (size_t)rows * vocab, scale);
  SampleRow *plan = xcalloc((size_t)rows, sizeof *plan);
  int32_t *ids = xmalloc((size_t)rows * sizeof *ids);
  for (int row = 0; row < rows; row++) {
    const int k = cases[row % NUM_CASES].k;
    plan[row] = (SampleRow){.temperature = temperatures[row % 3],
                            .top_k = k == -2 ? vocab - 1 : k,  // -2: all but one
                            .top_p = cases[row % NUM_CASES].p,
                            .draw = (double)(rng_next(&r) >> 11) * 0x1p-53};
    ids[row] = 12345;
  }
  float *dx = dev_copy(t->gpu, x, (size_t)rows * vocab * sizeof(float));
  t->gpu->sample(t->gpu, dx, rows, vocab, plan, ids, NULL);
  SamplerScratch scratch = {0};
  int agree = 0;
  for (int row = 0; row < rows; row++) {
    const float *xr = x + (size_t)row * vocab;
    const SamplingParams p = {
        .temperature = plan[row].temperature, .top_p = plan[row].top_p, .top_k = plan[row].top_k};
    const int want = (int)sampler_sample_drawn(xr, vocab, &p, plan[row].draw, &scratch);
    if (!(ids[row] >= 0 && ids[row] < vocab) ||
        !sample_top_is_exact(xr, vocab, &plan[row], ids[row])) {
      print_error(
          "row %d (t %g, top-k %d, top-p %g, draw %.17g): id %d is not the float64 "
          "answer (host: %d)\n",
          row, plan[row].temperature, plan[row].top_k, plan[row].top_p, plan[row].draw, ids[row],
          want);
      fail();
    }
    agree += ids[row] == want;
  }
  print_message("# sample top-k/top-p %d rows of %d (scale %g): %d of %d as the host's\n", rows,
                vocab, scale, agree, rows);
  assert_true(agree * 10 >= rows * 9);
  sampler_scratch_free(&scratch);
  free(x), free(plan), free(ids);
  t->gpu->free(t->gpu, dx);
}

static void test_sample_top_short_rows(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  check_sample_top(t, 36, 33, 1.0f, 1310);    // a partial chunk in every warp's segment
  check_sample_top(t, 36, 1000, 4.0f, 1311);  // fewer ids than threads
}

static void test_sample_top_gpt_oss_rows(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  check_sample_top(t, 36, 201088, 1.0f, 1312);   // GPT-OSS's vocabulary, flat
  check_sample_top(t, 36, 201088, 16.0f, 1313);  // peaked
}

// Two device pieces of bytes are the same bytes (both absent counts as the same).
static void expect_same_piece(Twins *t, const char *what, int layer, const void *got,
                              const void *want, size_t bytes) {
  if (!got || !want) {
    if (got != want) print_error("%s (layer %d): one side absent\n", what, layer);
    assert_true(got == want);
    return;
  }
  uint8_t *g = host_copy(t->gpu, got, bytes), *w = host_copy(t->gpu, want, bytes);
  if (memcmp(g, w, bytes)) print_error("%s (layer %d): %zu bytes differ\n", what, layer, bytes);
  assert_memory_equal(g, w, bytes);
  free(g), free(w);
}

static void expect_same_matrix(Twins *t, const char *what, int layer, const WeightMatrix *got,
                               const WeightMatrix *want) {
  assert_int_equal(got->format, want->format);
  assert_int_equal(got->rows, want->rows);
  assert_int_equal(got->cols, want->cols);
  const size_t n = (size_t)want->rows * (size_t)want->cols;
  const size_t data = want->format == WEIGHT_MXFP4 ? n / 2 : weight_matrix_bytes(want);
  expect_same_piece(t, what, layer, got->data, want->data, data);
  expect_same_piece(t, what, layer, got->scales, want->scales,
                    want->format == WEIGHT_MXFP4 ? n / 32 : 0);
}

// Dummy weights generated on the device (cuda_weights_dummy) against the host's (weights_load)
// uploaded: every matrix and vector byte for byte, for the whole model and for shards (tp 2's
// rank 1: heads, KV heads, experts, vocabulary rows and the output projection's columns sliced;
// pp 2's stages: embedding first, norm and unembedding last), bf16 and f32 dense, MXFP4 experts.
static void check_dummy_on_device(Twins *t, const char *format, int tp, int pp, int tp_rank,
                                  int pp_rank) {
  GptOssConfig c;
  assert_true(config_preset("gpt-oss-tiny", &c));
  const Shard shard = shard_of(&c, tp, pp, tp_rank, pp_rank);
  WeightsOptions o = {.load_format = LOAD_DUMMY, .seed = 5, .shard = &shard};
  assert_true(weights_formats_from_name(format, "gpt-oss-tiny", &o));
  o.expert_format = WEIGHT_MXFP4;  // the one expert format generated on the device
  char err[512];
  GptOssWeights host, want, got;
  assert_true(weights_load("gpt-oss-tiny", &o, &host, err, sizeof err));
  assert_true(cuda_weights_upload(t->gpu, &host, &want, err, sizeof err));
  if (!cuda_weights_dummy(t->gpu, &c, &o, &got, err, sizeof err)) print_error("%s\n", err);
  assert_true(got.layers != NULL);
  const int64_t hidden = c.hidden_size, E = shard.expert_end - shard.expert_begin;
  const int64_t qkv = (int64_t)(shard.num_heads + 2 * shard.num_kv_heads) * c.head_dim;
  const size_t f = sizeof(float);
  expect_same_matrix(t, "embedding", -1, &got.embedding, &want.embedding);
  expect_same_matrix(t, "unembedding", -1, &got.unembedding, &want.unembedding);
  expect_same_piece(t, "final norm", -1, got.final_norm, want.final_norm, hidden * f);
  for (int l = 0; l < shard_num_layers(&shard); l++) {
    const LayerWeights *g = &got.layers[l], *w = &want.layers[l];
    expect_same_piece(t, "attn norm", l, g->attn_norm, w->attn_norm, hidden * f);
    expect_same_matrix(t, "qkv", l, &g->qkv, &w->qkv);
    expect_same_piece(t, "qkv bias", l, g->qkv_bias, w->qkv_bias, qkv * f);
    expect_same_piece(t, "sinks", l, g->sinks, w->sinks, shard.num_heads * f);
    expect_same_matrix(t, "out", l, &g->out, &w->out);
    expect_same_piece(t, "out bias", l, g->out_bias, w->out_bias, hidden * f);
    expect_same_piece(t, "mlp norm", l, g->mlp_norm, w->mlp_norm, hidden * f);
    expect_same_matrix(t, "gate", l, &g->gate, &w->gate);
    expect_same_piece(t, "gate bias", l, g->gate_bias, w->gate_bias, c.num_experts * f);
    for (int64_t e = 0; e < E; e++) {
      expect_same_matrix(t, "mlp1", l, &g->mlp1[e], &w->mlp1[e]);
      expect_same_matrix(t, "mlp2", l, &g->mlp2[e], &w->mlp2[e]);
    }
    expect_same_piece(t, "mlp1 bias", l, g->mlp1_bias, w->mlp1_bias,
                      E * 2 * c.intermediate_size * f);
    expect_same_piece(t, "mlp2 bias", l, g->mlp2_bias, w->mlp2_bias, E * hidden * f);
  }
  print_message("# dummy weights on the device, %s, tp %d rank %d, pp %d stage %d: identical\n",
                format, tp, tp_rank, pp, pp_rank);
  cuda_weights_free(t->gpu, &got), cuda_weights_free(t->gpu, &want);
  weights_free(&host);
}

static void test_dummy_weights_on_device(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  check_dummy_on_device(t, "bf16", 1, 1, 0, 0);
  check_dummy_on_device(t, "f32", 1, 1, 0, 0);
  check_dummy_on_device(t, "bf16", 2, 1, 1, 0);
  check_dummy_on_device(t, "bf16", 2, 1, 0, 0);
  check_dummy_on_device(t, "bf16", 1, 2, 0, 0);
  check_dummy_on_device(t, "bf16", 1, 2, 0, 1);
  // MXFP4 experts only: the runner generates other formats on the host.
  GptOssConfig c;
  assert_true(config_preset("gpt-oss-tiny", &c));
  WeightsOptions o = {.load_format = LOAD_DUMMY, .expert_format = WEIGHT_BF16};
  GptOssWeights w;
  char err[512] = "";
  assert_false(cuda_weights_dummy(t->gpu, &c, &o, &w, err, sizeof err));
  assert_non_null(strstr(err, "MXFP4 experts only"));
}

// ---------------------------------------------------------------------------------------------
// A decode step recorded into a CUDA graph (backend.h: upload_graph_batch, graph_begin,
// graph_end, graph_current, graph_launch) replays as its ops run one by one: gpt-oss-tiny (dummy
// weights made on the device: bf16 dense, MXFP4 experts) over a hybrid bf16 cache, two decode steps
// of three sequences and one of two, padded to 8 (dist/decode_batch.h; tables of 4 blocks a row,
// uploaded into rows of 8), op by op over one cache and by the graph over another: the logits and
// the caches agree. Then a product that grows the backend's scratch, after which the graph is no
// longer current.

// A bf16 cache array as floats (free it).
static float *kv_floats(Backend *gpu, const void *array, size_t n) {
  uint16_t *bits = (uint16_t *)host_copy(gpu, array, n * sizeof(uint16_t));
  float *f = (float *)xmalloc(n * sizeof *f);
  for (size_t i = 0; i < n; i++) f[i] = bf16_to_f32(bits[i]);
  free(bits);
  return f;
}

static void test_decode_graph(void **state) {
  NEED_GPU(state);
  char err[512];
  Backend *gpu = cuda_backend_create(0, err, sizeof err);  // its own: one graph layout a backend
  assert_non_null(gpu);
  GptOssConfig c;
  assert_true(config_preset("gpt-oss-tiny", &c));
  WeightsOptions o = {.load_format = LOAD_DUMMY, .seed = 3};
  assert_true(weights_formats_from_name("bf16", "gpt-oss-tiny", &o));
  o.expert_format = WEIGHT_MXFP4;
  GptOssWeights w;
  if (!cuda_weights_dummy(gpu, &c, &o, &w, err, sizeof err)) fail_msg("%s", err);
  Model m;
  if (!model_init(&m, &w, gpu, NULL, 256, 0, err, sizeof err)) fail_msg("%s", err);
  KvCache eager_kv, graph_kv;
  assert_true(kv_cache_init(&eager_kv, gpu, &c, NULL, KV_BF16, 16, BLOCK, true, err, sizeof err));
  assert_true(kv_cache_init(&graph_kv, gpu, &c, NULL, KV_BF16, 16, BLOCK, true, err, sizeof err));
  const size_t vocab = (size_t)c.vocab_size;
  float *logits = (float *)gpu->alloc(gpu, 256 * vocab * sizeof(float));
  assert_non_null(logits);
  Call call;
  const int zero[SEQS] = {0}, one[SEQS] = {1, 1, 1};
  model_forward(&m, call_build(&call, zero, LENS), &eager_kv, logits);  // the prompts
  model_forward(&m, call_build(&call, zero, LENS), &graph_kv, logits);
  // Recorded over padding only (which writes no KV), after one run of it.
  DecodeBatch d;
  decode_batch_init(&d, 8, WIDTH, true);
  const Batch none = {0};
  const Batch *b = gpu->upload_graph_batch(gpu, decode_batch_pad(&d, &none, 8), 8, 2 * WIDTH);
  model_forward_uploaded(&m, b, &graph_kv, logits);
  if (!gpu->graph_begin(gpu, err, sizeof err)) fail_msg("graph_begin: %s", err);
  model_forward_uploaded(&m, b, &graph_kv, logits);
  void *graph = gpu->graph_end(gpu, err, sizeof err);
  if (!graph) fail_msg("graph_end: %s", err);
  for (int step = 0; step < 3; step++) {  // the third: sequences 0 and 1 only (6 padding rows)
    int first[SEQS];
    for (int s = 0; s < SEQS; s++) first[s] = LENS[s] + step;
    Batch b = *call_build(&call, first, one);
    if (step == 2) b.num_seqs = b.num_tokens = b.num_logits = 2;
    const Batch *padded = decode_batch_pad(&d, &b, 8);
    const size_t rows = (size_t)b.num_seqs * vocab;
    model_forward(&m, padded, &eager_kv, logits);
    float *want = (float *)host_copy(gpu, logits, rows * sizeof(float));
    gpu->zero(gpu, logits, rows * sizeof(float));  // the graph must write them again
    gpu->upload_graph_batch(gpu, padded, 8, 2 * WIDTH);
    assert_true(gpu->graph_current(gpu, graph));
    gpu->graph_launch(gpu, graph);
    float *got = (float *)host_copy(gpu, logits, rows * sizeof(float));
    char what[80];
    snprintf(what, sizeof what, "decode step %d (%d sequences) by its graph: logits", step,
             b.num_seqs);
    expect_close(what, got, want, rows, 1e-5, 1e-4, NULL, 1, 0);
    free(want), free(got);
  }
  const size_t n = (size_t)eager_kv.num_blocks * BLOCK * eager_kv.num_kv_heads * eager_kv.head_dim;
  for (int a = 0; a < eager_kv.num_arrays; a++) {
    const void *arrays[2][2] = {{eager_kv.k_arrays[a], graph_kv.k_arrays[a]},
                                {eager_kv.v_arrays[a], graph_kv.v_arrays[a]}};
    for (int kv = 0; kv < 2; kv++) {
      float *want = kv_floats(gpu, arrays[kv][0], n), *got = kv_floats(gpu, arrays[kv][1], n);
      char what[80];
      snprintf(what, sizeof what, "KV array %d %s after the graph's steps", a, kv ? "v" : "k");
      expect_close(what, got, want, n, 1e-5, 1e-2, NULL, 1, 0);  // a bf16 ulp
      free(want), free(got);
    }
  }
  // A product of more rows than any before grows the scratch the graph reads.
  gpu->linear(gpu, &w.unembedding, NULL, m.x, 256, logits, false);
  assert_false(gpu->graph_current(gpu, graph));
  print_message("# a graph recorded before the scratch grew is no longer current\n");
  gpu->graph_free(gpu, graph);
  decode_batch_free(&d);
  gpu->free(gpu, logits);
  kv_cache_free(&eager_kv), kv_cache_free(&graph_kv);
  model_free(&m);
  cuda_weights_free(gpu, &w);
  gpu->destroy(gpu);
}

static void test_weights_refuse_q8(void **state) {
  NEED_GPU(state);
  Twins *t = *state;
  static const uint8_t bytes[64];
  GptOssWeights host = {.unembedding = {WEIGHT_Q8, 16, 4, bytes, bytes}};
  GptOssWeights dev;
  char err[512] = "";
  assert_false(cuda_weights_upload(t->gpu, &host, &dev, err, sizeof err));
  print_message("# Q8 refused: %s\n", err);
  assert_non_null(strstr(err, "Q8"));
  assert_non_null(strstr(err, "unembedding"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_device_is_reported),
      cmocka_unit_test(test_alloc_is_zeroed_and_batch_uploads),
      cmocka_unit_test(test_add_zero_gather),
      cmocka_unit_test(test_embed),
      cmocka_unit_test(test_rmsnorm),
      cmocka_unit_test(test_rope),
      cmocka_unit_test(test_linear_f32),
      cmocka_unit_test(test_linear_bf16_exact_inputs),
      cmocka_unit_test(test_linear_bf16),
      cmocka_unit_test(test_linear_mxfp4),
      cmocka_unit_test(test_attention_prefill),
      cmocka_unit_test(test_attention_mixed_batch),
      cmocka_unit_test(test_attention_groups_and_dims),
      cmocka_unit_test(test_attention_many_decodes),
      cmocka_unit_test(test_moe_mxfp4),
      cmocka_unit_test(test_moe_mxfp4_scale_paths),
      cmocka_unit_test(test_moe_formats),
      cmocka_unit_test(test_moe_uneven_and_range),
      cmocka_unit_test(test_moe_ties),
      cmocka_unit_test(test_moe_gpt_oss_widths),
      cmocka_unit_test(test_moe_wide),
      cmocka_unit_test(test_moe_cublas),
      cmocka_unit_test(test_moe_forced),
      cmocka_unit_test(test_sample_short_rows),
      cmocka_unit_test(test_sample_gpt_oss_rows),
      cmocka_unit_test(test_sample_top_short_rows),
      cmocka_unit_test(test_sample_top_gpt_oss_rows),
      cmocka_unit_test(test_dummy_weights_on_device),
      cmocka_unit_test(test_weights_refuse_q8),
      cmocka_unit_test(test_decode_graph),
  };
  return cmocka_run_group_tests_name("cuda backend vs its CPU twin", tests, setup, teardown);
}
