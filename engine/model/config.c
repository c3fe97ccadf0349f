// config.c: the presets, OpenAI's config.json (Jansson) and the consistency checks (see config.h).
// Reads one small JSON file; touches no weights.
#include "model/config.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/rope.h"

// ---------------------------------------------------------------------------------------------
// Presets (spec gptoss-model.md section 1.1)

static const GptOssConfig GPT_OSS_120B = {
    .num_layers = 36,
    .num_experts = 128,
    .experts_per_token = 4,
    .vocab_size = 201088,
    .hidden_size = 2880,
    .intermediate_size = 2880,
    .swiglu_limit = 7.0f,
    .head_dim = 64,
    .num_heads = 64,
    .num_kv_heads = 8,
    .sliding_window = 128,
    .initial_context_length = 4096,
    .rope_theta = 150000.0f,
    .rope_scaling_factor = 32.0f,
    .rope_ntk_alpha = 1.0f,
    .rope_ntk_beta = 32.0f,
};

// OpenAI's models answer to their Hugging Face id with or without "openai/".
static bool is_openai_model(const char *name, const char *model) {
  return strcmp(name, model) == 0 ||
         (strncmp(name, "openai/", 7) == 0 && strcmp(name + 7, model) == 0);
}

bool config_preset(const char *name, GptOssConfig *out) {
  *out = GPT_OSS_120B;
  if (is_openai_model(name, "gpt-oss-120b")) return true;
  if (is_openai_model(name, "gpt-oss-20b")) {
    out->num_layers = 24;
    out->num_experts = 32;
    return true;
  }
  if (strcmp(name, "gpt-oss-tiny") == 0) {
    out->num_layers = 4;
    out->hidden_size = 512;
    out->num_heads = 16;
    out->num_kv_heads = 2;
    out->num_experts = 8;
    out->intermediate_size = 512;
    return true;
  }
  return false;
}

const char *config_preset_names(void) {
  return "openai/gpt-oss-120b, openai/gpt-oss-20b, gpt-oss-tiny";
}

int64_t config_max_positions(const GptOssConfig *c) {
  if (c->rope_scaling_factor <= 1.0f) return c->initial_context_length;
  return (int64_t)llround((double)c->initial_context_length * c->rope_scaling_factor);
}

// ---------------------------------------------------------------------------------------------
// config.json

typedef struct {
  const char *key;
  size_t offset;  // into GptOssConfig
  bool is_int;
  bool required;
} ConfigKey;

#define INT_KEY(k, field) \
  { k, offsetof(GptOssConfig, field), true, true }
#define FLOAT_KEY(k, field, req) \
  { k, offsetof(GptOssConfig, field), false, req }
static const ConfigKey KEYS[] = {
    INT_KEY("num_hidden_layers", num_layers),
    INT_KEY("num_experts", num_experts),
    INT_KEY("experts_per_token", experts_per_token),
    INT_KEY("vocab_size", vocab_size),
    INT_KEY("hidden_size", hidden_size),
    INT_KEY("intermediate_size", intermediate_size),
    FLOAT_KEY("swiglu_limit", swiglu_limit, false),
    INT_KEY("head_dim", head_dim),
    INT_KEY("num_attention_heads", num_heads),
    INT_KEY("num_key_value_heads", num_kv_heads),
    INT_KEY("sliding_window", sliding_window),
    INT_KEY("initial_context_length", initial_context_length),
    FLOAT_KEY("rope_theta", rope_theta, true),
    FLOAT_KEY("rope_scaling_factor", rope_scaling_factor, true),
    FLOAT_KEY("rope_ntk_alpha", rope_ntk_alpha, true),
    FLOAT_KEY("rope_ntk_beta", rope_ntk_beta, true),
};
enum { NUM_KEYS = sizeof KEYS / sizeof *KEYS };

static const ConfigKey *find_key(const char *key) {
  for (int i = 0; i < NUM_KEYS; i++)
    if (strcmp(KEYS[i].key, key) == 0) return &KEYS[i];
  return NULL;
}

// Stores one JSON number into its field; false with a message when it is not a fitting number.
static bool set_field(GptOssConfig *c, const ConfigKey *k, const json_t *value, const char *path,
                      char *err, size_t err_size) {
  if (!json_is_number(value)) {
    snprintf(err, err_size, "%s: \"%s\" must be a number", path, k->key);
    return false;
  }
  double v = json_number_value(value);
  void *field = (char *)c + k->offset;
  if (!k->is_int) {
    *(float *)field = (float)v;
    return true;
  }
  if (v != floor(v) || v < -2147483648.0 || v > 2147483647.0) {
    snprintf(err, err_size, "%s: \"%s\" must be an integer, not %g", path, k->key, v);
    return false;
  }
  *(int *)field = (int)v;
  return true;
}

struct json_t *config_to_json(const GptOssConfig *c) {
  json_t *j = json_object();
  for (int i = 0; i < NUM_KEYS; i++) {
    const void *field = (const char *)c + KEYS[i].offset;
    json_object_set_new(j, KEYS[i].key,
                        KEYS[i].is_int ? json_integer(*(const int *)field)
                                       : json_real(*(const float *)field));
  }
  return j;
}

bool config_load_json(const char *path, GptOssConfig *out, char *err, size_t err_size) {
  json_error_t jerr;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    snprintf(err, err_size, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
    return false;
  }
  if (!json_is_object(root)) {
    snprintf(err, err_size, "%s: not a JSON object of the ModelConfig keys", path);
    json_decref(root);
    return false;
  }
  GptOssConfig c = {.swiglu_limit = 7.0f};
  bool seen[NUM_KEYS] = {false}, ok = true;
  const char *key;
  json_t *value;
  json_object_foreach(root, key, value) {
    const ConfigKey *k = find_key(key);
    if (!k) {
      snprintf(err, err_size,
               "%s: unknown key \"%s\": OpenAI's original/config.json has exactly the keys of "
               "gpt_oss ModelConfig (a Hugging Face root config.json is not this file; use the "
               "checkpoint's original/ folder)",
               path, key);
      ok = false;
      break;
    }
    seen[k - KEYS] = true;
    if (!(ok = set_field(&c, k, value, path, err, err_size))) break;
  }
  for (int i = 0; ok && i < NUM_KEYS; i++) {
    if (KEYS[i].required && !seen[i]) {
      snprintf(err, err_size, "%s: missing key \"%s\"", path, KEYS[i].key);
      ok = false;
    }
  }
  json_decref(root);
  if (!ok) return false;
  char why[256];
  if (!config_validate(&c, why, sizeof why)) {
    snprintf(err, err_size, "%s: %s", path, why);
    return false;
  }
  *out = c;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Validation

// Sizes beyond this are certainly a typo, and keeping them small keeps every derived int exact.
#define CONFIG_MAX_DIM (1 << 20)

static bool check_positive(int value, const char *key, char *err, size_t err_size) {
  if (value > 0 && value <= CONFIG_MAX_DIM) return true;
  snprintf(err, err_size, "\"%s\" must be between 1 and %d, not %d", key, CONFIG_MAX_DIM, value);
  return false;
}

static bool check_multiple_of_32(int value, const char *key, char *err, size_t err_size) {
  if (value % 32 == 0) return true;
  snprintf(err, err_size, "\"%s\" (%d) must be a multiple of 32: MXFP4 blocks run along it", key,
           value);
  return false;
}

// YaRN's ramp bounds (spec section 3); the reference asserts 0 < low < high < head_dim / 2 - 1.
static bool check_yarn(const GptOssConfig *c, char *err, size_t err_size) {
  if (!(c->rope_ntk_alpha > 0.0f) || !(c->rope_ntk_beta > 0.0f)) {
    snprintf(err, err_size, "\"rope_ntk_alpha\" and \"rope_ntk_beta\" must be > 0");
    return false;
  }
  double half = c->head_dim / 2.0, two_pi = 2.0 * M_PI;
  double low =
      half * log(c->initial_context_length / (c->rope_ntk_beta * two_pi)) / log(c->rope_theta);
  double high =
      half * log(c->initial_context_length / (c->rope_ntk_alpha * two_pi)) / log(c->rope_theta);
  if (0.0 < low && low < high && high < half - 1.0) return true;
  snprintf(err, err_size,
           "YaRN bounds low %.6g, high %.6g must satisfy 0 < low < high < head_dim / 2 - 1 = %g "
           "(from \"rope_ntk_alpha\", \"rope_ntk_beta\", \"initial_context_length\", "
           "\"rope_theta\", \"head_dim\")",
           low, high, half - 1.0);
  return false;
}

bool config_validate(const GptOssConfig *c, char *err, size_t err_size) {
  const struct {
    int value;
    const char *key;
  } sizes[] = {
      {c->num_layers, "num_hidden_layers"},
      {c->num_experts, "num_experts"},
      {c->experts_per_token, "experts_per_token"},
      {c->vocab_size, "vocab_size"},
      {c->hidden_size, "hidden_size"},
      {c->intermediate_size, "intermediate_size"},
      {c->head_dim, "head_dim"},
      {c->num_heads, "num_attention_heads"},
      {c->num_kv_heads, "num_key_value_heads"},
      {c->initial_context_length, "initial_context_length"},
  };
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    if (!check_positive(sizes[i].value, sizes[i].key, err, err_size)) return false;
  if (c->experts_per_token > c->num_experts) {
    snprintf(err, err_size, "\"experts_per_token\" (%d) must be at most \"num_experts\" (%d)",
             c->experts_per_token, c->num_experts);
    return false;
  }
  if (c->num_heads % c->num_kv_heads != 0) {
    snprintf(err, err_size, "\"num_key_value_heads\" (%d) must divide \"num_attention_heads\" (%d)",
             c->num_kv_heads, c->num_heads);
    return false;
  }
  if (c->head_dim % 2 != 0 || c->head_dim / 2 > ROPE_MAX_HALF_DIM) {
    snprintf(err, err_size, "\"head_dim\" (%d) must be even and at most %d", c->head_dim,
             2 * ROPE_MAX_HALF_DIM);
    return false;
  }
  if ((int64_t)c->head_dim * (c->num_heads + 2 * c->num_kv_heads) > CONFIG_MAX_DIM) {
    snprintf(err, err_size,
             "\"head_dim\" * (\"num_attention_heads\" + 2 * \"num_key_value_heads\") must be at "
             "most %d",
             CONFIG_MAX_DIM);
    return false;
  }
  if (!check_multiple_of_32(c->hidden_size, "hidden_size", err, err_size) ||
      !check_multiple_of_32(c->intermediate_size, "intermediate_size", err, err_size))
    return false;
  if (c->sliding_window < 0) {
    snprintf(err, err_size, "\"sliding_window\" must be >= 0 (0: no sliding window), not %d",
             c->sliding_window);
    return false;
  }
  if (!(c->swiglu_limit > 0.0f) || !isfinite(c->swiglu_limit)) {
    snprintf(err, err_size, "\"swiglu_limit\" must be a positive number");
    return false;
  }
  if (!(c->rope_theta > 1.0f) || !isfinite(c->rope_theta)) {
    snprintf(err, err_size, "\"rope_theta\" must be > 1");
    return false;
  }
  if (!(c->rope_scaling_factor > 0.0f) || !isfinite(c->rope_scaling_factor)) {
    snprintf(err, err_size, "\"rope_scaling_factor\" must be > 0 (<= 1: plain RoPE)");
    return false;
  }
  return c->rope_scaling_factor <= 1.0f || check_yarn(c, err, err_size);
}
