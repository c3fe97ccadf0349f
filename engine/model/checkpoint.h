// checkpoint.h: the tensors of a GPT-OSS checkpoint in OpenAI's original layout (spec
// gptoss-model.md section 5.2) for a given config: names, checkpoint dtypes and shapes, computed
// from the config alone. The weight loader looks each one up; the plan sums them. Reads no file.
#ifndef GE_MODEL_CHECKPOINT_H
#define GE_MODEL_CHECKPOINT_H

#include <stdint.h>

#include "model/config.h"
#include "model/safetensors.h"

typedef enum {
  // once per model
  CKPT_EMBEDDING,    // embedding.weight               BF16 [vocab, hidden]
  CKPT_FINAL_NORM,   // norm.scale                     BF16 [hidden]
  CKPT_UNEMBEDDING,  // unembedding.weight             BF16 [vocab, hidden]
  // once per layer N
  CKPT_ATTN_NORM,    // block.N.attn.norm.scale        BF16 [hidden]
  CKPT_QKV_WEIGHT,   // block.N.attn.qkv.weight        BF16 [qkv_dim, hidden]
  CKPT_QKV_BIAS,     // block.N.attn.qkv.bias          BF16 [qkv_dim]
  CKPT_SINKS,        // block.N.attn.sinks             BF16 [num_heads]
  CKPT_OUT_WEIGHT,   // block.N.attn.out.weight        BF16 [hidden, q_dim]
  CKPT_OUT_BIAS,     // block.N.attn.out.bias          BF16 [hidden]
  CKPT_MLP_NORM,     // block.N.mlp.norm.scale         BF16 [hidden]
  CKPT_GATE_WEIGHT,  // block.N.mlp.gate.weight        BF16 [E, hidden]
  CKPT_GATE_BIAS,    // block.N.mlp.gate.bias          BF16 [E]
  CKPT_MLP1_BLOCKS,  // block.N.mlp.mlp1_weight.blocks U8 [E, 2I, hidden / 32, 16]
  CKPT_MLP1_SCALES,  // block.N.mlp.mlp1_weight.scales U8 [E, 2I, hidden / 32]
  CKPT_MLP1_BIAS,    // block.N.mlp.mlp1_bias          BF16 [E, 2I]
  CKPT_MLP2_BLOCKS,  // block.N.mlp.mlp2_weight.blocks U8 [E, hidden, I / 32, 16]
  CKPT_MLP2_SCALES,  // block.N.mlp.mlp2_weight.scales U8 [E, hidden, I / 32]
  CKPT_MLP2_BIAS,    // block.N.mlp.mlp2_bias          BF16 [E, hidden]
  CKPT_NUM_ROLES,
} CheckpointRole;

#define CKPT_FIRST_LAYER_ROLE CKPT_ATTN_NORM
#define CKPT_NUM_MODEL_ROLES CKPT_FIRST_LAYER_ROLE
#define CKPT_NUM_LAYER_ROLES (CKPT_NUM_ROLES - CKPT_FIRST_LAYER_ROLE)

typedef struct {
  char name[64];  // e.g. "block.3.mlp.mlp1_weight.blocks"
  CheckpointRole role;
  int layer;      // -1 for the once-per-model tensors
  StDtype dtype;  // as shipped: ST_BF16 or ST_U8
  int num_dims;
  int64_t shape[4];      // [num_dims]
  int64_t num_elements;  // product(shape)
  int64_t num_bytes;     // num_elements * dtype size
  int64_t num_params;    // logical weights: two per MXFP4 block byte, none for scales
} CheckpointTensor;

// 3 + 15 * num_layers.
int checkpoint_num_tensors(const GptOssConfig *c);

// Tensor index in file-independent order: the three model tensors, then layer 0's 15, ...
void checkpoint_tensor(const GptOssConfig *c, int index, CheckpointTensor *out);

// The tensor of role in layer (ignored for the model tensors).
void checkpoint_tensor_of(const GptOssConfig *c, CheckpointRole role, int layer,
                          CheckpointTensor *out);

// MXFP4 blocks or scales (U8), as opposed to a float tensor (BF16, F32 accepted).
static inline bool checkpoint_role_is_mxfp4(CheckpointRole r) {
  return r == CKPT_MLP1_BLOCKS || r == CKPT_MLP1_SCALES || r == CKPT_MLP2_BLOCKS ||
         r == CKPT_MLP2_SCALES;
}

#endif
