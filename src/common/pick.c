// pick.c: the argmax and the drawn index of a row of floats (pick.h).
#include "common/pick.h"

#include <emmintrin.h>
#include <math.h>

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
