// config.h: GPT-OSS hyperparameters: OpenAI's original/config.json keys (spec gptoss-model.md
// section 1.2), the constants the reference hard-codes, and named presets. Pure data: no
// weights, no memory beyond the struct.
#ifndef GE_MODEL_CONFIG_H
#define GE_MODEL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPTOSS_RMS_EPS 1e-5f        // hard-coded in the reference
#define GPTOSS_SWIGLU_ALPHA 1.702f  // hard-coded in the reference

typedef struct {
  int num_layers;              // num_hidden_layers
  int num_experts;             // num_experts
  int experts_per_token;       // experts_per_token (top-k)
  int vocab_size;              // vocab_size (201,088 for o200k_harmony)
  int hidden_size;             // hidden_size (d)
  int intermediate_size;       // intermediate_size (I, per expert)
  float swiglu_limit;          // swiglu_limit (7.0 when missing)
  int head_dim;                // head_dim
  int num_heads;               // num_attention_heads (query heads)
  int num_kv_heads;            // num_key_value_heads
  int sliding_window;          // sliding_window, on even layers (0-based); odd layers are full
  int initial_context_length;  // initial_context_length (YaRN L0)
  float rope_theta;            // rope_theta
  float rope_scaling_factor;   // rope_scaling_factor (YaRN s; <= 1 means plain RoPE)
  float rope_ntk_alpha;        // rope_ntk_alpha
  float rope_ntk_beta;         // rope_ntk_beta
} GptOssConfig;

// Derived sizes.
static inline int config_q_dim(const GptOssConfig *c) { return c->num_heads * c->head_dim; }
static inline int config_kv_dim(const GptOssConfig *c) { return c->num_kv_heads * c->head_dim; }
static inline int config_qkv_dim(const GptOssConfig *c) {
  return config_q_dim(c) + 2 * config_kv_dim(c);
}
static inline bool config_layer_is_sliding(const GptOssConfig *c, int layer) {
  return c->sliding_window > 0 && layer % 2 == 0;
}
// Whether the model has sliding-window layers and full ones (a hybrid KV cache can serve it).
static inline bool config_has_both_layer_kinds(const GptOssConfig *c) {
  return c->sliding_window > 0 && c->num_layers >= 2;
}
// Longest context the model supports: L0 * s (131,072 for the real models).
int64_t config_max_positions(const GptOssConfig *c);

// "openai/gpt-oss-120b", "openai/gpt-oss-20b" (also without "openai/") and "gpt-oss-tiny"
// (4 layers, hidden 512, 16 query and 2 KV heads of 64, 8 experts top-4, intermediate 512, the
// full vocabulary and the real RoPE/YaRN, sliding-window, sink and SwiGLU settings).
// False when the name is not a preset.
bool config_preset(const char *name, GptOssConfig *out);

// The preset names for messages: "openai/gpt-oss-120b, openai/gpt-oss-20b, gpt-oss-tiny".
const char *config_preset_names(void);

// Reads OpenAI's config.json (the 16 ModelConfig keys; ints or floats, an int key given as a
// float must be integral; swiglu_limit optional, 7.0 when missing; every other key is required)
// and checks it (config_validate). Unknown keys are rejected, as the reference's
// ModelConfig(**json) does: a Hugging Face root config.json is not this file. False with a
// message naming the file and the key.
bool config_load_json(const char *path, GptOssConfig *out, char *err, size_t err_size);

// The config as OpenAI's config.json object (the 16 keys, in the file's usual order), which
// config_load_json reads back to the same struct. A new reference (Jansson's json_t, named by
// its struct tag so that this header, included everywhere, needs no Jansson).
struct json_t *config_to_json(const GptOssConfig *c);

// Checks a config's consistency: positive sizes, query heads a multiple of KV heads, experts per
// token <= experts, hidden and intermediate sizes multiples of 32 (MXFP4 blocks), an even
// head_dim of at most 256, and YaRN's bounds 0 < low < high < head_dim / 2 - 1 (the reference
// asserts them) when rope_scaling_factor > 1. False with a message naming the config.json key.
bool config_validate(const GptOssConfig *c, char *err, size_t err_size);

#endif
