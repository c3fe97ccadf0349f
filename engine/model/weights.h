// weights.h: GPT-OSS weights in the layout the forward pass and the backends read: one
// WeightMatrix per linear layer ([out, in], PyTorch's convention, y = x W^T + b) in a chosen
// format, float32 vectors for norms, biases and sinks. Loaded from OpenAI's safetensors
// checkpoint (bf16 + MXFP4 experts) or filled with seeded dummy values. Owns their memory.
#ifndef GE_MODEL_WEIGHTS_H
#define GE_MODEL_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/shard.h"

typedef enum {
  WEIGHT_F32,    // data: float [rows, cols]
  WEIGHT_BF16,   // data: uint16_t [rows, cols] (bf16 bits)
  WEIGHT_MXFP4,  // data: uint8_t [rows, cols / 32, 16] (two e2m1 codes per byte, low nibble
                 // first); scales: uint8_t [rows, cols / 32] (e8m0, bias 127)
  WEIGHT_Q8,     // 8-bit, one scale per row (model/q8.h: layout, quantization, accuracy):
                 // data: uint8_t [q8_tiles(rows), q8_groups(cols), 16, 4] (q + 128, 16 rows by
                 // 4 columns per 64 bytes); scales: float [q8_tiles(rows) * 16]
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
  WeightMatrix
      *mlp1;  // [num_experts] each [2 * intermediate, hidden], rows gate/linear interleaved
  const float *mlp1_bias;  // [num_experts, 2 * intermediate]
  WeightMatrix *mlp2;      // [num_experts] each [hidden, intermediate]
  const float *mlp2_bias;  // [num_experts, hidden]
} LayerWeights;

// One rank's part of the model (shard.h; the whole model unless loaded with a shard). The config
// is always the whole model's; the shard says which part of each tensor is here:
//   layers        [shard_num_layers] layer shard.layer_begin + i at index i
//   qkv, bias     rows of the rank's query heads, then its KV heads' k rows, then their v rows
//   sinks         [shard.num_heads]
//   out           [hidden, shard.num_heads * head_dim]: the columns of the rank's heads;
//                 out_bias on tensor-parallel rank 0 only (NULL elsewhere)
//   mlp1, mlp2    [expert_end - expert_begin] and their biases: the rank's experts
//   embedding     first stage only; final_norm and unembedding last stage only, the
//                 unembedding's rows [vocab_begin, vocab_end)
typedef struct {
  GptOssConfig config;
  Shard shard;
  WeightMatrix embedding;    // [vocab, hidden] (rows are looked up, not multiplied)
  LayerWeights *layers;      // [shard_num_layers]
  const float *final_norm;   // [hidden]
  WeightMatrix unembedding;  // [vocab_end - vocab_begin, hidden], no bias
  void *owned;               // internal: arenas and mappings to release
} GptOssWeights;

typedef enum { LOAD_AUTO, LOAD_SAFETENSORS, LOAD_DUMMY } LoadFormat;

typedef struct {
  LoadFormat load_format;
  // Formats the weights are kept in. Experts default to WEIGHT_F32 (decoded from MXFP4 once at
  // load: exact, for the golden tests); WEIGHT_MXFP4 keeps the checkpoint's bytes (mapped, not
  // copied); WEIGHT_BF16 is exact too (every MXFP4 value is a bf16).
  WeightFormat expert_format;
  // qkv, out, router, embedding, unembedding: F32, BF16 or Q8. Q8 (quantized at load, see q8.h)
  // applies to the unembedding only; the other dense matrices are then kept as BF16.
  WeightFormat dense_format;
  uint64_t seed;       // dummy weights
  const Shard *shard;  // the part to load (shard.h); NULL: the whole model
} WeightsOptions;

// Sizes of a config's weights from the shapes alone: nothing is allocated or read. Checkpoint
// bytes by format as in spec section 5.4, and what weights_load would hold in the options'
// formats (norms, biases and sinks as float32).
typedef struct {
  int num_tensors;           // checkpoint tensors (3 + 15 per layer)
  int64_t num_params;        // logical weights: one per MXFP4 value, scales not counted
  int64_t bf16_bytes;        // checkpoint bytes of the bf16 tensors
  int64_t fp4_block_bytes;   // checkpoint bytes of the MXFP4 blocks
  int64_t scale_bytes;       // checkpoint bytes of the e8m0 scales
  int64_t checkpoint_bytes;  // the three together
  int64_t loaded_bytes;      // GptOssWeights in the options' formats
} WeightsPlan;

// "f32" | "bf16" | "mxfp4" | "q8" <-> WeightFormat; false for anything else.
const char *weight_format_name(WeightFormat f);
bool weight_format_from_name(const char *name, WeightFormat *out);

// The kept formats named by a --weight-format value, into o->dense_format and o->expert_format:
//   "f32"   float32 dense and experts: exact (the golden tests' formats), the slowest
//   "bf16"  bf16 dense, MXFP4 experts (the checkpoint's formats, exact for a checkpoint)
//   "q8"    q8 unembedding (q8.h: within 1/254 of each row's largest weight), bf16 for the
//           other dense matrices, MXFP4 experts: the fastest on CPU (docs/PERF.md)
//   "auto"  "q8" when model gets dummy weights (o->load_format dummy, or auto and model is no
//           checkpoint folder), "f32" for a checkpoint folder
// False for any other name.
bool weights_formats_from_name(const char *name, const char *model, WeightsOptions *o);

// Whether weights_load(model) with format generates dummy weights (LOAD_DUMMY, or LOAD_AUTO and
// model is no checkpoint folder).
bool weights_are_dummy(const char *model, LoadFormat format);

// The format o keeps the dense matrix of checkpoint role r in (q8 is the unembedding's alone; the
// other dense matrices are then bf16).
WeightFormat weights_dense_format(CheckpointRole r, const WeightsOptions *o);

// "auto" | "safetensors" | "dummy" -> LoadFormat; false for anything else.
bool weights_load_format_from_name(const char *name, LoadFormat *out);

// model: a checkpoint folder (OpenAI's "original/" layout: config.json + every *.safetensors in
// it, memory-mapped; a folder whose original/ subfolder holds them, as a Hugging Face download of
// openai/gpt-oss-* has, is read there) or, with LOAD_DUMMY (or LOAD_AUTO when no such folder
// exists), a preset name (config_preset). LOAD_DUMMY with a folder takes its config.json and no
// *.safetensors. Dummy weights are seeded and documented in weights_dummy.h. Checkpoint
// tensors may be BF16 or F32 (MXFP4 blocks and scales U8); F32 results are exact. Returns false
// with a message naming the file and tensor (missing tensor, wrong shape or dtype, truncated
// file, bad header), the config.json key, or the presets when model is none of these.
bool weights_load(const char *model, const WeightsOptions *o, GptOssWeights *w, char *err,
                  size_t err_size);
void weights_free(GptOssWeights *w);

// The config weights_load(model) would load, and nothing else read or allocated. False with
// weights_load's message when model is neither a checkpoint folder nor a preset.
bool weights_load_config(const char *model, LoadFormat format, GptOssConfig *c, char *err,
                         size_t err_size);

// Bytes of one matrix in its format.
size_t weight_matrix_bytes(const WeightMatrix *m);

// Fills p for config c kept in o's formats (o->load_format and seed do not matter).
void weights_plan(const GptOssConfig *c, const WeightsOptions *o, WeightsPlan *p);

#endif
