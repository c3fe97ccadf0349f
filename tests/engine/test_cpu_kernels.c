// test_cpu_kernels.c: the CPU backend's building blocks below the ops (test_cpu_ops.c tests the
// ops): the thread pool (every item of a loop runs exactly once, on a valid thread, over many
// loop sizes, piece sizes and thousands of loops in a row), the AVX-512 helpers (the vector exp
// against libm's expf, the 16-vector lane sums and 16x16 transpose against scalar loops), which
// run only where the CPU has AVX-512, the AVX2 helpers (the vector exp against expf, the
// sign-moved int8 dot product, lane sums, max |x| and quantization against scalar loops), which
// run only where it has AVX2 and FMA,
// and which kernels each backend constructor lets the backend choose.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/cpu_avx2.h"
#include "backend/cpu/cpu_avx512.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_pool.h"
#include "common/check.h"

// ---------------------------------------------------------------------------------------------
// pool

typedef struct {
  _Atomic int *count;  // [num_items] times each item ran
  int num_threads;
  _Atomic int bad_tid;
} CountCtx;

static void count_task(void *ctx, int64_t begin, int64_t end, int tid) {
  CountCtx *c = ctx;
  if (tid < 0 || tid >= c->num_threads) atomic_store(&c->bad_tid, 1);
  for (int64_t i = begin; i < end; i++) atomic_fetch_add(&c->count[i], 1);
}

static void test_pool_runs_every_item_once(void **state) {
  (void)state;
  for (int threads = 1; threads <= 3; threads++) {
    CpuPool *p = cpu_pool_create(threads);
    const int64_t sizes[] = {0, 1, 2, 7, 100, 1000, 4099};
    const int64_t grains[] = {0, 1, 3, 64, 5000};
    _Atomic int *count = xcalloc(4099, sizeof *count);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
      for (size_t g = 0; g < sizeof grains / sizeof *grains; g++) {
        for (int64_t k = 0; k < sizes[i]; k++) atomic_store(&count[k], 0);
        CountCtx c = {count, threads, 0};
        cpu_pool_run(p, sizes[i], grains[g], count_task, &c);
        for (int64_t k = 0; k < sizes[i]; k++)
          if (atomic_load(&count[k]) != 1)
            fail_msg("%d threads, %lld items, grain %lld: item %lld ran %d times", threads,
                     (long long)sizes[i], (long long)grains[g], (long long)k,
                     atomic_load(&count[k]));
        assert_int_equal(atomic_load(&c.bad_tid), 0);
      }
    free(count);
    cpu_pool_destroy(p);
  }
}

typedef struct {
  _Atomic int64_t sum;
} SumCtx;

static void sum_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  SumCtx *c = ctx;
  for (int64_t i = begin; i < end; i++) atomic_fetch_add(&c->sum, i);
}

// Thousands of tiny loops back to back (workers that wake late must join only the current
// one), with pauses long enough for the workers to fall asleep now and then.
static void test_pool_many_loops(void **state) {
  (void)state;
  CpuPool *p = cpu_pool_create(2);
  for (int loop = 0; loop < 20000; loop++) {
    SumCtx c = {0};
    const int64_t n = 1 + loop % 37;
    cpu_pool_run(p, n, 1 + loop % 3, sum_task, &c);
    assert_int_equal(atomic_load(&c.sum), n * (n - 1) / 2);
    if (loop % 5000 == 4999) {
      struct timespec ts = {0, 20 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  cpu_pool_destroy(p);
}

// ---------------------------------------------------------------------------------------------
// AVX-512 helpers

static bool have_avx512(void) {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

CPU_AVX512_TARGET static void exp16_avx512(const float *x, float *out) {
  _mm512_storeu_ps(out, cpu_exp512(_mm512_loadu_ps(x)));
}

CPU_AVX2_TARGET static void exp16_avx2(const float *x, float *out) {
  _mm256_storeu_ps(out, cpu_exp256(_mm256_loadu_ps(x)));
  _mm256_storeu_ps(out + 8, cpu_exp256(_mm256_loadu_ps(x + 8)));
}

// Units in the last place between a and b (finite, same sign).
static double ulps(float a, float b) {
  if (a == b) return 0;
  return fabs((double)a - b) / (nextafterf(fabsf(b), INFINITY) - fabsf(b));
}

// A vector exp (16 values at a time) against libm's expf over -100 .. 88.7, and at its edges.
static void check_exp(void (*exp16)(const float *, float *), const char *name) {
  float x[16], got[16];
  double worst = 0;
  for (int i = 0; i < 200000; i++) {  // -100 .. 88.7, including the sigmoid's range
    for (int k = 0; k < 16; k++) x[k] = -100.0f + 188.7f * (float)(i * 16 + k) / (200000.0f * 16);
    exp16(x, got);
    for (int k = 0; k < 16; k++) {
      const float want = expf(x[k]);
      if (want < 1e-37f) continue;  // subnormal results: absolute error below 1e-44
      worst = fmax(worst, ulps(got[k], want));
    }
  }
  printf("# %s: at most %.2f ulp from expf\n", name, worst);
  assert_true(worst <= 3.0);
  const float edges[16] = {0,      -0.0f,   1,           -1,          88.0f,    89.5f,
                           1000,   -103.0f, -105.0f,     -INFINITY,   INFINITY, NAN,
                           1e-30f, -1e-30f, 0.34657359f, -0.34657359f};
  exp16(edges, got);
  assert_true(got[0] == 1.0f && got[1] == 1.0f);
  assert_true(ulps(got[4], expf(88.0f)) <= 3.0);
  assert_true(isinf(got[5]) && isinf(got[6]) && isinf(got[10]));
  assert_true(got[7] >= 0.0f && got[7] < 1e-44f && got[8] == 0.0f && got[9] == 0.0f);
  assert_true(isnan(got[11]));
  assert_true(got[12] == 1.0f && got[13] == 1.0f);
}

static bool have_avx2(void) {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

// cpu_exp512 and cpu_exp256, each where the CPU has its instructions.
static void test_exp_matches_expf(void **state) {
  (void)state;
  if (have_avx512())
    check_exp(exp16_avx512, "cpu_exp512");
  else
    printf("# skipped cpu_exp512: this CPU has no AVX-512\n");
  if (have_avx2())
    check_exp(exp16_avx2, "cpu_exp256");
  else
    printf("# skipped cpu_exp256: this CPU has no AVX2 and FMA\n");
}

CPU_AVX512_TARGET static void sum_and_transpose(const float *in, float *sums, float *t) {
  __m512 a[16];
  for (int i = 0; i < 16; i++) a[i] = _mm512_loadu_ps(in + 16 * i);
  _mm512_storeu_ps(sums, cpu_sum16(a));
  cpu_transpose16(a);
  for (int i = 0; i < 16; i++) _mm512_storeu_ps(t + 16 * i, a[i]);
}

static void test_lane_sums_and_transpose(void **state) {
  (void)state;
  if (!have_avx512()) {
    printf("# skipped: this CPU has no AVX-512\n");
    return;
  }
  float in[256], sums[16], t[256];
  for (int i = 0; i < 256; i++) in[i] = (float)(i * 3 % 101) - 50.0f;  // small integers: exact
  sum_and_transpose(in, sums, t);
  for (int i = 0; i < 16; i++) {
    float want = 0;
    for (int j = 0; j < 16; j++) want += in[16 * i + j];
    assert_true(sums[i] == want);
    for (int j = 0; j < 16; j++) assert_true(t[16 * i + j] == in[16 * j + i]);
  }
}

// ---------------------------------------------------------------------------------------------
// AVX2 helpers

CPU_AVX2_TARGET static void dot4_sum8(const int8_t *w, const int8_t *x, int32_t *dots,
                                      const float *f, float *sum) {
  const __m256i acc = _mm256_set1_epi32(1000);
  const __m256i d = cpu_avx2_dot4(acc, _mm256_loadu_si256((const __m256i *)w),
                                  _mm256_loadu_si256((const __m256i *)x));
  _mm256_storeu_si256((__m256i *)dots, d);
  *sum = cpu_avx2_sum8(_mm256_loadu_ps(f));
}

CPU_AVX2_TARGET static float max_abs(const float *x, int64_t n) { return cpu_avx2_max_abs(x, n); }

CPU_AVX2_TARGET static int32_t quantize(const float *x, int64_t n, float inv, int8_t *q) {
  return cpu_avx2_quantize(x, n, inv, q);
}

// The int8 dot product at its extremes (|w| and |x| up to 127, x of either sign and zero), the
// lane sums, max |x| over lengths with and without a tail of fewer than 8, and the quantization
// (nearest even, ties included) with its sum.
static void test_avx2_helpers(void **state) {
  (void)state;
  if (!have_avx2()) {
    printf("# skipped: this CPU has no AVX2 and FMA\n");
    return;
  }
  int8_t w[32], x[32];
  for (int k = 0; k < 32; k++) {
    w[k] = (int8_t)(k % 2 ? 127 : -127 + 9 * k);
    x[k] = (int8_t)(k % 3 == 0 ? -127 : k % 3 == 1 ? 127 : 0);
  }
  x[5] = -3;
  int32_t dots[8];
  float f[8] = {1, 2, 3, 4, 5, 6, 7, 0.5f}, sum;
  dot4_sum8(w, x, dots, f, &sum);
  for (int lane = 0; lane < 8; lane++) {
    int32_t want = 1000;
    for (int k = 4 * lane; k < 4 * lane + 4; k++) want += w[k] * x[k];
    assert_int_equal(dots[lane], want);
  }
  assert_true(sum == 28.5f);
  float v[37];
  for (int k = 0; k < 37; k++) v[k] = (float)((k * 7) % 11) - 5.0f;
  v[36] = -9.0f;  // in the tail
  assert_true(max_abs(v, 36) == 5.0f && max_abs(v, 37) == 9.0f && max_abs(v, 3) == 5.0f);
  const float inv = 127.0f / 9.0f;
  int8_t q[37];
  float ties[37];
  for (int k = 0; k < 37; k++) ties[k] = (float)(k - 18) * 0.5f / inv;  // halves: ties
  const int32_t total = quantize(ties, 37, inv, q);
  int32_t want_total = 0;
  for (int k = 0; k < 37; k++) {
    const int8_t want = (int8_t)nearbyintf(ties[k] * inv);
    assert_int_equal(q[k], want);
    want_total += want;
  }
  assert_int_equal(total, want_total);
}

// The portable constructor leaves every kernel of its own out, the AVX2 one keeps AVX2 alone
// (and exists only where the CPU has it), the default one takes what the CPU has: the dispatch
// tests in test_cpu_ops.c run each group on the kernels these flags name.
static void test_backend_kernel_choice(void **state) {
  (void)state;
  Backend *portable = cpu_backend_create_portable(1), *avx2 = cpu_backend_create_avx2(1);
  Backend *fast = cpu_backend_create(1);
  assert_false(cpu_backend_uses_avx2(portable));
  assert_false(cpu_backend_uses_amx(portable));
  assert_int_equal(cpu_backend_uses_avx2(fast), have_avx2());
  if (!have_avx2()) {
    assert_null(avx2);
    printf("# skipped: no AVX2 backend on this CPU\n");
  } else {
    assert_true(cpu_backend_uses_avx2(avx2));
    assert_false(cpu_backend_uses_amx(avx2));
    assert_false(cpu_backend_uses_amx_bf16(avx2));
    avx2->destroy(avx2);
  }
  portable->destroy(portable);
  fast->destroy(fast);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pool_runs_every_item_once),
      cmocka_unit_test(test_pool_many_loops),
      cmocka_unit_test(test_exp_matches_expf),
      cmocka_unit_test(test_lane_sums_and_transpose),
      cmocka_unit_test(test_avx2_helpers),
      cmocka_unit_test(test_backend_kernel_choice),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
