// weights_dummy.c: the dummy-weight generator (the scheme is documented in weights_dummy.h): each
// tensor's law from its name and role, its elements from weights_dummy_values.h (which the CUDA
// backend's generator shares). Writes only the caller's buffer; allocates nothing.
#include "model/weights_dummy.h"

#include <math.h>

#include "common/check.h"
#include "model/bf16.h"
#include "model/mxfp4.h"

static uint64_t fnv1a(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
  return h;
}

// A float tensor's center and half width, by role (weights_dummy.h's table).
static void set_float_law(const GptOssConfig *c, CheckpointRole role, WeightsDummyLaw *law) {
  const double sqrt3 = sqrt(3.0), d = c->hidden_size, residual = sqrt(2.0 * c->num_layers);
  law->center = 0;
  switch (role) {
    case CKPT_EMBEDDING: law->half_width = sqrt3; break;
    case CKPT_QKV_WEIGHT:
    case CKPT_GATE_WEIGHT:
    case CKPT_UNEMBEDDING: law->half_width = sqrt3 / sqrt(d); break;
    case CKPT_OUT_WEIGHT: law->half_width = sqrt3 / sqrt((double)config_q_dim(c)) / residual; break;
    case CKPT_FINAL_NORM:
    case CKPT_ATTN_NORM:
    case CKPT_MLP_NORM: law->center = 1, law->half_width = 0.1; break;
    case CKPT_SINKS: law->half_width = 0.5; break;
    default: law->half_width = 0.05;  // the biases
  }
}

// The scale byte around which an expert matrix's scales spread.
static int scale_center(const GptOssConfig *c, CheckpointRole role) {
  const double code_rms = sqrt(8.5625);  // RMS of the 16 e2m1 values
  double std = role == CKPT_MLP1_SCALES
                   ? 1.0 / sqrt((double)c->hidden_size)
                   : 1.0 / sqrt((double)c->intermediate_size * 2.0 * c->num_layers);
  return MXFP4_SCALE_BIAS + (int)lround(log2(std / code_rms));
}

WeightsDummyLaw weights_dummy_law(const GptOssConfig *c, const CheckpointTensor *t, uint64_t seed) {
  WeightsDummyLaw law = {.key = dummy_mix64(seed ^ fnv1a(t->name))};
  if (t->role == CKPT_MLP1_BLOCKS || t->role == CKPT_MLP2_BLOCKS) {
    law.kind = DUMMY_BLOCK_BYTES;
  } else if (t->role == CKPT_MLP1_SCALES || t->role == CKPT_MLP2_SCALES) {
    law.kind = DUMMY_SCALES;
    law.scale_center = scale_center(c, t->role);
  } else {
    CHECK(t->dtype == ST_BF16);
    law.kind = DUMMY_FLOATS;
    set_float_law(c, t->role, &law);
  }
  return law;
}

void weights_dummy_fill(const GptOssConfig *c, const CheckpointTensor *t, uint64_t seed,
                        void *out) {
  const WeightsDummyLaw law = weights_dummy_law(c, t, seed);
  const int64_t n = t->num_elements;
  if (law.kind == DUMMY_BLOCK_BYTES) {
    uint8_t *bytes = out;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; k++) bytes[k] = dummy_block_byte(&law, k);
  } else if (law.kind == DUMMY_SCALES) {
    uint8_t *scales = out;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; k++) scales[k] = dummy_scale(&law, k);
  } else {
    uint16_t *values = out;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; k++) values[k] = bf16_from_f32(dummy_float(&law, k));
  }
}
