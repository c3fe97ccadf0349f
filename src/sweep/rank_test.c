// rank_test.c: the Mann-Whitney U test (see rank_test.h). Ranks are kept doubled, so midranks of
// ties are integers and the exact count compares rank sums without rounding.
#include "sweep/rank_test.h"

#include <math.h>
#include <stdlib.h>

#include "common/check.h"

typedef struct {
  double value;
  bool first;  // from the first sample
} Pooled;

static int compare_pooled(const void *a, const void *b) {
  double x = ((const Pooled *)a)->value, y = ((const Pooled *)b)->value;
  return (x > y) - (x < y);
}

// P(S <= s) and P(S >= s) for S the first sample's doubled rank sum when its n items are a
// uniformly random n of the N pooled ones whose doubled ranks are rank2[N]: counts of subsets
// by size and sum, one pooled item at a time.
static double exact_two_sided(const long *rank2, size_t num, size_t n, long s) {
  long max_sum = (long)(num * (num + 1));
  size_t width = (size_t)max_sum + 1;
  double *count = xcalloc((n + 1) * width, sizeof *count);  // [n + 1][width]
  count[0] = 1;
  for (size_t i = 0; i < num; i++)
    for (size_t k = (i + 1 < n ? i + 1 : n); k >= 1; k--)
      for (long t = max_sum; t >= rank2[i]; t--)
        count[k * width + (size_t)t] += count[(k - 1) * width + (size_t)(t - rank2[i])];
  double total = 0, at_most = 0, at_least = 0;
  for (long t = 0; t <= max_sum; t++) {
    double c = count[n * width + (size_t)t];
    total += c;
    if (t <= s) at_most += c;
    if (t >= s) at_least += c;
  }
  free(count);
  double p = 2 * fmin(at_most, at_least) / total;
  return p < 1 ? p : 1;
}

RankTest rank_test_mann_whitney(const double *x, size_t n, const double *y, size_t m) {
  CHECK(n > 0 && m > 0);
  size_t num = n + m;
  Pooled *pool = xcalloc(num, sizeof *pool);
  for (size_t i = 0; i < n; i++) pool[i] = (Pooled){x[i], true};
  for (size_t i = 0; i < m; i++) pool[n + i] = (Pooled){y[i], false};
  qsort(pool, num, sizeof *pool, compare_pooled);
  long *rank2 = xcalloc(num, sizeof *rank2);
  long sum2 = 0;    // the first sample's doubled rank sum
  double ties = 0;  // sum of t^3 - t over tie groups
  for (size_t i = 0, j; i < num; i = j) {
    j = i + 1;
    while (j < num && pool[j].value == pool[i].value) j++;
    double t = (double)(j - i);
    ties += t * t * t - t;
    for (size_t k = i; k < j; k++) {
      rank2[k] = (long)(i + 1 + j);  // (i + 1) + j: the first and last rank of the group
      if (pool[k].first) sum2 += rank2[k];
    }
  }
  RankTest r = {.u = sum2 / 2.0 - (double)n * (double)(n + 1) / 2};
  double dn = (double)n, dm = (double)m, dnum = (double)num;
  if (n <= RANK_TEST_EXACT_MAX && m <= RANK_TEST_EXACT_MAX) {
    r.exact = true;
    r.p = exact_two_sided(rank2, num, n, sum2);
  } else {
    double var = dn * dm / 12 * ((dnum + 1) - ties / (dnum * (dnum - 1)));
    double dev = fabs(r.u - dn * dm / 2) - 0.5;
    r.p = var > 0 && dev > 0 ? fmin(1, erfc(dev / sqrt(var) / sqrt(2))) : 1;
  }
  free(rank2);
  free(pool);
  return r;
}

double rank_test_min_p(size_t n, size_t m) {
  double *v = xcalloc(n + m, sizeof *v);
  for (size_t i = 0; i < n + m; i++) v[i] = (double)i;
  double p = rank_test_mann_whitney(v, n, v + n, m).p;
  free(v);
  return p;
}

size_t rank_test_samples_needed(size_t n, double alpha, size_t max_m) {
  for (size_t m = 1; m <= max_m; m++)
    if (rank_test_min_p(n, m) < alpha) return m;
  return 0;
}
