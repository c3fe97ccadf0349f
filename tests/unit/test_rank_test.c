// test_rank_test.c: the Mann-Whitney U test against values computed by hand: U, the exact
// two-sided p of small samples (counted over the C(n+m, n) ways to split the ranks), ties in
// the exact count, the normal approximation with and without the tie correction, and the
// smallest reachable p with the repeat count that first gets below 0.05.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sweep/rank_test.h"

static void test_exact_separated(void **state) {
  (void)state;
  // Every x below every y: U = 0, P(U <= 0) = 1 / C(6, 3) = 1/20, two-sided 0.1.
  double x[] = {1, 2, 3}, y[] = {4, 5, 6};
  RankTest r = rank_test_mann_whitney(x, 3, y, 3);
  assert_true(r.exact);
  assert_float_equal(r.u, 0, 1e-12);
  assert_float_equal(r.p, 0.1, 1e-12);
  // The other way round: U = n m = 9, the same p.
  r = rank_test_mann_whitney(y, 3, x, 3);
  assert_float_equal(r.u, 9, 1e-12);
  assert_float_equal(r.p, 0.1, 1e-12);
  // n = m = 4: 2 / C(8, 4) = 2/70.
  double a[] = {3, 1, 4, 2}, b[] = {8, 5, 7, 6};  // order does not matter
  r = rank_test_mann_whitney(a, 4, b, 4);
  assert_float_equal(r.u, 0, 1e-12);
  assert_float_equal(r.p, 2.0 / 70, 1e-12);
}

static void test_exact_interleaved(void **state) {
  (void)state;
  // {1,3,5} vs {2,4,6}: x > y in (3,2), (5,2), (5,4): U = 3. For n = m = 3 the 20 splits give
  // U = 0..9 with counts 1,1,2,3,3,3,3,2,1,1: P(U <= 3) = 7/20, P(U >= 3) = 16/20, p = 0.7.
  double x[] = {1, 3, 5}, y[] = {2, 4, 6};
  RankTest r = rank_test_mann_whitney(x, 3, y, 3);
  assert_float_equal(r.u, 3, 1e-12);
  assert_float_equal(r.p, 0.7, 1e-12);
  // Identical samples: U = n m / 2, p = 1.
  r = rank_test_mann_whitney(x, 3, x, 3);
  assert_float_equal(r.u, 4.5, 1e-12);
  assert_float_equal(r.p, 1, 1e-12);
}

static void test_exact_ties(void **state) {
  (void)state;
  // {1,2,2} vs {2,3,4}: ranks 1, 3,3,3 (the three 2s share 2..4), 5, 6; x's rank sum 7, U = 1
  // (each x = 2 ties the y = 2: 3 x 0.5). Of the 20 three-rank subsets of {1,3,3,3,5,6}, the
  // sums are 7 (3 ways), 9 (4), 10 (3), 11 (3), 12 (4), 14 (3): P(sum <= 7) = 3/20, p = 0.3.
  double x[] = {1, 2, 2}, y[] = {2, 3, 4};
  RankTest r = rank_test_mann_whitney(x, 3, y, 3);
  assert_true(r.exact);
  assert_float_equal(r.u, 1, 1e-12);
  assert_float_equal(r.p, 0.3, 1e-12);
}

static void test_normal_approximation(void **state) {
  (void)state;
  // n = m = 11 (above RANK_TEST_EXACT_MAX), 1..11 vs 12..22: U = 0, mean 60.5, variance
  // 121/12 x 23 = 231.917, z = (60.5 - 0.5) / 15.2288 = 3.93990, p = erfc(z / sqrt 2).
  double v[22];
  for (int i = 0; i < 22; i++) v[i] = i + 1;
  RankTest r = rank_test_mann_whitney(v, 11, v + 11, 11);
  assert_false(r.exact);
  assert_float_equal(r.u, 0, 1e-12);
  assert_float_equal(r.p, 8.151536e-05, 1e-10);
  // With ties: x = six 1s and five 2s, y = five 2s and six 3s. Midranks 3.5 (six 1s), 11.5 (ten
  // 2s), 19.5 (six 3s): x's rank sum 78.5, U = 78.5 - 66 = 12.5. Tie term 210 + 990 + 210 =
  // 1410, variance 121/12 x (23 - 1410 / 462) = 201.143, z = 47.5 / 14.1825 = 3.34920,
  // p = 0.00081045 (0.0018 without the tie correction).
  double x[11], y[11];
  for (int i = 0; i < 11; i++) {
    x[i] = i < 6 ? 1 : 2;
    y[i] = i < 5 ? 2 : 3;
  }
  r = rank_test_mann_whitney(x, 11, y, 11);
  assert_float_equal(r.u, 12.5, 1e-12);
  assert_float_equal(r.p, 8.104477e-04, 1e-9);
}

static void test_min_p_and_samples_needed(void **state) {
  (void)state;
  assert_float_equal(rank_test_min_p(2, 2), 2.0 / 6, 1e-12);
  assert_float_equal(rank_test_min_p(3, 3), 0.1, 1e-12);
  assert_float_equal(rank_test_min_p(4, 4), 2.0 / 70, 1e-12);
  assert_float_equal(rank_test_min_p(9, 3), 2.0 / 220, 1e-12);
  // The candidate count that first gets below 0.05: C(3 + m, 3) > 40 at m = 5 (56; m = 4 gives
  // 35); C(4 + m, 4) > 40 at m = 4 (70); C(9 + m, 9) > 40 at m = 2 (55).
  assert_int_equal(rank_test_samples_needed(3, 0.05, 100), 5);
  assert_int_equal(rank_test_samples_needed(4, 0.05, 100), 4);
  assert_int_equal(rank_test_samples_needed(9, 0.05, 100), 2);
  assert_int_equal(rank_test_samples_needed(3, 0.05, 4), 0);  // none up to max_m
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exact_separated),
      cmocka_unit_test(test_exact_interleaved),
      cmocka_unit_test(test_exact_ties),
      cmocka_unit_test(test_normal_approximation),
      cmocka_unit_test(test_min_p_and_samples_needed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
