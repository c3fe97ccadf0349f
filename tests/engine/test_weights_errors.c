// test_weights_errors.c: every weight-loading error names the file (or folder) and the tensor:
// missing tensor, wrong shape, wrong dtype, truncated file, bad header (bad JSON, unknown dtype,
// shape and offsets that disagree, overlapping tensors), a tensor in two files, a folder without
// *.safetensors, a config.json that disagrees with the file, an unknown preset, an impossible
// format. Each case edits a copy of fixture a in a temporary folder; a failed load leaves the
// weights empty.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/sysinfo.h>

#include "checkpoint_fixture.h"
#include "model/weights.h"

static const WeightsOptions OPTIONS = {
    .load_format = LOAD_AUTO, .dense_format = WEIGHT_F32, .expert_format = WEIGHT_F32};

// Loading model must fail with a message containing every one of the NULL-terminated wants.
static void expect_load_error(const char *model, const WeightsOptions *o, ...) {
  GptOssWeights w;
  char err[1024] = "";
  if (weights_load(model, o, &w, err, sizeof err)) fail_msg("%s loaded", model);
  assert_null(w.owned);
  assert_null(w.layers);
  va_list ap;
  va_start(ap, o);
  for (const char *want; (want = va_arg(ap, const char *)) != NULL;)
    if (!strstr(err, want)) fail_msg("error \"%s\" lacks \"%s\"", err, want);
  va_end(ap);
}

// dir/model.safetensors, for the messages.
static const char *model_path(const char *dir) {
  static char path[512];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  return path;
}

// ---------------------------------------------------------------------------------------------
// Tensors

static void drop_sinks(json_t *h) { json_object_del(h, "block.1.attn.sinks"); }

static void test_missing_tensor(void **state) {
  const char *dir = *state;
  write_edited_fixture(dir, drop_sinks);
  expect_load_error(dir, &OPTIONS, dir, "missing tensor 'block.1.attn.sinks'", NULL);
}

static void transpose_qkv(json_t *h) {
  set_field(h, "block.0.attn.qkv.weight", "shape", "[64, 192]");
}

static void test_wrong_shape(void **state) {
  const char *dir = *state;
  write_edited_fixture(dir, transpose_qkv);
  expect_load_error(dir, &OPTIONS, model_path(dir), "'block.0.attn.qkv.weight'",
                    "shape [64, 192], expected [192, 64]", NULL);
}

static void f16_qkv(json_t *h) { set_field(h, "block.0.attn.qkv.weight", "dtype", "\"F16\""); }
static void i8_blocks(json_t *h) {
  set_field(h, "block.3.mlp.mlp2_weight.blocks", "dtype", "\"I8\"");
}
static void bf16_scales(json_t *h) {
  // [8, 64, 2] U8 bytes reread as [8, 64] BF16: same byte count, valid header, wrong dtype.
  set_field(h, "block.2.mlp.mlp2_weight.scales", "dtype", "\"BF16\"");
  set_field(h, "block.2.mlp.mlp2_weight.scales", "shape", "[8, 64]");
}

static void test_wrong_dtype(void **state) {
  const char *dir = *state;
  write_edited_fixture(dir, f16_qkv);
  expect_load_error(dir, &OPTIONS, model_path(dir), "'block.0.attn.qkv.weight'",
                    "dtype F16, expected BF16", NULL);
  write_edited_fixture(dir, i8_blocks);
  expect_load_error(dir, &OPTIONS, model_path(dir), "'block.3.mlp.mlp2_weight.blocks'",
                    "dtype I8, expected U8", NULL);
  write_edited_fixture(dir, bf16_scales);
  expect_load_error(dir, &OPTIONS, model_path(dir), "'block.2.mlp.mlp2_weight.scales'",
                    "dtype BF16, expected U8", NULL);
}

// config.json says hidden 128; the file's tensors are for hidden 64.
static void test_config_disagrees_with_file(void **state) {
  const char *dir = *state;
  write_edited_fixture(dir, NULL);
  char path[512];
  snprintf(path, sizeof path, "%s/config.json", dir);
  size_t size;
  char *text = (char *)read_whole(path, &size);
  text[size] = '\0';
  char *at = strstr(text, "\"hidden_size\": 64");
  assert_non_null(at);
  memcpy(at, "\"hidden_size\": 96", 17);
  write_bytes(path, text, size);
  free(text);
  expect_load_error(dir, &OPTIONS, model_path(dir), "'embedding.weight'",
                    "shape [1024, 64], expected [1024, 96] from config.json", NULL);
}

// ---------------------------------------------------------------------------------------------
// Files

static void test_truncated_file(void **state) {
  const char *dir = *state;
  write_edited_fixture(dir, NULL);
  struct stat st;
  assert_int_equal(stat(model_path(dir), &st), 0);
  // The data cut short: the tensor that ends last is named.
  assert_int_equal(truncate(model_path(dir), st.st_size - 1000), 0);
  expect_load_error(dir, &OPTIONS, model_path(dir), "truncated file", "tensor 'unembedding.weight'",
                    NULL);
  // The header cut short.
  assert_int_equal(truncate(model_path(dir), 100), 0);
  expect_load_error(dir, &OPTIONS, model_path(dir), "truncated file", "the header says", NULL);
  // Not even the header length.
  assert_int_equal(truncate(model_path(dir), 5), 0);
  expect_load_error(dir, &OPTIONS, model_path(dir), "truncated file", "5 bytes", NULL);
}

// Writes fixture a with byte i of the file set to value.
static void write_with_byte(const char *dir, size_t i, uint8_t value) {
  write_edited_fixture(dir, NULL);
  size_t size;
  uint8_t *bytes = read_whole(model_path(dir), &size);
  bytes[i] = value;
  write_bytes(model_path(dir), bytes, size);
  free(bytes);
}

static void unknown_dtype(json_t *h) { set_field(h, "block.1.attn.out.bias", "dtype", "\"BF17\""); }
static void wrong_size(json_t *h) { set_field(h, "block.1.attn.out.bias", "shape", "[65]"); }
static void no_offsets(json_t *h) {
  json_object_del(json_object_get(h, "norm.scale"), "data_offsets");
}
static void overlap(json_t *h) {
  set_field(h, "block.0.mlp.norm.scale", "data_offsets", "[0, 128]");
}
static void negative_dim(json_t *h) { set_field(h, "norm.scale", "shape", "[-64]"); }

static void test_bad_header(void **state) {
  const char *dir = *state;
  write_with_byte(dir, 8, 'x');  // the JSON's opening brace
  expect_load_error(dir, &OPTIONS, model_path(dir), "bad safetensors header", "JSON error", NULL);
  write_with_byte(dir, 7, 0x40);  // a header length of 2^62 + ...
  expect_load_error(dir, &OPTIONS, model_path(dir), "truncated file", NULL);
  write_edited_fixture(dir, unknown_dtype);
  expect_load_error(dir, &OPTIONS, model_path(dir), "bad safetensors header",
                    "'block.1.attn.out.bias'", "unknown dtype \"BF17\"", NULL);
  write_edited_fixture(dir, wrong_size);
  expect_load_error(dir, &OPTIONS, model_path(dir), "bad safetensors header",
                    "'block.1.attn.out.bias'", "130 bytes by its shape", "span 128", NULL);
  write_edited_fixture(dir, no_offsets);
  expect_load_error(dir, &OPTIONS, model_path(dir), "bad safetensors header", "'norm.scale'",
                    "data_offsets", NULL);
  write_edited_fixture(dir, negative_dim);
  expect_load_error(dir, &OPTIONS, model_path(dir), "'norm.scale' has a bad shape", NULL);
  write_edited_fixture(dir, overlap);
  expect_load_error(dir, &OPTIONS, model_path(dir), "bad safetensors header", "overlap",
                    "'block.0.mlp.norm.scale'", NULL);
  json_t *not_object = json_array();
  write_safetensors(dir, "model.safetensors", not_object, (const uint8_t *)"", 0);
  json_decref(not_object);
  expect_load_error(dir, &OPTIONS, model_path(dir), "not a JSON object", NULL);
}

static void test_tensor_in_two_files(void **state) {
  const char *dir = *state;
  write_edited_fixture(dir, NULL);
  char path[512];
  snprintf(path, sizeof path, "%s/second.safetensors", dir);
  copy_file(model_path(dir), path);
  expect_load_error(dir, &OPTIONS, "is in two files", model_path(dir), path, NULL);
}

static void test_folder_without_safetensors(void **state) {
  const char *dir = *state;
  char path[512];
  snprintf(path, sizeof path, "%s/config.json", dir);
  copy_file(FIXTURE_A "/config.json", path);
  expect_load_error(dir, &OPTIONS, dir, "no *.safetensors files", NULL);
}

static void test_bad_config_json(void **state) {
  const char *dir = *state;
  char path[512];
  snprintf(path, sizeof path, "%s/config.json", dir);
  write_bytes(path, "{\"num_local_experts\": 8}", 24);
  expect_load_error(dir, &OPTIONS, path, "unknown key \"num_local_experts\"", NULL);
}

// ---------------------------------------------------------------------------------------------
// Names and options

static void test_unknown_model_names(void **state) {
  (void)state;
  expect_load_error("gpt-oss-7b", &OPTIONS, "'gpt-oss-7b' is neither a checkpoint folder",
                    "openai/gpt-oss-120b, openai/gpt-oss-20b, gpt-oss-tiny", NULL);
  WeightsOptions o = OPTIONS;
  o.load_format = LOAD_DUMMY;
  expect_load_error("no/such/folder", &o, "'no/such/folder' is neither a preset", "gpt-oss-tiny",
                    NULL);
  o.load_format = LOAD_SAFETENSORS;
  expect_load_error("gpt-oss-tiny", &o, "gpt-oss-tiny: not a checkpoint folder", NULL);
  o = OPTIONS;
  o.dense_format = WEIGHT_MXFP4;
  expect_load_error(FIXTURE_A, &o, "dense weights are kept as f32 or bf16", NULL);
}

static void test_load_format_names(void **state) {
  (void)state;
  LoadFormat f;
  assert_true(weights_load_format_from_name("auto", &f));
  assert_int_equal(f, LOAD_AUTO);
  assert_true(weights_load_format_from_name("safetensors", &f));
  assert_int_equal(f, LOAD_SAFETENSORS);
  assert_true(weights_load_format_from_name("dummy", &f));
  assert_int_equal(f, LOAD_DUMMY);
  assert_false(weights_load_format_from_name("pt", &f));
  assert_false(weights_load_format_from_name("", &f));
}

// The 120b kept all in float32 is 467 GB: refused up front, with the size that would fit.
static void test_weights_larger_than_memory(void **state) {
  (void)state;
  struct sysinfo si;
  assert_int_equal(sysinfo(&si), 0);
  if (((double)si.totalram + (double)si.totalswap) * si.mem_unit > 467e9) skip();
  WeightsOptions o = OPTIONS;
  o.load_format = LOAD_DUMMY;
  expect_load_error("openai/gpt-oss-120b", &o, "the weights need 435.2 GiB",
                    "f32 dense and f32 experts", "bf16 dense and mxfp4 experts need 60.8 GiB",
                    NULL);
}

#define WITH_DIR(test) cmocka_unit_test_setup_teardown(test, temp_dir_setup, temp_dir_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      WITH_DIR(test_missing_tensor),
      WITH_DIR(test_wrong_shape),
      WITH_DIR(test_wrong_dtype),
      WITH_DIR(test_config_disagrees_with_file),
      WITH_DIR(test_truncated_file),
      WITH_DIR(test_bad_header),
      WITH_DIR(test_tensor_in_two_files),
      WITH_DIR(test_folder_without_safetensors),
      WITH_DIR(test_bad_config_json),
      cmocka_unit_test(test_unknown_model_names),
      cmocka_unit_test(test_load_format_names),
      cmocka_unit_test(test_weights_larger_than_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
