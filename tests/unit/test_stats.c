// test_stats.c: stats.c against hand-computed values and numpy's exact results: linear
// percentile interpolation at small n (both halves of numpy's _lerp), median, population std,
// numpy's summation order (8 accumulators, 8192-value blocks), and empty arrays.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "bench/stats.h"

// The statistic of x[n] computed through a sorted copy, as callers do.
static double percentile_of(const double *x, size_t n, double p) {
  double *sorted = stats_sorted_copy(x, n);
  double v = stats_percentile(sorted, n, p);
  free(sorted);
  return v;
}

static double median_of(const double *x, size_t n) {
  double *sorted = stats_sorted_copy(x, n);
  double v = stats_median(sorted, n);
  free(sorted);
  return v;
}

static void test_percentile_small_n(void **state) {
  (void)state;
  const double x[] = {4, 1, 3, 2};  // unsorted on purpose
  // vi = 3 * 0.99 = 2.97: 4 - (4 - 3) * (1 - 0.97), numpy's 3.9699999999999998.
  assert_true(percentile_of(x, 4, 99) == 3.9699999999999998);
  assert_true(percentile_of(x, 4, 25) == 1.75);  // vi = 0.75
  assert_true(percentile_of(x, 4, 50) == 2.5);   // vi = 1.5
  assert_true(percentile_of(x, 4, 0) == 1);
  assert_true(percentile_of(x, 4, 100) == 4);
  const double pair[] = {10, 20};
  assert_true(percentile_of(pair, 2, 30) == 13);  // g = 0.3 < 0.5: 10 + 10 * 0.3
  const double one[] = {7.5};
  assert_true(percentile_of(one, 1, 99) == 7.5);
  assert_true(percentile_of(one, 1, 0) == 7.5);
}

static void test_percentile_lerp_from_above(void **state) {
  (void)state;
  // g = 0.51 >= 0.5: numpy computes 0.7 - 0.6 * 0.49 = 0.40599999999999997, where
  // 0.1 + 0.6 * 0.51 would give 0.406.
  const double x[] = {0.1, 0.7};
  assert_true(percentile_of(x, 2, 51) == 0.40599999999999997);
}

static void test_median(void **state) {
  (void)state;
  const double odd[] = {3, 1, 2}, even[] = {4, 1, 3, 2};
  assert_true(median_of(odd, 3) == 2);
  assert_true(median_of(even, 4) == 2.5);
}

static void test_mean_std(void **state) {
  (void)state;
  const double x[] = {1, 2, 3, 4};
  assert_true(stats_mean(x, 4) == 2.5);
  assert_true(stats_std(x, 4) == 1.118033988749895);  // sqrt(1.25): population, ddof = 0
  const double y[] = {2, 4, 4, 4, 5, 5, 7, 9};
  assert_true(stats_mean(y, 8) == 5);
  assert_true(stats_std(y, 8) == 2);
  const double same[] = {0.25, 0.25, 0.25};
  assert_true(stats_std(same, 3) == 0);
}

static void test_summation_order(void **state) {
  (void)state;
  // 1e16 then fifteen 1s. Left to right, each 1 is lost (1e16 + 1 rounds back to 1e16). numpy's
  // 8 accumulators lose only the 1 added to 1e16: r0 = 1e16, r1..r7 = 2, sum = 1e16 + 14.
  double x[16] = {1e16};
  for (int i = 1; i < 16; i++) x[i] = 1;
  assert_true(stats_mean(x, 16) == 625000000000000.875);
  // Beyond 8192 values numpy sums 8192-value blocks one after the other: np.mean of 1/(i+1),
  // i < 10000 (numpy 1.24). One pairwise sum over all 10000 would end in ...438.
  double *h = malloc(10000 * sizeof *h);
  for (int i = 0; i < 10000; i++) h[i] = 1.0 / (i + 1);
  assert_true(stats_mean(h, 10000) == 0.0009787606036044383);
  free(h);
}

static void test_empty(void **state) {
  (void)state;
  double *sorted = stats_sorted_copy(NULL, 0);
  assert_true(stats_mean(NULL, 0) == 0.0);
  assert_true(stats_std(NULL, 0) == 0.0);
  assert_true(stats_median(sorted, 0) == 0.0);
  assert_true(stats_percentile(sorted, 0, 99) == 0.0);
  free(sorted);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_percentile_small_n), cmocka_unit_test(test_percentile_lerp_from_above),
      cmocka_unit_test(test_median),             cmocka_unit_test(test_mean_std),
      cmocka_unit_test(test_summation_order),    cmocka_unit_test(test_empty),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
