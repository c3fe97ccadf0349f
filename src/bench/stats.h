// stats.h: numpy's mean, std, median and percentile over double arrays, bit for bit (spec
// vllm-bench.md section 2: pairwise summation, population std, "linear" percentile). Numbers in,
// numbers out: no units, no knowledge of requests or reports.
//
// An empty array gives 0.0 everywhere, as vLLM's `np.mean(L or 0)` does.
#ifndef GB_BENCH_STATS_H
#define GB_BENCH_STATS_H

#include <stddef.h>

// np.mean: numpy's pairwise sum divided by n.
double stats_mean(const double *x, size_t n);

// np.std with ddof=0: sqrt(pairwise sum of (x - mean)^2 / n).
double stats_std(const double *x, size_t n);

// A sorted (ascending) copy of x, to pass to the two functions below; free() it.
double *stats_sorted_copy(const double *x, size_t n);

// np.median of the array whose sorted copy is `sorted`.
double stats_median(const double *sorted, size_t n);

// np.percentile(x, p), method "linear", of the array whose sorted copy is `sorted`; p in [0, 100].
double stats_percentile(const double *sorted, size_t n, double p);

#endif
