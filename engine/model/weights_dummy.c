// weights_dummy.c: the dummy-weight generator (the scheme is documented in weights_dummy.h).
// Writes only the caller's buffer; allocates nothing.
#include "model/weights_dummy.h"

#include <math.h>

#include "common/check.h"
#include "model/bf16.h"
#include "model/mxfp4.h"

#define GOLDEN_GAMMA 0x9e3779b97f4a7c15ull

// splitmix64's output function.
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
  return h;
}

// The k-th random word of the stream key.
static inline uint64_t word(uint64_t key, int64_t k) {
  return mix64(key + (uint64_t)(k + 1) * GOLDEN_GAMMA);
}

// Uniform in [-1, 1) with 53 random bits.
static inline double uniform_pm1(uint64_t bits) { return (double)(bits >> 11) * 0x1.0p-52 - 1.0; }

typedef struct {
  double center, half_width;
} FloatLaw;

static FloatLaw float_law(const GptOssConfig *c, CheckpointRole role) {
  const double sqrt3 = sqrt(3.0), d = c->hidden_size, residual = sqrt(2.0 * c->num_layers);
  switch (role) {
    case CKPT_EMBEDDING:
      return (FloatLaw){0, sqrt3};
    case CKPT_QKV_WEIGHT:
    case CKPT_GATE_WEIGHT:
    case CKPT_UNEMBEDDING:
      return (FloatLaw){0, sqrt3 / sqrt(d)};
    case CKPT_OUT_WEIGHT:
      return (FloatLaw){0, sqrt3 / sqrt((double)config_q_dim(c)) / residual};
    case CKPT_FINAL_NORM:
    case CKPT_ATTN_NORM:
    case CKPT_MLP_NORM:
      return (FloatLaw){1, 0.1};
    case CKPT_SINKS:
      return (FloatLaw){0, 0.5};
    default:
      return (FloatLaw){0, 0.05};  // the biases
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

void weights_dummy_fill(const GptOssConfig *c, const CheckpointTensor *t, uint64_t seed,
                        void *out) {
  const uint64_t key = mix64(seed ^ fnv1a(t->name));
  const int64_t n = t->num_elements;
  if (t->role == CKPT_MLP1_BLOCKS || t->role == CKPT_MLP2_BLOCKS) {
    uint8_t *bytes = out;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; k++) bytes[k] = (uint8_t)(word(key, k / 8) >> (8 * (k % 8)));
    return;
  }
  if (t->role == CKPT_MLP1_SCALES || t->role == CKPT_MLP2_SCALES) {
    const int center = scale_center(c, t->role);
    uint8_t *scales = out;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; k++) {
      int s = center - 1 + (int)(word(key, k) % 3);
      scales[k] = (uint8_t)(s < 1 ? 1 : s > 254 ? 254 : s);
    }
    return;
  }
  CHECK(t->dtype == ST_BF16);
  const FloatLaw law = float_law(c, t->role);
  uint16_t *values = out;
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; k++)
    values[k] = bf16_from_f32((float)(law.center + law.half_width * uniform_pm1(word(key, k))));
}
