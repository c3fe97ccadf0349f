// pick.c: the argmax, the drawn index (whole row or top-k / top-p kept set) and the top
// logprobs of a row of floats (pick.h).
#include "common/pick.h"

#include <emmintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

// pick_top's buckets: probabilities by the 12 high bits of their float (the sign bit is always 0).
#define PICK_BUCKET_SHIFT 20
#define PICK_NUM_BUCKETS (1u << (32 - PICK_BUCKET_SHIFT - 1))

// Two passes: the maximum with SSE2 (x86-64's baseline; 16 lanes in four registers, no index
// bookkeeping, so it runs at the speed of the memory: about 4x the one-pass form that tracked
// indices per lane), then the first index holding it (the row is in cache by then; -0 == +0, so
// either zero counts). NaNs never win: maxps keeps its second operand, the running maximum, when
// either is a NaN; a NaN at index 0 stays the maximum, no index equals it, and index 0 wins.
uint32_t pick_argmax(const float *x, int n) {
  __m128 m[4];
  for (int k = 0; k < 4; k++) m[k] = _mm_set1_ps(x[0]);
  int i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 4; k++) m[k] = _mm_max_ps(_mm_loadu_ps(x + i + 4 * k), m[k]);
  float lanes[4];
  _mm_storeu_ps(lanes, _mm_max_ps(_mm_max_ps(m[0], m[1]), _mm_max_ps(m[2], m[3])));
  float best = x[0];
  for (int k = 0; k < 4; k++) best = lanes[k] > best ? lanes[k] : best;
  for (; i < n; i++) best = x[i] > best ? x[i] : best;
  for (int j = 0; j < n; j++)
    if (x[j] == best) return (uint32_t)j;
  return 0;
}

void pick_softmax(const float *x, int n, float temperature, float *probs) {
  const float max = x[pick_argmax(x, n)];
  double sum = 0;
  for (int i = 0; i < n; i++) {
    probs[i] = expf((x[i] - max) / temperature);
    sum += probs[i];
  }
  for (int i = 0; i < n; i++) probs[i] = (float)(probs[i] / sum);
}

uint32_t pick_drawn(const float *probs, int n, double draw) {
  double total = 0;
  for (int i = 0; i < n; i++) total += probs[i];
  double u = draw * total;
  for (int i = 0; i < n; i++) {
    u -= probs[i];
    if (u < 0) return (uint32_t)i;
  }
  return (uint32_t)(n - 1);  // rounding at the end
}

// pick_top's scratch: the bucket totals, then the candidate ids.
typedef struct {
  uint32_t counts[PICK_NUM_BUCKETS];  // probabilities per bucket
  double mass[PICK_NUM_BUCKETS];      // their sum
  uint32_t ids[];                     // [n]
} PickTop;

size_t pick_top_scratch_bytes(int n) { return sizeof(PickTop) + (size_t)n * sizeof(uint32_t); }

// p's bucket, from its bits (monotonic for probabilities); a NaN (which may carry the sign bit:
// x86's default NaN does) goes to the lowest, as the least probable, as the sort orders it.
static uint32_t bucket_of(float p) {
  if (isnan(p)) return 0;
  uint32_t bits;
  memcpy(&bits, &p, sizeof bits);
  return bits >> PICK_BUCKET_SHIFT;
}

// Descending probability, lower id first on ties; a NaN as the least probable (the order must
// stay a total one for qsort_r).
static int by_prob_desc(const void *a, const void *b, void *probs) {
  float pa = ((const float *)probs)[*(const uint32_t *)a];
  float pb = ((const float *)probs)[*(const uint32_t *)b];
  if (isnan(pa)) pa = -1;
  if (isnan(pb)) pb = -1;
  if (pa != pb) return pa < pb ? 1 : -1;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;  // lower id first on ties
}

// Fills t->ids with the kept set in descending probability and returns its size; *kept_mass:
// its probabilities' sum, in that order.
static size_t kept_set(const float *probs, int n, int top_k, float top_p, PickTop *t,
                       double *kept_mass) {
  memset(t->counts, 0, sizeof t->counts);
  memset(t->mass, 0, sizeof t->mass);
  double total = 0;
  for (int i = 0; i < n; i++) {
    const uint32_t k = bucket_of(probs[i]);
    t->counts[k]++;
    t->mass[k] += probs[i];
    total += probs[i];
  }
  // Walk buckets from the most probable until they hold the top k (with top-k) or top_p of the
  // mass (without): that bucket and those above it hold the kept set.
  const bool has_k = top_k > 0 && top_k < n;
  const size_t k_limit = has_k ? (size_t)top_k : (size_t)n;
  size_t num_above = 0;
  double mass_above = 0;
  int64_t boundary = PICK_NUM_BUCKETS - 1;
  for (; boundary >= 0; boundary--) {
    num_above += t->counts[boundary];
    mass_above += t->mass[boundary];
    if (has_k ? num_above >= k_limit : mass_above >= top_p * total) break;
  }
  if (boundary < 0) boundary = 0;
  size_t num = 0;
  for (int i = 0; i < n; i++)
    if (bucket_of(probs[i]) >= (uint32_t)boundary) t->ids[num++] = (uint32_t)i;
  qsort_r(t->ids, num, sizeof *t->ids, by_prob_desc, (void *)probs);
  if (num > k_limit) num = k_limit;
  // top_p is a share of the top-k set's mass: the whole row's without top-k (the candidates in
  // the buckets walked are only a part of it)
  double top_k_mass = 0;
  for (size_t i = 0; has_k && i < num; i++) top_k_mass += probs[t->ids[i]];
  if (!has_k) top_k_mass = total;
  size_t keep = 0;
  double cumulative = 0;
  while (keep < num) {
    cumulative += probs[t->ids[keep++]];
    if (cumulative >= top_p * top_k_mass) break;
  }
  *kept_mass = cumulative;
  return keep;
}

bool pick_keeps_all(int n, int top_k, float top_p) {
  return (top_k <= 0 || top_k >= n) && !(top_p < 1.0f);
}

uint32_t pick_top(const float *probs, int n, int top_k, float top_p, double draw, void *scratch) {
  if (pick_keeps_all(n, top_k, top_p)) return pick_drawn(probs, n, draw);
  PickTop *t = scratch;
  double kept_mass;
  const size_t num = kept_set(probs, n, top_k, top_p, t, &kept_mass);
  double u = draw * kept_mass;
  for (size_t i = 0; i < num; i++) {
    u -= probs[t->ids[i]];
    if (u < 0) return t->ids[i];
  }
  return t->ids[num - 1];  // rounding at the end
}

float pick_logprobs(const float *logits, int n, int num_top, PickLogprobs *out) {
  CHECK(num_top >= 0 && num_top <= PICK_MAX_LOGPROBS);
  float max = -INFINITY;
  for (int i = 0; i < n; i++)
    if (logits[i] > max) max = logits[i];
  double sum = 0;
  for (int i = 0; i < n; i++) sum += exp((double)(logits[i] - max));
  float log_norm = max + (float)log(sum);
  // The num_top largest, kept sorted by insertion: ascending ids, so an equal logit never
  // displaces an earlier id.
  int k = 0;
  for (int i = 0; i < n && num_top > 0; i++) {
    float x = logits[i];
    if (isnan(x)) continue;
    if (k == num_top && !(x > out->top_logprobs[k - 1])) continue;
    int j = k < num_top ? k++ : k - 1;
    while (j > 0 && x > out->top_logprobs[j - 1]) {
      out->top_logprobs[j] = out->top_logprobs[j - 1];
      out->top_ids[j] = out->top_ids[j - 1];
      j--;
    }
    out->top_logprobs[j] = x;
    out->top_ids[j] = (uint32_t)i;
  }
  out->num_top = k;
  for (int j = 0; j < k; j++) out->top_logprobs[j] -= log_norm;
  return log_norm;
}
