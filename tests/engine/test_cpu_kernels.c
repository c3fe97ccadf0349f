// test_cpu_kernels.c: the CPU backend's building blocks below the ops (test_cpu_ops.c tests the
// ops): the thread pool (every item of a loop runs exactly once, on a valid thread, over many
// loop sizes, piece sizes and thousands of loops in a row) and the AVX-512 helpers (the vector
// exp against libm's expf, the 16-vector lane sums and 16x16 transpose against scalar loops),
// which run only where the CPU has AVX-512.
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

#include "backend/cpu/cpu_avx512.h"
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

CPU_AVX512_TARGET static void exp16(const float *x, float *out) {
  _mm512_storeu_ps(out, cpu_exp512(_mm512_loadu_ps(x)));
}

// Units in the last place between a and b (finite, same sign).
static double ulps(float a, float b) {
  if (a == b) return 0;
  return fabs((double)a - b) / (nextafterf(fabsf(b), INFINITY) - fabsf(b));
}

static void test_exp_matches_expf(void **state) {
  (void)state;
  if (!have_avx512()) {
    printf("# skipped: this CPU has no AVX-512\n");
    return;
  }
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
  printf("# cpu_exp512: at most %.2f ulp from expf\n", worst);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pool_runs_every_item_once),
      cmocka_unit_test(test_pool_many_loops),
      cmocka_unit_test(test_exp_matches_expf),
      cmocka_unit_test(test_lane_sums_and_transpose),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
