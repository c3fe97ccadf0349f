// test_config.c: the presets' dimensions (spec gptoss-model.md section 1.1), OpenAI's
// config.json (section 1.2: ints or floats, optional swiglu_limit, unknown keys rejected), and
// every error naming the file and the key. Configs are written into a temporary folder.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/config.h"

// The 120b's original/config.json as the spec prints it (ints where the hub file has ints).
#define CONFIG_120B                                                                           \
  "{\"num_hidden_layers\": 36, \"num_experts\": 128, \"experts_per_token\": 4,\n"             \
  " \"vocab_size\": 201088, \"hidden_size\": 2880, \"intermediate_size\": 2880,\n"            \
  " \"swiglu_limit\": 7.0, \"head_dim\": 64, \"num_attention_heads\": 64,\n"                  \
  " \"num_key_value_heads\": 8, \"sliding_window\": 128, \"initial_context_length\": 4096,\n" \
  " \"rope_theta\": 150000, \"rope_scaling_factor\": 32.0, \"rope_ntk_alpha\": 1,\n"          \
  " \"rope_ntk_beta\": 32}"

typedef struct {
  char dir[256];
  char path[300];
} TempConfig;

static int make_temp_dir(void **state) {
  TempConfig *t = calloc(1, sizeof *t);
  snprintf(t->dir, sizeof t->dir, "%s/gptoss-config-XXXXXX", P_tmpdir);
  if (!mkdtemp(t->dir)) return -1;
  snprintf(t->path, sizeof t->path, "%s/config.json", t->dir);
  *state = t;
  return 0;
}

static int remove_temp_dir(void **state) {
  TempConfig *t = *state;
  unlink(t->path);
  rmdir(t->dir);
  free(t);
  return 0;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

// CONFIG_120B with the first occurrence of from replaced by to.
static void write_120b_with(const char *path, const char *from, const char *to) {
  char text[2048];
  const char *at = strstr(CONFIG_120B, from);
  assert_non_null(at);
  snprintf(text, sizeof text, "%.*s%s%s", (int)(at - CONFIG_120B), CONFIG_120B, to,
           at + strlen(from));
  write_text(path, text);
}

// Loading must fail with a message that names the file and contains want.
static void expect_error(const char *path, const char *want) {
  GptOssConfig c;
  char err[1024] = "";
  assert_false(config_load_json(path, &c, err, sizeof err));
  if (!strstr(err, path) || !strstr(err, want)) fail_msg("error \"%s\" lacks \"%s\"", err, want);
}

static void assert_config_equal(const GptOssConfig *a, const GptOssConfig *b) {
  assert_memory_equal(a, b, sizeof *a);
}

// ---------------------------------------------------------------------------------------------
// Presets

static void test_preset_120b(void **state) {
  (void)state;
  GptOssConfig c;
  assert_true(config_preset("openai/gpt-oss-120b", &c));
  assert_int_equal(c.num_layers, 36);
  assert_int_equal(c.num_experts, 128);
  assert_int_equal(c.experts_per_token, 4);
  assert_int_equal(c.vocab_size, 201088);
  assert_int_equal(c.hidden_size, 2880);
  assert_int_equal(c.intermediate_size, 2880);
  assert_true(c.swiglu_limit == 7.0f);
  assert_int_equal(c.head_dim, 64);
  assert_int_equal(c.num_heads, 64);
  assert_int_equal(c.num_kv_heads, 8);
  assert_int_equal(c.sliding_window, 128);
  assert_int_equal(c.initial_context_length, 4096);
  assert_true(c.rope_theta == 150000.0f);
  assert_true(c.rope_scaling_factor == 32.0f);
  assert_true(c.rope_ntk_alpha == 1.0f);
  assert_true(c.rope_ntk_beta == 32.0f);
  assert_int_equal(config_q_dim(&c), 4096);
  assert_int_equal(config_kv_dim(&c), 512);
  assert_int_equal(config_qkv_dim(&c), 5120);
  assert_int_equal(config_max_positions(&c), 131072);
  assert_true(config_layer_is_sliding(&c, 0));
  assert_false(config_layer_is_sliding(&c, 1));
  assert_true(config_layer_is_sliding(&c, 34));
  assert_false(config_layer_is_sliding(&c, 35));
  char err[256];
  assert_true(config_validate(&c, err, sizeof err));
  GptOssConfig short_name;
  assert_true(config_preset("gpt-oss-120b", &short_name));
  assert_config_equal(&c, &short_name);
}

static void test_preset_20b_differs_only_in_layers_and_experts(void **state) {
  (void)state;
  GptOssConfig big, c, short_name;
  assert_true(config_preset("openai/gpt-oss-120b", &big));
  assert_true(config_preset("openai/gpt-oss-20b", &c));
  assert_true(config_preset("gpt-oss-20b", &short_name));
  assert_config_equal(&c, &short_name);
  assert_int_equal(c.num_layers, 24);
  assert_int_equal(c.num_experts, 32);
  c.num_layers = big.num_layers;
  c.num_experts = big.num_experts;
  assert_config_equal(&c, &big);
}

static void test_preset_tiny(void **state) {
  (void)state;
  GptOssConfig c, big;
  assert_true(config_preset("gpt-oss-tiny", &c));
  assert_true(config_preset("openai/gpt-oss-120b", &big));
  assert_int_equal(c.num_layers, 4);
  assert_int_equal(c.hidden_size, 512);
  assert_int_equal(c.num_heads, 16);
  assert_int_equal(c.num_kv_heads, 2);
  assert_int_equal(c.head_dim, 64);
  assert_int_equal(c.num_experts, 8);
  assert_int_equal(c.experts_per_token, 4);
  assert_int_equal(c.intermediate_size, 512);
  assert_int_equal(c.sliding_window, 128);
  assert_int_equal(c.vocab_size, 201088);
  // The real RoPE/YaRN and SwiGLU settings.
  assert_true(c.swiglu_limit == big.swiglu_limit);
  assert_int_equal(c.initial_context_length, big.initial_context_length);
  assert_true(c.rope_theta == big.rope_theta);
  assert_true(c.rope_scaling_factor == big.rope_scaling_factor);
  assert_true(c.rope_ntk_alpha == big.rope_ntk_alpha);
  assert_true(c.rope_ntk_beta == big.rope_ntk_beta);
  char err[256];
  assert_true(config_validate(&c, err, sizeof err));
}

static void test_unknown_presets(void **state) {
  (void)state;
  GptOssConfig c;
  assert_false(config_preset("gpt-oss-7b", &c));
  assert_false(config_preset("openai/gpt-oss-tiny", &c));  // not an OpenAI model
  assert_false(config_preset("", &c));
  const char *names = config_preset_names();
  assert_non_null(strstr(names, "openai/gpt-oss-120b"));
  assert_non_null(strstr(names, "openai/gpt-oss-20b"));
  assert_non_null(strstr(names, "gpt-oss-tiny"));
}

// ---------------------------------------------------------------------------------------------
// config.json

static void test_json_120b_equals_preset(void **state) {
  TempConfig *t = *state;
  write_text(t->path, CONFIG_120B);
  GptOssConfig c, preset;
  char err[1024] = "";
  assert_true(config_load_json(t->path, &c, err, sizeof err));
  assert_true(config_preset("openai/gpt-oss-120b", &preset));
  assert_config_equal(&c, &preset);
}

static void test_json_fixture(void **state) {
  (void)state;
  GptOssConfig c;
  char err[1024] = "";
  assert_true(config_load_json("tests/fixtures/gptoss-tiny/b/config.json", &c, err, sizeof err));
  assert_int_equal(c.num_layers, 2);
  assert_int_equal(c.hidden_size, 128);
  assert_int_equal(c.intermediate_size, 96);
  assert_int_equal(c.num_heads, 4);
  assert_int_equal(c.num_kv_heads, 1);
  assert_int_equal(c.head_dim, 64);
  assert_int_equal(c.vocab_size, 2048);
  assert_int_equal(c.sliding_window, 5);
  assert_true(c.rope_theta == 150000.0f);
}

static void test_json_integral_floats_and_default_swiglu_limit(void **state) {
  TempConfig *t = *state;
  write_120b_with(t->path, "\"num_hidden_layers\": 36", "\"num_hidden_layers\": 24.0");
  GptOssConfig c;
  char err[1024] = "";
  assert_true(config_load_json(t->path, &c, err, sizeof err));
  assert_int_equal(c.num_layers, 24);
  write_120b_with(t->path, "\"swiglu_limit\": 7.0, ", "");
  c.swiglu_limit = 0;
  assert_true(config_load_json(t->path, &c, err, sizeof err));
  assert_true(c.swiglu_limit == 7.0f);
  write_120b_with(t->path, "\"swiglu_limit\": 7.0", "\"swiglu_limit\": 9");
  assert_true(config_load_json(t->path, &c, err, sizeof err));
  assert_true(c.swiglu_limit == 9.0f);
}

static void test_json_errors_name_file_and_key(void **state) {
  TempConfig *t = *state;
  write_120b_with(t->path, "\"num_hidden_layers\": 36", "\"num_hidden_layers\": 36.5");
  expect_error(t->path, "\"num_hidden_layers\" must be an integer");
  write_120b_with(t->path, "\"head_dim\": 64", "\"head_dim\": \"64\"");
  expect_error(t->path, "\"head_dim\" must be a number");
  write_120b_with(t->path, "\"rope_theta\": 150000", "\"rope_theta\": null");
  expect_error(t->path, "\"rope_theta\" must be a number");
  write_120b_with(t->path, "\"head_dim\": 64, ", "");
  expect_error(t->path, "missing key \"head_dim\"");
  write_120b_with(t->path, "\"num_experts\"", "\"num_local_experts\"");
  expect_error(t->path, "unknown key \"num_local_experts\"");
  write_120b_with(t->path, "\"sliding_window\": 128",
                  "\"sliding_window\": 128, \"sliding_window\": 4");
  expect_error(t->path, "sliding_window");
}

static void test_json_syntax_errors(void **state) {
  TempConfig *t = *state;
  write_120b_with(t->path, "\"vocab_size\": 201088,", "\"vocab_size\": 201088,,");
  expect_error(t->path, ":2:");  // file:line:column
  write_text(t->path, "[1, 2]");
  expect_error(t->path, "not a JSON object");
  write_text(t->path, "");
  expect_error(t->path, ":");
  unlink(t->path);
  expect_error(t->path, "");  // a missing file is named too
}

static void test_json_inconsistent_values(void **state) {
  TempConfig *t = *state;
  write_120b_with(t->path, "\"num_key_value_heads\": 8", "\"num_key_value_heads\": 7");
  expect_error(t->path, "\"num_key_value_heads\" (7) must divide \"num_attention_heads\" (64)");
  write_120b_with(t->path, "\"hidden_size\": 2880", "\"hidden_size\": 2881");
  expect_error(t->path, "\"hidden_size\" (2881) must be a multiple of 32");
  write_120b_with(t->path, "\"intermediate_size\": 2880", "\"intermediate_size\": 100");
  expect_error(t->path, "\"intermediate_size\" (100) must be a multiple of 32");
  write_120b_with(t->path, "\"experts_per_token\": 4", "\"experts_per_token\": 129");
  expect_error(t->path, "\"experts_per_token\" (129) must be at most \"num_experts\" (128)");
  write_120b_with(t->path, "\"vocab_size\": 201088", "\"vocab_size\": -1");
  expect_error(t->path, "\"vocab_size\" must be between 1 and");
  write_120b_with(t->path, "\"num_hidden_layers\": 36", "\"num_hidden_layers\": 0");
  expect_error(t->path, "\"num_hidden_layers\"");
  write_120b_with(t->path, "\"head_dim\": 64", "\"head_dim\": 63");
  expect_error(t->path, "\"head_dim\" (63) must be even");
  write_120b_with(t->path, "\"head_dim\": 64", "\"head_dim\": 4");
  expect_error(t->path, "YaRN bounds");
  write_120b_with(t->path, "\"sliding_window\": 128", "\"sliding_window\": -1");
  expect_error(t->path, "\"sliding_window\" must be >= 0");
  write_120b_with(t->path, "\"swiglu_limit\": 7.0", "\"swiglu_limit\": 0");
  expect_error(t->path, "\"swiglu_limit\"");
  write_120b_with(t->path, "\"rope_theta\": 150000", "\"rope_theta\": 1");
  expect_error(t->path, "\"rope_theta\" must be > 1");
}

static void test_plain_rope_needs_no_yarn_bounds(void **state) {
  (void)state;
  GptOssConfig c;
  assert_true(config_preset("gpt-oss-tiny", &c));
  c.head_dim = 4;
  char err[256] = "";
  assert_false(config_validate(&c, err, sizeof err));
  c.rope_scaling_factor = 1.0f;
  assert_true(config_validate(&c, err, sizeof err));
  assert_int_equal(config_max_positions(&c), 4096);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_preset_120b),
      cmocka_unit_test(test_preset_20b_differs_only_in_layers_and_experts),
      cmocka_unit_test(test_preset_tiny),
      cmocka_unit_test(test_unknown_presets),
      cmocka_unit_test_setup_teardown(test_json_120b_equals_preset, make_temp_dir, remove_temp_dir),
      cmocka_unit_test(test_json_fixture),
      cmocka_unit_test_setup_teardown(test_json_integral_floats_and_default_swiglu_limit,
                                      make_temp_dir, remove_temp_dir),
      cmocka_unit_test_setup_teardown(test_json_errors_name_file_and_key, make_temp_dir,
                                      remove_temp_dir),
      cmocka_unit_test_setup_teardown(test_json_syntax_errors, make_temp_dir, remove_temp_dir),
      cmocka_unit_test_setup_teardown(test_json_inconsistent_values, make_temp_dir,
                                      remove_temp_dir),
      cmocka_unit_test(test_plain_rope_needs_no_yarn_bounds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
