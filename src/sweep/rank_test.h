// rank_test.h: the two-sided Mann-Whitney U test (Wilcoxon rank-sum) of two samples, for the
// gate's "is this change beyond the noise" question. Numbers in, a statistic and a p-value out:
// it knows nothing of runs, metrics or verdicts (gate.c decides).
//
// U is the first sample's: the number of (x, y) pairs with x > y, ties counting one half; U = 0
// when every x is below every y. The p-value is two-sided, 2 min(P(U <= u), P(U >= u)) capped at
// 1, under the null hypothesis that both samples come from one distribution:
// - exact when both samples have at most RANK_TEST_EXACT_MAX values: the permutation
//   distribution, counted over every way of choosing which n of the n + m pooled values are the
//   first sample's (ties keep their midranks, so the count is exact with ties too);
// - above that, the normal approximation: mean nm/2, variance nm/12 ((N + 1) - sum(t^3 - t) /
//   (N (N - 1))) over the tie groups' sizes t (N = n + m), and a continuity correction of 1/2.
#ifndef GB_SWEEP_RANK_TEST_H
#define GB_SWEEP_RANK_TEST_H

#include <stdbool.h>
#include <stddef.h>

#define RANK_TEST_EXACT_MAX 10

typedef struct {
  double u;  // the first sample's U, in [0, n m]
  double p;  // two-sided p-value, in (0, 1]
  bool exact;  // p from the exact distribution (false: the normal approximation)
} RankTest;

// Both samples need at least one value.
RankTest rank_test_mann_whitney(const double *x, size_t n, const double *y, size_t m);

// The smallest two-sided p-value any n and m values can give (no ties, one sample all below the
// other): 2 / C(n + m, n) in the exact range. A p-value threshold at or below it can never be
// reached with that many repeats.
double rank_test_min_p(size_t n, size_t m);

// The smallest m (up to max_m) for which rank_test_min_p(n, m) < alpha; 0 when none is.
size_t rank_test_samples_needed(size_t n, double alpha, size_t max_m);

#endif
