// checkpoint.c: names, dtypes and shapes of the original-layout tensors (see checkpoint.h).
// Arithmetic on the config only.
#include "model/checkpoint.h"

#include <stdio.h>

#include "common/check.h"
#include "model/mxfp4.h"

static const char *const SUFFIX[CKPT_NUM_ROLES] = {
    [CKPT_EMBEDDING] = "embedding.weight",
    [CKPT_FINAL_NORM] = "norm.scale",
    [CKPT_UNEMBEDDING] = "unembedding.weight",
    [CKPT_ATTN_NORM] = "attn.norm.scale",
    [CKPT_QKV_WEIGHT] = "attn.qkv.weight",
    [CKPT_QKV_BIAS] = "attn.qkv.bias",
    [CKPT_SINKS] = "attn.sinks",
    [CKPT_OUT_WEIGHT] = "attn.out.weight",
    [CKPT_OUT_BIAS] = "attn.out.bias",
    [CKPT_MLP_NORM] = "mlp.norm.scale",
    [CKPT_GATE_WEIGHT] = "mlp.gate.weight",
    [CKPT_GATE_BIAS] = "mlp.gate.bias",
    [CKPT_MLP1_BLOCKS] = "mlp.mlp1_weight.blocks",
    [CKPT_MLP1_SCALES] = "mlp.mlp1_weight.scales",
    [CKPT_MLP1_BIAS] = "mlp.mlp1_bias",
    [CKPT_MLP2_BLOCKS] = "mlp.mlp2_weight.blocks",
    [CKPT_MLP2_SCALES] = "mlp.mlp2_weight.scales",
    [CKPT_MLP2_BIAS] = "mlp.mlp2_bias",
};

int checkpoint_num_tensors(const GptOssConfig *c) {
  return CKPT_NUM_MODEL_ROLES + CKPT_NUM_LAYER_ROLES * c->num_layers;
}

void checkpoint_tensor(const GptOssConfig *c, int index, CheckpointTensor *out) {
  CHECK(index >= 0 && index < checkpoint_num_tensors(c));
  if (index < CKPT_NUM_MODEL_ROLES) {
    checkpoint_tensor_of(c, (CheckpointRole)index, -1, out);
    return;
  }
  index -= CKPT_NUM_MODEL_ROLES;
  checkpoint_tensor_of(c, (CheckpointRole)(CKPT_FIRST_LAYER_ROLE + index % CKPT_NUM_LAYER_ROLES),
                       index / CKPT_NUM_LAYER_ROLES, out);
}

typedef struct {
  int num_dims;
  int64_t dims[4];
} Shape;

void checkpoint_tensor_of(const GptOssConfig *c, CheckpointRole role, int layer,
                          CheckpointTensor *out) {
  CHECK(role >= 0 && role < CKPT_NUM_ROLES);
  const int64_t d = c->hidden_size, e = c->num_experts, i = c->intermediate_size, i2 = 2 * i;
  const int64_t v = c->vocab_size, q = config_q_dim(c), qkv = config_qkv_dim(c);
  const int64_t groups_d = d / MXFP4_BLOCK_SIZE, groups_i = i / MXFP4_BLOCK_SIZE;
  const int64_t bytes = MXFP4_BLOCK_BYTES;
  const Shape shapes[CKPT_NUM_ROLES] = {
      [CKPT_EMBEDDING] = {2, {v, d}},
      [CKPT_FINAL_NORM] = {1, {d}},
      [CKPT_UNEMBEDDING] = {2, {v, d}},
      [CKPT_ATTN_NORM] = {1, {d}},
      [CKPT_QKV_WEIGHT] = {2, {qkv, d}},
      [CKPT_QKV_BIAS] = {1, {qkv}},
      [CKPT_SINKS] = {1, {c->num_heads}},
      [CKPT_OUT_WEIGHT] = {2, {d, q}},
      [CKPT_OUT_BIAS] = {1, {d}},
      [CKPT_MLP_NORM] = {1, {d}},
      [CKPT_GATE_WEIGHT] = {2, {e, d}},
      [CKPT_GATE_BIAS] = {1, {e}},
      [CKPT_MLP1_BLOCKS] = {4, {e, i2, groups_d, bytes}},
      [CKPT_MLP1_SCALES] = {3, {e, i2, groups_d}},
      [CKPT_MLP1_BIAS] = {2, {e, i2}},
      [CKPT_MLP2_BLOCKS] = {4, {e, d, groups_i, bytes}},
      [CKPT_MLP2_SCALES] = {3, {e, d, groups_i}},
      [CKPT_MLP2_BIAS] = {2, {e, d}},
  };
  *out = (CheckpointTensor){.role = role,
                            .layer = role < CKPT_FIRST_LAYER_ROLE ? -1 : layer,
                            .dtype = ST_BF16,
                            .num_dims = shapes[role].num_dims,
                            .num_elements = 1};
  if (out->layer < 0)
    snprintf(out->name, sizeof out->name, "%s", SUFFIX[role]);
  else
    snprintf(out->name, sizeof out->name, "block.%d.%s", layer, SUFFIX[role]);
  for (int k = 0; k < out->num_dims; k++) {
    out->shape[k] = shapes[role].dims[k];
    out->num_elements *= out->shape[k];
  }
  if (checkpoint_role_is_mxfp4(role)) out->dtype = ST_U8;
  out->num_bytes = out->num_elements * (int64_t)st_dtype_size(out->dtype);
  bool is_scales = role == CKPT_MLP1_SCALES || role == CKPT_MLP2_SCALES;
  out->num_params = !checkpoint_role_is_mxfp4(role) ? out->num_elements
                    : is_scales                     ? 0
                                                    : 2 * out->num_elements;
}
