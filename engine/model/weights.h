// weights.h: GPT-OSS weights in the layout the forward pass and the backends read: one
// WeightMatrix per linear layer ([out, in], PyTorch's convention, y = x W^T + b) in a chosen
// format, float32 vectors for norms, biases and sinks. Loaded from OpenAI's safetensors
// checkpoint (bf16 + MXFP4 experts) or filled with seeded dummy values. Owns their memory.
#ifndef GE_MODEL_WEIGHTS_H
#define GE_MODEL_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/config.h"

typedef enum {
  WEIGHT_F32,    // data: float [rows, cols]
  WEIGHT_BF16,   // data: uint16_t [rows, cols] (bf16 bits)
  WEIGHT_MXFP4,  // data: uint8_t [rows, cols / 32, 16] (two e2m1 codes per byte, low nibble
                 // first); scales: uint8_t [rows, cols / 32] (e8m0, bias 127)
} WeightFormat;

typedef struct {
  WeightFormat format;
  int64_t rows;        // output features
  int64_t cols;        // input features
  const void *data;    // see WeightFormat
  const void *scales;  // MXFP4 only
} WeightMatrix;

typedef struct {
  const float *attn_norm;  // [hidden]
  WeightMatrix qkv;        // [qkv_dim, hidden]: rows q (heads * head_dim) | k | v
  const float *qkv_bias;   // [qkv_dim]
  const float *sinks;      // [num_heads]
  WeightMatrix out;        // [hidden, q_dim]
  const float *out_bias;   // [hidden]
  const float *mlp_norm;   // [hidden]
  WeightMatrix gate;       // [num_experts, hidden] (the router)
  const float *gate_bias;  // [num_experts]
  WeightMatrix *mlp1;      // [num_experts] each [2 * intermediate, hidden], rows gate/linear interleaved
  const float *mlp1_bias;  // [num_experts, 2 * intermediate]
  WeightMatrix *mlp2;      // [num_experts] each [hidden, intermediate]
  const float *mlp2_bias;  // [num_experts, hidden]
} LayerWeights;

typedef struct {
  GptOssConfig config;
  WeightMatrix embedding;    // [vocab, hidden] (rows are looked up, not multiplied)
  LayerWeights *layers;      // [num_layers]
  const float *final_norm;   // [hidden]
  WeightMatrix unembedding;  // [vocab, hidden], no bias
  void *owned;               // internal: arenas and mappings to release
} GptOssWeights;

typedef enum { LOAD_AUTO, LOAD_SAFETENSORS, LOAD_DUMMY } LoadFormat;

typedef struct {
  LoadFormat load_format;
  // Formats the weights are kept in. Experts default to WEIGHT_F32 (decoded from MXFP4 once at
  // load: exact, for the golden tests); WEIGHT_MXFP4 keeps the checkpoint's bytes.
  WeightFormat expert_format;
  WeightFormat dense_format;  // qkv, out, router, embedding, unembedding: F32 or BF16
  uint64_t seed;              // dummy weights
} WeightsOptions;

// "auto" | "safetensors" | "dummy" -> LoadFormat; false for anything else.
bool weights_load_format_from_name(const char *name, LoadFormat *out);

// model: a checkpoint folder (config.json + *.safetensors; OpenAI's "original/" layout) or, with
// LOAD_DUMMY (or LOAD_AUTO when no such folder exists), a preset name. Returns false with a
// message naming the file and tensor (missing tensor, wrong shape or dtype, truncated file, bad
// header) or the preset.
bool weights_load(const char *model, const WeightsOptions *o, GptOssWeights *w, char *err,
                  size_t err_size);
void weights_free(GptOssWeights *w);

// Bytes of one matrix in its format.
size_t weight_matrix_bytes(const WeightMatrix *m);

#endif
