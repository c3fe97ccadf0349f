// rope.h: GPT-OSS's rotary embedding with YaRN (spec gptoss-model.md section 3): the inverse
// frequency table and the concentration factor. Half-split pairs (i, i + head_dim / 2).
#ifndef GE_MODEL_ROPE_H
#define GE_MODEL_ROPE_H

#include "model/config.h"

#define ROPE_MAX_HALF_DIM 128

typedef struct {
  int half_dim;                       // head_dim / 2
  float inv_freq[ROPE_MAX_HALF_DIM];  // [half_dim] YaRN-blended inverse frequencies
  float concentration;                // multiplies both cos and sin (0.1 ln s + 1)
} RopeTable;

void rope_table_init(RopeTable *r, const GptOssConfig *c);

#endif
