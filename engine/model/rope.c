// rope.c: the YaRN inverse-frequency table and concentration (spec gptoss-model.md section 3),
// computed in double and stored as float. Only the table: rotating vectors is the backend's.
#include "model/rope.h"

#include <math.h>

#include "common/check.h"

void rope_table_init(RopeTable *r, const GptOssConfig *c) {
  const int half = c->head_dim / 2;
  CHECK(half > 0 && half <= ROPE_MAX_HALF_DIM);
  const double base = c->rope_theta, s = c->rope_scaling_factor, two_pi = 2.0 * M_PI;
  const bool yarn = s > 1.0;
  // The ramp bounds are not rounded (HF's truncate=false).
  const double low =
      half * log(c->initial_context_length / (c->rope_ntk_beta * two_pi)) / log(base);
  const double high =
      half * log(c->initial_context_length / (c->rope_ntk_alpha * two_pi)) / log(base);
  r->half_dim = half;
  r->concentration = yarn ? (float)(0.1 * log(s) + 1.0) : 1.0f;
  for (int i = 0; i < half; i++) {
    double extrapolation = 1.0 / pow(base, (double)(2 * i) / c->head_dim);
    double inv_freq = extrapolation;
    if (yarn) {
      double ramp = fmin(fmax((i - low) / (high - low), 0.0), 1.0);
      inv_freq = extrapolation * (1.0 - ramp) + extrapolation / s * ramp;
    }
    r->inv_freq[i] = (float)inv_freq;
  }
}
