// loghist.c: the bucket arithmetic of loghist.h. A value v >= 64 with highest set bit e lands in
// the bucket of its top LOGHIST_SUB_BITS + 1 bits; smaller values have a bucket each.
#include "bench/loghist.h"

#include <math.h>

enum { SUB = 1 << LOGHIST_SUB_BITS };  // buckets per power of two

static int bucket_of(uint64_t v) {
  if (v < 2 * SUB) return (int)v;
  int e = 63 - __builtin_clzll(v);  // 2^e <= v < 2^(e+1), e > LOGHIST_SUB_BITS
  int shift = e - LOGHIST_SUB_BITS;
  return ((shift + 1) << LOGHIST_SUB_BITS) + (int)(v >> shift) - SUB;
}

// The largest value that lands in bucket b.
static uint64_t bucket_high(int b) {
  if (b < 2 * SUB) return (uint64_t)b;
  int shift = (b >> LOGHIST_SUB_BITS) - 1;
  uint64_t top = (uint64_t)(b & (SUB - 1)) + SUB;  // the value's top bits
  return ((top + 1) << shift) - 1;
}

void loghist_add(LogHist *h, int64_t v) {
  if (v < 0) v = 0;
  h->counts[bucket_of((uint64_t)v)]++;
  h->num++;
  h->sum += (double)v;
  if (v > h->max) h->max = v;
}

void loghist_merge(LogHist *dst, const LogHist *src) {
  for (int b = 0; b < LOGHIST_NUM_BUCKETS; b++) dst->counts[b] += src->counts[b];
  dst->num += src->num;
  dst->sum += src->sum;
  if (src->max > dst->max) dst->max = src->max;
}

int64_t loghist_percentile(const LogHist *h, double p) {
  if (h->num == 0) return 0;
  uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->num);
  if (rank < 1) rank = 1;
  uint64_t seen = 0;
  for (int b = 0; b < LOGHIST_NUM_BUCKETS; b++) {
    seen += h->counts[b];
    if (seen >= rank) {
      uint64_t high = bucket_high(b);
      return high < (uint64_t)h->max ? (int64_t)high : h->max;
    }
  }
  return h->max;
}

int64_t loghist_mean(const LogHist *h) {
  if (h->num == 0) return 0;
  double mean = h->sum / (double)h->num;
  return mean < (double)h->max ? (int64_t)mean : h->max;  // rounding can pass max near INT64_MAX
}
