// loghist.h: a fixed log-linear histogram of non-negative integers (nanosecond latencies): exact
// below 64, then 32 buckets per power of two, so a percentile is within 1/32 (3.1%) of the true
// value, in a fixed 15 KB with no allocation. Mergeable, so each client thread keeps its own and
// the run sums them. Numbers only: knows nothing of what was measured.
#ifndef GB_BENCH_LOGHIST_H
#define GB_BENCH_LOGHIST_H

#include <stdint.h>

#define LOGHIST_SUB_BITS 5  // 32 buckets per power of two
#define LOGHIST_NUM_BUCKETS ((64 - LOGHIST_SUB_BITS) << LOGHIST_SUB_BITS)  // values to INT64_MAX

// Zero-initialise ({0}) before use.
typedef struct {
  uint64_t counts[LOGHIST_NUM_BUCKETS];
  uint64_t num;  // values added
  double sum;    // their sum, for the mean (a double: no overflow near INT64_MAX)
  int64_t max;   // the largest, exactly
} LogHist;

// Adds v (a negative v counts as 0).
void loghist_add(LogHist *h, int64_t v);

// Adds every value of src to dst.
void loghist_merge(LogHist *dst, const LogHist *src);

// The p-th percentile (p in [0, 100], nearest rank): the upper bound of the bucket holding the
// value of rank ceil(p/100 * num), never more than max. 0 when the histogram is empty.
int64_t loghist_percentile(const LogHist *h, double p);

// The mean (sum / num, rounded toward zero); 0 when empty.
int64_t loghist_mean(const LogHist *h);

#endif
