// test_loghist.c: loghist.c's bucket edges and percentiles: exact values below 64, the 1/32
// bound above it at every power of two up to INT64_MAX, nearest-rank percentiles capped by the
// exact max, negative values, merging, the mean near INT64_MAX, and the empty histogram.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bench/loghist.h"

// The percentile a histogram holding only v reports for it (the upper edge of v's bucket, as
// loghist_percentile gives it before capping at max, seen through a larger max).
static int64_t bucket_high_of(int64_t v) {
  static LogHist h;
  h = (LogHist){0};
  loghist_add(&h, v);
  loghist_add(&h, INT64_MAX);
  return loghist_percentile(&h, 50);
}

static void test_small_values_are_exact(void **state) {
  (void)state;
  for (int64_t v = 0; v < 64; v++) assert_int_equal(bucket_high_of(v), v);
  assert_int_equal(bucket_high_of(64), 65);  // from 64 on, buckets are 2^(e-5) wide
  assert_int_equal(bucket_high_of(65), 65);
  assert_int_equal(bucket_high_of(66), 67);
}

static void test_relative_error_bound(void **state) {
  (void)state;
  for (int e = 6; e < 63; e++) {
    int64_t lows[] = {INT64_C(1) << e, (INT64_C(1) << e) + 1, (INT64_C(3) << (e - 1)) - 1,
                      (int64_t)((UINT64_C(1) << (e + 1)) - 1)};
    for (size_t i = 0; i < sizeof lows / sizeof *lows; i++) {
      int64_t v = lows[i], high = bucket_high_of(v);
      assert_true(high >= v);
      assert_true((double)(high - v) <= (double)v / 32);
    }
  }
  assert_int_equal(bucket_high_of(INT64_MAX), INT64_MAX);
}

static void test_percentiles(void **state) {
  (void)state;
  static LogHist h;
  h = (LogHist){0};
  for (int64_t v = 1; v <= 100; v++) loghist_add(&h, v * 1000);  // 1 us .. 100 us
  assert_int_equal(h.num, 100);
  assert_int_equal(h.max, 100000);
  assert_int_equal(loghist_mean(&h), 50500);
  int64_t p50 = loghist_percentile(&h, 50), p99 = loghist_percentile(&h, 99);
  assert_true(p50 >= 50000 && p50 <= 50000 + 50000 / 32);  // rank 50: the value 50 us
  assert_true(p99 >= 99000 && p99 <= 100000);               // rank 99, capped by the max
  assert_int_equal(loghist_percentile(&h, 100), 100000);
  assert_true(loghist_percentile(&h, 0) >= 1000 && loghist_percentile(&h, 0) < 1032);
}

static void test_negative_merge_empty(void **state) {
  (void)state;
  static LogHist a, b;
  a = b = (LogHist){0};
  assert_int_equal(loghist_percentile(&a, 99), 0);
  assert_int_equal(loghist_mean(&a), 0);
  loghist_add(&a, -5);  // counted as 0
  assert_int_equal(a.num, 1);
  assert_int_equal(loghist_percentile(&a, 99), 0);
  for (int i = 0; i < 99; i++) loghist_add(&b, 10);
  loghist_add(&b, 5000000);
  loghist_merge(&a, &b);
  assert_int_equal(a.num, 101);
  assert_int_equal(a.max, 5000000);
  assert_true(a.sum == 99 * 10 + 5000000);
  assert_int_equal(loghist_percentile(&a, 50), 10);
  assert_int_equal(loghist_percentile(&a, 99), 10);  // rank 100 of 101
  assert_int_equal(loghist_percentile(&a, 100), 5000000);
  static LogHist big;  // the mean of the largest values stays within range
  big = (LogHist){0};
  loghist_add(&big, INT64_MAX);
  loghist_add(&big, INT64_MAX);
  assert_int_equal(loghist_mean(&big), INT64_MAX);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_small_values_are_exact),
      cmocka_unit_test(test_relative_error_bound),
      cmocka_unit_test(test_percentiles),
      cmocka_unit_test(test_negative_merge_empty),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
