// relative_error.h: ||a - b|| / ||b|| (Frobenius, in double) over n floats, the measure the
// forward-pass tests compare logits and caches by. Static: include it once.
#ifndef GE_TESTS_RELATIVE_ERROR_H
#define GE_TESTS_RELATIVE_ERROR_H

#include <math.h>
#include <stddef.h>

static double relative_error(const float *a, const float *b, size_t n) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < n; i++) {
    diff += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    norm += (double)b[i] * b[i];
  }
  return sqrt(diff / norm);
}

#endif
