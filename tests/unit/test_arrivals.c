// test_arrivals.c: arrival schedules (vLLM's get_request semantics: inf => all zero, gamma gaps
// scaled so the last request goes out at N/rate, request 0 delayed too, ramp-up unscaled) and
// the statistics of the draws behind them (Poisson and gamma burstiness), plus the Rng.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/arrivals.h"
#include "bench/rng.h"

enum { NUM_SAMPLES = 20000 };

static int64_t *schedule(ArrivalParams p, size_t n) {
  int64_t *t = calloc(n, sizeof *t);
  char err[256];
  assert_true(arrivals_schedule(&p, n, t, err, sizeof err));
  return t;
}

// Mean and variance / mean^2 (the squared coefficient of variation) of the gaps between
// consecutive sends, request 0's wait from the start included.
static void gap_stats(const int64_t *t, size_t n, double *mean_s, double *cv2) {
  double sum = 0, sum2 = 0;
  for (size_t i = 0; i < n; i++) {
    double gap = (double)(t[i] - (i ? t[i - 1] : 0)) * 1e-9;
    sum += gap;
    sum2 += gap * gap;
  }
  *mean_s = sum / (double)n;
  *cv2 = (sum2 / (double)n - *mean_s * *mean_s) / (*mean_s * *mean_s);
}

static void test_infinite_rate_sends_everything_at_once(void **state) {
  (void)state;
  int64_t *t = schedule((ArrivalParams){.request_rate = INFINITY, .burstiness = 1.0}, 1000);
  for (size_t i = 0; i < 1000; i++) assert_int_equal(t[i], 0);
  free(t);
}

static void test_scaled_so_last_request_goes_at_n_over_rate(void **state) {
  (void)state;
  int64_t *t = schedule((ArrivalParams){.request_rate = 8.0, .burstiness = 1.0, .seed = 1}, 100);
  assert_true(t[0] > 0);  // request 0 waits for its own gap, as in vLLM
  for (size_t i = 1; i < 100; i++) assert_true(t[i] >= t[i - 1]);
  assert_int_equal(t[99], 12500000000LL);  // 100 / 8 s
  free(t);
}

// Poisson: exponential gaps, coefficient of variation 1. (The mean is pinned by the scaling.)
static void test_poisson_gaps_are_exponential(void **state) {
  (void)state;
  int64_t *t = schedule((ArrivalParams){.request_rate = 50.0, .burstiness = 1.0, .seed = 7},
                        NUM_SAMPLES);
  double mean, cv2;
  gap_stats(t, NUM_SAMPLES, &mean, &cv2);
  assert_true(fabs(mean - 0.02) < 1e-9);
  assert_true(fabs(cv2 - 1.0) < 0.05);
  size_t below_mean = 0;  // P(gap < mean) = 1 - 1/e for an exponential
  for (size_t i = 0; i < NUM_SAMPLES; i++) below_mean += (t[i] - (i ? t[i - 1] : 0)) < 20000000;
  assert_true(fabs((double)below_mean / NUM_SAMPLES - (1 - exp(-1))) < 0.015);
  free(t);
}

// Unscaled (a ramp from 10 to 10 req/s): the drawn mean itself is within 3% of 1/rate.
static void test_unscaled_mean_gap_matches_rate(void **state) {
  (void)state;
  ArrivalParams p = {.request_rate = INFINITY, .burstiness = 1.0, .seed = 11,
                     .ramp_up = ARRIVALS_RAMP_LINEAR, .ramp_up_start_rps = 10,
                     .ramp_up_end_rps = 10};
  int64_t *t = schedule(p, NUM_SAMPLES);
  double mean, cv2;
  gap_stats(t, NUM_SAMPLES, &mean, &cv2);
  assert_true(fabs(mean - 0.1) < 0.1 * 0.03);
  free(t);
}

// Gamma(shape b): variance/mean^2 = 1/b. b < 1 is burstier than Poisson, b > 1 more regular.
static void test_burstiness_sets_gap_variance(void **state) {
  (void)state;
  const double shapes[] = {0.25, 0.5, 2.0, 8.0};
  for (size_t k = 0; k < 4; k++) {
    int64_t *t = schedule((ArrivalParams){.request_rate = 20.0, .burstiness = shapes[k], .seed = k},
                          NUM_SAMPLES);
    double mean, cv2;
    gap_stats(t, NUM_SAMPLES, &mean, &cv2);
    assert_true(fabs(cv2 * shapes[k] - 1.0) < 0.1);
    free(t);
  }
}

static void test_ramp_up_rates(void **state) {
  (void)state;
  ArrivalParams lin = {.request_rate = INFINITY, .burstiness = 1, .ramp_up = ARRIVALS_RAMP_LINEAR,
                       .ramp_up_start_rps = 2, .ramp_up_end_rps = 10};
  assert_true(arrivals_rate(&lin, 0, 5) == 2.0);
  assert_true(arrivals_rate(&lin, 2, 5) == 6.0);
  assert_true(arrivals_rate(&lin, 4, 5) == 10.0);
  ArrivalParams exp_ramp = lin;
  exp_ramp.ramp_up = ARRIVALS_RAMP_EXPONENTIAL;
  exp_ramp.ramp_up_start_rps = 1;
  exp_ramp.ramp_up_end_rps = 16;
  assert_true(fabs(arrivals_rate(&exp_ramp, 2, 5) - 4.0) < 1e-12);
  ArrivalParams fixed = {.request_rate = 3.5, .burstiness = 1};
  assert_true(arrivals_rate(&fixed, 7, 10) == 3.5);
}

// vLLM's rps_change_events: the start rate, then on each rise of int(rate) every integer rate
// passed, all at the request that raised it (linear 1, 4, 7, 10: 2, 3 and 4 at request 1).
static void test_rps_change_events(void **state) {
  (void)state;
  int *rps;
  size_t *first;
  ArrivalParams lin = {.request_rate = INFINITY, .burstiness = 1, .ramp_up = ARRIVALS_RAMP_LINEAR,
                       .ramp_up_start_rps = 1, .ramp_up_end_rps = 2};
  // rates 1, 1.25, 1.5, 1.75, 2: the start, then 2 at request 4
  assert_int_equal(arrivals_rps_changes(&lin, 5, &rps, &first), 2);
  assert_int_equal(rps[0], 1);
  assert_true(first[0] == SIZE_MAX);
  assert_int_equal(rps[1], 2);
  assert_int_equal(first[1], 4);
  free(rps);
  free(first);
  lin.ramp_up_end_rps = 10;  // rates 1, 4, 7, 10: ten events
  assert_int_equal(arrivals_rps_changes(&lin, 4, &rps, &first), 10);
  static const int want_rps[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  static const size_t want_first[] = {SIZE_MAX, 1, 1, 1, 2, 2, 2, 3, 3, 3};
  for (size_t k = 0; k < 10; k++) {
    assert_int_equal(rps[k], want_rps[k]);
    assert_true(first[k] == want_first[k]);
  }
  free(rps);
  free(first);
  ArrivalParams exp_ramp = lin;
  exp_ramp.ramp_up = ARRIVALS_RAMP_EXPONENTIAL;
  exp_ramp.ramp_up_end_rps = 4;  // rates 1, 4^0.5 = 2 (exact), 4: 1; 2 at 1; 3, 4 at 2
  assert_int_equal(arrivals_rps_changes(&exp_ramp, 3, &rps, &first), 4);
  assert_int_equal(rps[3], 4);
  assert_int_equal(first[2], 2);
  free(rps);
  free(first);
  ArrivalParams fixed = {.request_rate = 3, .burstiness = 1};
  assert_int_equal(arrivals_rps_changes(&fixed, 4, &rps, &first), 0);
  assert_null(rps);
}

static void test_same_seed_same_schedule(void **state) {
  (void)state;
  ArrivalParams p = {.request_rate = 5.0, .burstiness = 0.7, .seed = 42};
  int64_t *a = schedule(p, 500), *b = schedule(p, 500);
  p.seed = 43;
  int64_t *c = schedule(p, 500);
  assert_memory_equal(a, b, 500 * sizeof *a);
  assert_memory_not_equal(a, c, 500 * sizeof *a);
  free(a);
  free(b);
  free(c);
}

static void expect_rejected(ArrivalParams p, const char *flag) {
  int64_t t[4];
  char err[256] = "";
  assert_false(arrivals_schedule(&p, 4, t, err, sizeof err));
  assert_non_null(strstr(err, flag));
}

static void test_invalid_parameters_name_the_flag(void **state) {
  (void)state;
  expect_rejected((ArrivalParams){.request_rate = 1, .burstiness = 0}, "--burstiness");
  expect_rejected((ArrivalParams){.request_rate = 0, .burstiness = 1}, "--request-rate");
  expect_rejected((ArrivalParams){.request_rate = 5, .burstiness = 1,
                                  .ramp_up = ARRIVALS_RAMP_LINEAR, .ramp_up_end_rps = 5},
                  "--request-rate left at inf");
  expect_rejected((ArrivalParams){.request_rate = INFINITY, .burstiness = 1,
                                  .ramp_up = ARRIVALS_RAMP_LINEAR, .ramp_up_start_rps = 9,
                                  .ramp_up_end_rps = 5},
                  "--ramp-up-end-rps");
  expect_rejected((ArrivalParams){.request_rate = INFINITY, .burstiness = 1,
                                  .ramp_up = ARRIVALS_RAMP_EXPONENTIAL, .ramp_up_end_rps = 5},
                  "--ramp-up-start-rps must be above 0");
}

static void test_rng_uniform_ints_and_shuffle(void **state) {
  (void)state;
  Rng r;
  rng_seed(&r, 0);
  size_t counts[7] = {0};
  for (size_t i = 0; i < 70000; i++) counts[rng_below(&r, 7)]++;
  for (size_t k = 0; k < 7; k++) assert_in_range(counts[k], 9500, 10500);
  for (size_t i = 0; i < 1000; i++) assert_in_range(rng_range(&r, -3, 3) + 3, 0, 6);
  assert_int_equal(rng_range(&r, 5, 5), 5);
  int v[50];
  for (int i = 0; i < 50; i++) v[i] = i;
  rng_shuffle(&r, v, 50, sizeof *v);
  int seen[50] = {0}, moved = 0;
  for (int i = 0; i < 50; i++) {
    seen[v[i]]++;
    moved += v[i] != i;
  }
  for (int i = 0; i < 50; i++) assert_int_equal(seen[i], 1);
  assert_true(moved > 40);
}

static void test_rng_gamma_moments(void **state) {
  (void)state;
  Rng r;
  rng_seed(&r, 5);
  const double shapes[] = {0.3, 1.0, 3.0};
  for (size_t k = 0; k < 3; k++) {
    double sum = 0, sum2 = 0, scale = 2.0;
    for (size_t i = 0; i < 100000; i++) {
      double x = rng_gamma(&r, shapes[k], scale);
      sum += x;
      sum2 += x * x;
    }
    double mean = sum / 100000, var = sum2 / 100000 - mean * mean;
    assert_true(fabs(mean / (shapes[k] * scale) - 1) < 0.02);
    assert_true(fabs(var / (shapes[k] * scale * scale) - 1) < 0.05);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_infinite_rate_sends_everything_at_once),
      cmocka_unit_test(test_scaled_so_last_request_goes_at_n_over_rate),
      cmocka_unit_test(test_poisson_gaps_are_exponential),
      cmocka_unit_test(test_unscaled_mean_gap_matches_rate),
      cmocka_unit_test(test_burstiness_sets_gap_variance),
      cmocka_unit_test(test_ramp_up_rates),
      cmocka_unit_test(test_rps_change_events),
      cmocka_unit_test(test_same_seed_same_schedule),
      cmocka_unit_test(test_invalid_parameters_name_the_flag),
      cmocka_unit_test(test_rng_uniform_ints_and_shuffle),
      cmocka_unit_test(test_rng_gamma_moments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
