// stats.c: numpy's reductions re-done in C so the saved JSON matches vLLM's to the last bit.
// Follows numpy's summation order exactly; must not "improve" it (Kahan, long double, FMA).
#include "bench/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

// numpy's pairwise_sum for float64: plain loop below 8 values, 8 accumulators up to 128 values,
// else split at n/2 rounded down to a multiple of 8.
static double pairwise_sum(const double *x, size_t n) {
  if (n < 8) {
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += x[i];
    return sum;
  }
  if (n <= 128) {
    double r[8];
    memcpy(r, x, sizeof r);
    size_t i;
    for (i = 8; i < n - n % 8; i += 8)
      for (int k = 0; k < 8; k++) r[k] += x[i + k];
    double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) sum += x[i];
    return sum;
  }
  size_t half = n / 2;
  half -= half % 8;
  return pairwise_sum(x, half) + pairwise_sum(x + half, n - half);
}

// numpy's add.reduce: from the identity 0.0, add the pairwise sum of each 8192-value block (the
// iterator's buffer size) in turn. Checked against numpy 1.24 up to 300k values; the spec's
// one pairwise sum over the whole array differs beyond 8192 values.
#define NP_BUFSIZE 8192
static double np_sum(const double *x, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; i += NP_BUFSIZE)
    sum += pairwise_sum(x + i, n - i < NP_BUFSIZE ? n - i : NP_BUFSIZE);
  return sum;
}

double stats_mean(const double *x, size_t n) { return n ? np_sum(x, n) / (double)n : 0.0; }

double stats_std(const double *x, size_t n) {
  if (n == 0) return 0.0;
  double mean = stats_mean(x, n);
  double *sq = xmalloc(n * sizeof *sq);
  for (size_t i = 0; i < n; i++) sq[i] = (x[i] - mean) * (x[i] - mean);
  double var = np_sum(sq, n) / (double)n;
  free(sq);
  return sqrt(var);
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double *stats_sorted_copy(const double *x, size_t n) {
  double *sorted = xmalloc((n ? n : 1) * sizeof *sorted);
  if (n) memcpy(sorted, x, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, compare_doubles);
  return sorted;
}

double stats_median(const double *sorted, size_t n) {
  if (n == 0) return 0.0;
  if (n % 2) return sorted[n / 2];
  return (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;  // np.mean of the two middle values
}

double stats_percentile(const double *sorted, size_t n, double p) {
  if (n == 0) return 0.0;
  double q = p / 100.0;
  double virtual_index = (double)(n - 1) * q;
  if (virtual_index >= (double)(n - 1)) return sorted[n - 1];
  size_t lo = (size_t)floor(virtual_index);
  double gamma = virtual_index - (double)lo;
  double below = sorted[lo], above = sorted[lo + 1], diff = above - below;
  // numpy's _lerp: from below for gamma < 0.5, from above otherwise.
  return gamma < 0.5 ? below + diff * gamma : above - diff * (1.0 - gamma);
}
