// test_weights.c: the fixture checkpoints load with the shapes their config.json implies and
// with every value equal to an independent decode of the file (bf16 by shifting, MXFP4 by hand)
// in every kept format; a folder of several files and a Hugging Face download's original/ load
// the same; dummy weights are deterministic per seed, the same model in every format, finite,
// at the documented scales and spread over the experts; and the 120b/20b plans match spec
// gptoss-model.md section 5.4 without allocating anything. Errors: test_weights_errors.c.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "checkpoint_fixture.h"
#include "model/checkpoint.h"
#include "model/mxfp4.h"
#include "model/weights.h"

static const WeightsOptions F32_OPTIONS = {.dense_format = WEIGHT_F32, .expert_format = WEIGHT_F32};
static const WeightsOptions SMALL_OPTIONS = {.dense_format = WEIGHT_BF16,
                                             .expert_format = WEIGHT_MXFP4};

static void load_ok(const char *model, const WeightsOptions *o, GptOssWeights *w) {
  char err[1024] = "";
  if (!weights_load(model, o, w, err, sizeof err)) fail_msg("%s: %s", model, err);
}

// ---------------------------------------------------------------------------------------------
// Against the raw file

// Float vector [n] against the file's bf16 tensor.
static void expect_vector(const RawCheckpoint *raw, const char *name, const float *v, int64_t n) {
  int64_t count;
  const uint8_t *p = raw_tensor(raw, name, &count);
  assert_int_equal(count, n);
  for (int64_t i = 0; i < n; i++)
    if (v[i] != raw_bf16(p, i))
      fail_msg("%s[%lld]: %g != %g", name, (long long)i, v[i], raw_bf16(p, i));
}

static void expect_matrix(const RawCheckpoint *raw, const char *name, const WeightMatrix *m,
                          int64_t rows, int64_t cols) {
  assert_int_equal(m->rows, rows);
  assert_int_equal(m->cols, cols);
  int64_t count;
  const uint8_t *p = raw_tensor(raw, name, &count);
  assert_int_equal(count, rows * cols);
  assert_int_equal(weight_matrix_bytes(m), rows * cols * (m->format == WEIGHT_F32 ? 4 : 2));
  if (m->format == WEIGHT_BF16) {
    assert_memory_equal(m->data, p, (size_t)count * 2);
    return;
  }
  assert_int_equal(m->format, WEIGHT_F32);
  expect_vector(raw, name, m->data, count);
}

// The num_experts matrices of one expert tensor (prefix "block.N.mlp.mlp1_weight") against the
// file's blocks and scales.
static void expect_experts(const RawCheckpoint *raw, const char *prefix, const WeightMatrix *m,
                           int64_t num_experts, int64_t rows, int64_t cols) {
  char name[128];
  snprintf(name, sizeof name, "%s.blocks", prefix);
  const uint8_t *blocks = raw_tensor(raw, name, NULL);
  snprintf(name, sizeof name, "%s.scales", prefix);
  const uint8_t *scales = raw_tensor(raw, name, NULL);
  for (int64_t e = 0; e < num_experts; e++) {
    assert_int_equal(m[e].rows, rows);
    assert_int_equal(m[e].cols, cols);
    if (m[e].format == WEIGHT_MXFP4) {
      assert_int_equal(weight_matrix_bytes(&m[e]), rows * cols / 2 + rows * cols / 32);
      assert_memory_equal(m[e].data, blocks + e * rows * cols / 2, (size_t)(rows * cols / 2));
      assert_memory_equal(m[e].scales, scales + e * rows * cols / 32, (size_t)(rows * cols / 32));
      continue;
    }
    for (int64_t r = 0; r < rows; r++) {
      for (int64_t c = 0; c < cols; c++) {
        float want = raw_mxfp4(blocks, scales, e, r, c, rows, cols), got;
        if (m[e].format == WEIGHT_F32) {
          got = ((const float *)m[e].data)[r * cols + c];
        } else {
          uint32_t bits = (uint32_t)((const uint16_t *)m[e].data)[r * cols + c] << 16;
          memcpy(&got, &bits, sizeof got);
        }
        if (memcmp(&got, &want, sizeof got) != 0)
          fail_msg("%s[%lld][%lld][%lld]: %g != %g", prefix, (long long)e, (long long)r,
                   (long long)c, got, want);
      }
    }
  }
}

static void expect_layer(const RawCheckpoint *raw, const GptOssConfig *c, const LayerWeights *lw,
                         int l) {
  const int64_t d = c->hidden_size, i2 = 2 * (int64_t)c->intermediate_size, e = c->num_experts;
  char name[128];
#define NAME(suffix) (snprintf(name, sizeof name, "block.%d." suffix, l), name)
  expect_vector(raw, NAME("attn.norm.scale"), lw->attn_norm, d);
  expect_matrix(raw, NAME("attn.qkv.weight"), &lw->qkv, config_qkv_dim(c), d);
  expect_vector(raw, NAME("attn.qkv.bias"), lw->qkv_bias, config_qkv_dim(c));
  expect_vector(raw, NAME("attn.sinks"), lw->sinks, c->num_heads);
  expect_matrix(raw, NAME("attn.out.weight"), &lw->out, d, config_q_dim(c));
  expect_vector(raw, NAME("attn.out.bias"), lw->out_bias, d);
  expect_vector(raw, NAME("mlp.norm.scale"), lw->mlp_norm, d);
  expect_matrix(raw, NAME("mlp.gate.weight"), &lw->gate, e, d);
  expect_vector(raw, NAME("mlp.gate.bias"), lw->gate_bias, e);
  expect_experts(raw, NAME("mlp.mlp1_weight"), lw->mlp1, e, i2, d);
  expect_vector(raw, NAME("mlp.mlp1_bias"), lw->mlp1_bias, e * i2);
  expect_experts(raw, NAME("mlp.mlp2_weight"), lw->mlp2, e, d, c->intermediate_size);
  expect_vector(raw, NAME("mlp.mlp2_bias"), lw->mlp2_bias, e * d);
#undef NAME
}

// Every tensor of the loaded weights equals the independent decode of dir's file.
static void expect_checkpoint(const char *dir, const GptOssWeights *w) {
  GptOssConfig c;
  char path[512], err[1024] = "";
  snprintf(path, sizeof path, "%s/config.json", dir);
  assert_true(config_load_json(path, &c, err, sizeof err));
  assert_memory_equal(&w->config, &c, sizeof c);
  RawCheckpoint raw;
  raw_open(&raw, dir);
  expect_matrix(&raw, "embedding.weight", &w->embedding, c.vocab_size, c.hidden_size);
  expect_vector(&raw, "norm.scale", w->final_norm, c.hidden_size);
  expect_matrix(&raw, "unembedding.weight", &w->unembedding, c.vocab_size, c.hidden_size);
  for (int l = 0; l < c.num_layers; l++) expect_layer(&raw, &c, &w->layers[l], l);
  raw_close(&raw);
}

static void test_fixtures_in_every_format(void **state) {
  (void)state;
  const char *dirs[] = {FIXTURE_A, FIXTURE_B};
  const WeightFormat dense[] = {WEIGHT_F32, WEIGHT_BF16};
  const WeightFormat experts[] = {WEIGHT_F32, WEIGHT_BF16, WEIGHT_MXFP4};
  for (int d = 0; d < 2; d++) {
    for (int i = 0; i < 2; i++) {
      for (int j = 0; j < 3; j++) {
        WeightsOptions o = {.load_format = d ? LOAD_SAFETENSORS : LOAD_AUTO,
                            .dense_format = dense[i],
                            .expert_format = experts[j]};
        GptOssWeights w;
        load_ok(dirs[d], &o, &w);
        assert_int_equal(w.embedding.format, dense[i]);
        assert_int_equal(w.layers[0].mlp2[3].format, experts[j]);
        expect_checkpoint(dirs[d], &w);
        weights_free(&w);
        assert_null(w.layers);
      }
    }
  }
}

// A handful of values worked out from the file by hand, so a wrong layout cannot hide behind a
// decode that shares the mistake: fixture a's expert 3, row 5 of layer 2's mlp1, columns 0..3.
static void test_fixture_spot_values(void **state) {
  (void)state;
  RawCheckpoint raw;
  raw_open(&raw, FIXTURE_A);
  const uint8_t *blocks = raw_tensor(&raw, "block.2.mlp.mlp1_weight.blocks", NULL);
  const uint8_t *scales = raw_tensor(&raw, "block.2.mlp.mlp1_weight.scales", NULL);
  // [8, 128, 2, 16]: expert 3, row 5, group 0 starts at byte ((3 * 128 + 5) * 2 + 0) * 16.
  const uint8_t *b = blocks + ((3 * 128 + 5) * 2) * 16;
  int scale = scales[(3 * 128 + 5) * 2] - 127;
  GptOssWeights w;
  load_ok(FIXTURE_A, &F32_OPTIONS, &w);
  const float *row = (const float *)w.layers[2].mlp1[3].data + 5 * 64;
  for (int c = 0; c < 4; c++) {
    int code = (b[c / 2] >> (c % 2 ? 4 : 0)) & 0xF;
    double magnitude[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    double want = (code & 8 ? -1 : 1) * magnitude[code & 7] * pow(2.0, scale);
    assert_true(row[c] == (float)want);
  }
  // qkv.weight of layer 1, element [7][9]: bf16 bits at byte offset 2 * (7 * 64 + 9).
  const uint8_t *qkv = raw_tensor(&raw, "block.1.attn.qkv.weight", NULL) + 2 * (7 * 64 + 9);
  uint32_t bits = (uint32_t)(qkv[0] | qkv[1] << 8) << 16;
  float want;
  memcpy(&want, &bits, sizeof want);
  assert_true(((const float *)w.layers[1].qkv.data)[7 * 64 + 9] == want);
  weights_free(&w);
  raw_close(&raw);
}

// F32 norms and sinks are accepted (spec 5.2) and give the same floats.
static void test_f32_vectors_accepted(void **state) {
  const char *dir = *state;
  RawCheckpoint raw;
  raw_open(&raw, FIXTURE_A);
  int64_t n;
  const uint8_t *p = raw_tensor(&raw, "block.0.attn.sinks", &n);
  size_t size = raw.data_size + (size_t)n * 4;
  uint8_t *data = malloc(size);
  float *sinks = malloc((size_t)n * sizeof(float));
  memcpy(data, raw.data, raw.data_size);
  for (int64_t i = 0; i < n; i++) {
    sinks[i] = raw_bf16(p, i);
    memcpy(data + raw.data_size + 4 * i, &sinks[i], 4);
  }
  char offsets[64];
  snprintf(offsets, sizeof offsets, "[%zu, %zu]", raw.data_size, size);
  set_field(raw.header, "block.0.attn.sinks", "dtype", "\"F32\"");
  set_field(raw.header, "block.0.attn.sinks", "data_offsets", offsets);
  write_safetensors(dir, "model.safetensors", raw.header, data, size);
  char path[512];
  snprintf(path, sizeof path, "%s/config.json", dir);
  copy_file(FIXTURE_A "/config.json", path);
  GptOssWeights w;
  load_ok(dir, &F32_OPTIONS, &w);
  assert_memory_equal(w.layers[0].sinks, sinks, (size_t)n * sizeof(float));
  weights_free(&w);
  free(sinks);
  free(data);
  raw_close(&raw);
}

// The tensors spread over two files (sorted names, like model-00001-of-00002), none of them
// aligned (see write_safetensors), load the same in every dense format.
static void test_several_files(void **state) {
  const char *dir = *state;
  RawCheckpoint raw;
  raw_open(&raw, FIXTURE_A);
  json_t *first = json_object(), *second = json_object();
  const char *key;
  json_t *value;
  json_object_foreach(raw.header, key, value) {
    json_object_set(strncmp(key, "block.", 6) == 0 ? first : second, key, value);
  }
  write_safetensors(dir, "model-00001-of-00002.safetensors", first, raw.data, raw.data_size);
  write_safetensors(dir, "model-00002-of-00002.safetensors", second, raw.data, raw.data_size);
  char path[512];
  snprintf(path, sizeof path, "%s/config.json", dir);
  copy_file(FIXTURE_A "/config.json", path);
  for (int i = 0; i < 2; i++) {
    GptOssWeights w;
    load_ok(dir, i ? &SMALL_OPTIONS : &F32_OPTIONS, &w);
    expect_checkpoint(FIXTURE_A, &w);
    weights_free(&w);
  }
  json_decref(first);
  json_decref(second);
  raw_close(&raw);
}

// A Hugging Face download keeps OpenAI's files in original/ next to its own config.json.
static void test_original_subfolder(void **state) {
  const char *dir = *state;
  char path[512];
  snprintf(path, sizeof path, "%s/config.json", dir);
  FILE *f = fopen(path, "w");
  fputs("{\"num_local_experts\": 8, \"model_type\": \"gpt_oss\"}", f);
  fclose(f);
  snprintf(path, sizeof path, "%s/original", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof path, "%s/original/config.json", dir);
  copy_file(FIXTURE_A "/config.json", path);
  snprintf(path, sizeof path, "%s/original/model.safetensors", dir);
  copy_file(FIXTURE_A "/model.safetensors", path);
  GptOssWeights w;
  load_ok(dir, &F32_OPTIONS, &w);
  expect_checkpoint(FIXTURE_A, &w);
  weights_free(&w);
}

// ---------------------------------------------------------------------------------------------
// Dummy weights

// Every byte of every tensor of a and b is the same.
static void expect_same_weights(const GptOssWeights *a, const GptOssWeights *b, bool same) {
  const GptOssConfig *c = &a->config;
  bool equal =
      memcmp(a->embedding.data, b->embedding.data, weight_matrix_bytes(&a->embedding)) == 0;
  for (int l = 0; l < c->num_layers; l++) {
    const LayerWeights *x = &a->layers[l], *y = &b->layers[l];
    equal = equal && memcmp(x->qkv.data, y->qkv.data, weight_matrix_bytes(&x->qkv)) == 0 &&
            memcmp(x->sinks, y->sinks, (size_t)c->num_heads * 4) == 0 &&
            memcmp(x->mlp_norm, y->mlp_norm, (size_t)c->hidden_size * 4) == 0;
    for (int e = 0; e < c->num_experts; e++)
      equal =
          equal && memcmp(x->mlp2[e].data, y->mlp2[e].data, weight_matrix_bytes(&x->mlp2[e])) == 0;
  }
  assert_int_equal(equal, same);
}

static void test_dummy_deterministic_per_seed(void **state) {
  (void)state;
  WeightsOptions o = F32_OPTIONS;
  o.load_format = LOAD_DUMMY;
  o.seed = 1;
  GptOssWeights a, b, other;
  load_ok(FIXTURE_A, &o, &a);  // the folder's config.json, no *.safetensors read
  load_ok(FIXTURE_A, &o, &b);
  o.seed = 2;
  load_ok(FIXTURE_A, &o, &other);
  expect_same_weights(&a, &b, true);
  expect_same_weights(&a, &other, false);
  weights_free(&a);
  weights_free(&b);
  weights_free(&other);
}

// A seed gives one model: the f32 weights are exactly the bf16 and MXFP4 ones decoded.
static void test_dummy_same_model_in_every_format(void **state) {
  (void)state;
  WeightsOptions big = F32_OPTIONS, small = SMALL_OPTIONS;
  big.load_format = small.load_format = LOAD_DUMMY;
  big.seed = small.seed = 7;
  GptOssWeights f, s;
  load_ok(FIXTURE_B, &big, &f);
  load_ok(FIXTURE_B, &small, &s);
  const GptOssConfig *c = &f.config;
  const int64_t n = (int64_t)c->vocab_size * c->hidden_size;
  for (int64_t i = 0; i < n; i++)
    assert_true(((const float *)f.unembedding.data)[i] == raw_bf16(s.unembedding.data, i));
  float *row = malloc((size_t)c->hidden_size * sizeof(float));
  for (int l = 0; l < c->num_layers; l++) {
    for (int e = 0; e < c->num_experts; e++) {
      const WeightMatrix *x = &f.layers[l].mlp1[e], *y = &s.layers[l].mlp1[e];
      for (int64_t r = 0; r < x->rows; r++) {
        mxfp4_decode_row((const uint8_t *)y->data + r * y->cols / 2,
                         (const uint8_t *)y->scales + r * y->cols / 32, y->cols, row);
        assert_memory_equal(row, (const float *)x->data + r * x->cols, (size_t)x->cols * 4);
      }
    }
    assert_memory_equal(f.layers[l].mlp1_bias, s.layers[l].mlp1_bias,
                        (size_t)c->num_experts * 2 * c->intermediate_size * 4);
  }
  free(row);
  weights_free(&f);
  weights_free(&s);
}

static double rms(const float *v, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; i++) sum += (double)v[i] * v[i];
  return sqrt(sum / (double)n);
}

// lo <= v[i] <= hi for all i, up to bf16 rounding (half an ulp: at most 2^-8 relative).
static void expect_between(const float *v, int64_t n, double lo, double hi) {
  lo -= fabs(lo) * 0x1p-8;
  hi += fabs(hi) * 0x1p-8;
  for (int64_t i = 0; i < n; i++)
    if (!(v[i] >= lo && v[i] <= hi)) fail_msg("value %g outside [%g, %g]", v[i], lo, hi);
}

// Fraction of tokens (random unit-RMS vectors) that route to each expert of layer 0: every
// expert is chosen, none dominates.
static void expect_router_spread(const GptOssWeights *w) {
  const GptOssConfig *c = &w->config;
  const int num_tokens = 1024, d = c->hidden_size;
  int counts[64] = {0};
  float *x = malloc((size_t)d * sizeof(float));
  uint64_t state = 12345;
  for (int t = 0; t < num_tokens; t++) {
    for (int i = 0; i < d; i++) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      x[i] = (float)((double)(state >> 11) * 0x1.0p-53 * 2 - 1) * 1.7320508f;  // RMS 1
    }
    float logits[64];
    for (int e = 0; e < c->num_experts; e++) {
      const float *g = (const float *)w->layers[0].gate.data + (size_t)e * d;
      double s = w->layers[0].gate_bias[e];
      for (int i = 0; i < d; i++) s += (double)g[i] * x[i];
      logits[e] = (float)s;
    }
    for (int k = 0; k < c->experts_per_token; k++) {
      int best = 0;
      for (int e = 1; e < c->num_experts; e++)
        if (logits[e] > logits[best]) best = e;
      counts[best]++;
      logits[best] = -INFINITY;
    }
  }
  const double fair = (double)num_tokens * c->experts_per_token / c->num_experts;
  for (int e = 0; e < c->num_experts; e++)
    if (counts[e] < fair / 2 || counts[e] > fair * 1.5)
      fail_msg("expert %d chosen %d times, fair share %.0f", e, counts[e], fair);
  free(x);
}

// gpt-oss-tiny from its name alone (LOAD_AUTO, no files): shapes, bytes as planned, the scales
// weights_dummy.h documents, finite values, routing spread over the experts.
static void test_dummy_tiny_preset(void **state) {
  (void)state;
  WeightsOptions o = {.load_format = LOAD_AUTO,
                      .dense_format = WEIGHT_F32,
                      .expert_format = WEIGHT_MXFP4,
                      .seed = 3};
  GptOssWeights w;
  load_ok("gpt-oss-tiny", &o, &w);
  const GptOssConfig *c = &w.config;
  GptOssConfig tiny;
  assert_true(config_preset("gpt-oss-tiny", &tiny));
  assert_memory_equal(c, &tiny, sizeof tiny);
  const int64_t d = c->hidden_size, i2 = 2 * (int64_t)c->intermediate_size, e = c->num_experts;
  // Shapes and bytes: matrices by weight_matrix_bytes, vectors as float32.
  int64_t bytes = (int64_t)weight_matrix_bytes(&w.embedding) +
                  (int64_t)weight_matrix_bytes(&w.unembedding) + d * 4;
  assert_int_equal(w.embedding.rows, 201088);
  assert_int_equal(w.unembedding.cols, 512);
  for (int l = 0; l < c->num_layers; l++) {
    const LayerWeights *lw = &w.layers[l];
    assert_int_equal(lw->qkv.rows, 16 * 64 + 2 * 2 * 64);
    assert_int_equal(lw->qkv.cols, 512);
    assert_int_equal(lw->out.rows, 512);
    assert_int_equal(lw->out.cols, 1024);
    assert_int_equal(lw->gate.rows, 8);
    bytes += (int64_t)(weight_matrix_bytes(&lw->qkv) + weight_matrix_bytes(&lw->out) +
                       weight_matrix_bytes(&lw->gate));
    for (int x = 0; x < e; x++) {
      assert_int_equal(lw->mlp1[x].rows, 1024);
      assert_int_equal(lw->mlp1[x].cols, 512);
      assert_int_equal(lw->mlp2[x].rows, 512);
      assert_int_equal(lw->mlp2[x].cols, 512);
      bytes += (int64_t)(weight_matrix_bytes(&lw->mlp1[x]) + weight_matrix_bytes(&lw->mlp2[x]));
    }
    bytes += 4 * (2 * d + config_qkv_dim(c) + c->num_heads + d + e + e * i2 + e * d);
    // Documented scales (uniform, so bounded; RMS within a few percent at these sizes).
    expect_between(lw->attn_norm, d, 0.9, 1.1);
    expect_between(lw->mlp_norm, d, 0.9, 1.1);
    expect_between(lw->sinks, c->num_heads, -0.5, 0.5);
    expect_between(lw->qkv_bias, config_qkv_dim(c), -0.05, 0.05);
    expect_between(lw->mlp1_bias, e * i2, -0.05, 0.05);
    expect_between(lw->mlp2_bias, e * d, -0.05, 0.05);
    const int64_t qkv_n = lw->qkv.rows * lw->qkv.cols, out_n = lw->out.rows * lw->out.cols;
    assert_true(fabs(rms(lw->qkv.data, qkv_n) * sqrt(512.0) - 1) < 0.02);
    assert_true(fabs(rms(lw->out.data, out_n) * sqrt(1024.0 * 2 * 4) - 1) < 0.02);
    float *row = malloc(512 * sizeof(float));
    double sum = 0;
    for (int64_t r = 0; r < 1024; r++) {
      mxfp4_decode_row((const uint8_t *)lw->mlp1[0].data + r * 256,
                       (const uint8_t *)lw->mlp1[0].scales + r * 16, 512, row);
      sum += rms(row, 512) * rms(row, 512);
    }
    double mlp1_rms = sqrt(sum / 1024) * sqrt(512.0);  // in units of 1 / sqrt(hidden)
    assert_true(mlp1_rms > 0.7 && mlp1_rms < 1.5);
    free(row);
  }
  WeightsPlan plan;
  weights_plan(c, &o, &plan);
  assert_int_equal(bytes, plan.loaded_bytes);
  const int64_t emb_n = w.embedding.rows * w.embedding.cols;
  assert_true(fabs(rms(w.embedding.data, emb_n) - 1) < 0.01);
  assert_true(fabs(rms(w.unembedding.data, emb_n) * sqrt(512.0) - 1) < 0.01);
  for (int64_t i = 0; i < emb_n; i++) assert_true(isfinite(((const float *)w.unembedding.data)[i]));
  expect_router_spread(&w);
  weights_free(&w);
}

// ---------------------------------------------------------------------------------------------
// 120b and 20b: shapes and bytes from the plan (spec section 5.4), nothing allocated

static void expect_shape(const GptOssConfig *c, CheckpointRole role, int layer, const char *name,
                         int num_dims, const int64_t *shape) {
  CheckpointTensor t;
  checkpoint_tensor_of(c, role, layer, &t);
  assert_string_equal(t.name, name);
  assert_int_equal(t.num_dims, num_dims);
  for (int i = 0; i < num_dims; i++) assert_int_equal(t.shape[i], shape[i]);
}

// Norms, biases and sinks: what the loader keeps as float32.
static int64_t vector_elements(const GptOssConfig *c) {
  int64_t d = c->hidden_size, e = c->num_experts, i2 = 2 * (int64_t)c->intermediate_size;
  return d + c->num_layers * (2 * d + config_qkv_dim(c) + c->num_heads + d + e + e * i2 + e * d);
}

static void expect_plan(const char *preset, int num_layers, int64_t params, int64_t bf16,
                        int64_t fp4, int64_t scales, int64_t total) {
  GptOssConfig c;
  assert_true(config_preset(preset, &c));
  WeightsPlan p;
  weights_plan(&c, &SMALL_OPTIONS, &p);
  assert_int_equal(p.num_tensors, 3 + 15 * num_layers);
  assert_int_equal(p.num_params, params);
  assert_int_equal(p.bf16_bytes, bf16);
  assert_int_equal(p.fp4_block_bytes, fp4);
  assert_int_equal(p.scale_bytes, scales);
  assert_int_equal(p.checkpoint_bytes, total);
  // Kept as bf16 + MXFP4: the checkpoint's bytes, vectors widened to float32.
  assert_int_equal(p.loaded_bytes, total + 2 * vector_elements(&c));
  weights_plan(&c, &F32_OPTIONS, &p);
  assert_int_equal(p.checkpoint_bytes, total);
  assert_int_equal(p.loaded_bytes, 4 * params);  // everything float32, no scales
  WeightsOptions bf16_experts = {.dense_format = WEIGHT_BF16, .expert_format = WEIGHT_BF16};
  weights_plan(&c, &bf16_experts, &p);
  assert_int_equal(p.loaded_bytes, 2 * params + 2 * vector_elements(&c));
  // Every tensor has a distinct name; the table's sum is the plan's.
  int64_t sum = 0;
  for (int i = 0; i < p.num_tensors; i++) {
    CheckpointTensor t, u;
    checkpoint_tensor(&c, i, &t);
    sum += t.num_bytes;
    if (i > 0) {
      checkpoint_tensor(&c, i - 1, &u);
      assert_string_not_equal(t.name, u.name);
    }
  }
  assert_int_equal(sum, total);
}

static void test_plan_120b(void **state) {
  (void)state;
  expect_plan("openai/gpt-oss-120b", 36, 116829156672, 4334742144, 57330892800, 3583180800,
              65248815744);
  GptOssConfig c;
  assert_true(config_preset("openai/gpt-oss-120b", &c));
  expect_shape(&c, CKPT_EMBEDDING, -1, "embedding.weight", 2, (int64_t[]){201088, 2880});
  expect_shape(&c, CKPT_UNEMBEDDING, -1, "unembedding.weight", 2, (int64_t[]){201088, 2880});
  expect_shape(&c, CKPT_QKV_WEIGHT, 0, "block.0.attn.qkv.weight", 2, (int64_t[]){5120, 2880});
  expect_shape(&c, CKPT_SINKS, 7, "block.7.attn.sinks", 1, (int64_t[]){64});
  expect_shape(&c, CKPT_OUT_WEIGHT, 1, "block.1.attn.out.weight", 2, (int64_t[]){2880, 4096});
  expect_shape(&c, CKPT_GATE_WEIGHT, 2, "block.2.mlp.gate.weight", 2, (int64_t[]){128, 2880});
  expect_shape(&c, CKPT_MLP1_BLOCKS, 35, "block.35.mlp.mlp1_weight.blocks", 4,
               (int64_t[]){128, 5760, 90, 16});
  expect_shape(&c, CKPT_MLP1_SCALES, 35, "block.35.mlp.mlp1_weight.scales", 3,
               (int64_t[]){128, 5760, 90});
  expect_shape(&c, CKPT_MLP1_BIAS, 3, "block.3.mlp.mlp1_bias", 2, (int64_t[]){128, 5760});
  expect_shape(&c, CKPT_MLP2_BLOCKS, 4, "block.4.mlp.mlp2_weight.blocks", 4,
               (int64_t[]){128, 2880, 90, 16});
  expect_shape(&c, CKPT_MLP2_SCALES, 4, "block.4.mlp.mlp2_weight.scales", 3,
               (int64_t[]){128, 2880, 90});
}

static void test_plan_20b(void **state) {
  (void)state;
  expect_plan("openai/gpt-oss-20b", 24, 20914757184, 3608919168, 9555148800, 597196800,
              13761264768);
  GptOssConfig c;
  assert_true(config_preset("openai/gpt-oss-20b", &c));
  expect_shape(&c, CKPT_MLP1_BLOCKS, 23, "block.23.mlp.mlp1_weight.blocks", 4,
               (int64_t[]){32, 5760, 90, 16});
  expect_shape(&c, CKPT_MLP2_SCALES, 0, "block.0.mlp.mlp2_weight.scales", 3,
               (int64_t[]){32, 2880, 90});
  expect_shape(&c, CKPT_GATE_BIAS, 5, "block.5.mlp.gate.bias", 1, (int64_t[]){32});
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixtures_in_every_format),
      cmocka_unit_test(test_fixture_spot_values),
      cmocka_unit_test_setup_teardown(test_f32_vectors_accepted, temp_dir_setup, temp_dir_teardown),
      cmocka_unit_test_setup_teardown(test_several_files, temp_dir_setup, temp_dir_teardown),
      cmocka_unit_test_setup_teardown(test_original_subfolder, temp_dir_setup, temp_dir_teardown),
      cmocka_unit_test(test_dummy_deterministic_per_seed),
      cmocka_unit_test(test_dummy_same_model_in_every_format),
      cmocka_unit_test(test_dummy_tiny_preset),
      cmocka_unit_test(test_plan_120b),
      cmocka_unit_test(test_plan_20b),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
