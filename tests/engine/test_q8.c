// test_q8.c: the WEIGHT_Q8 format (model/q8.h): byte layout worked out by hand, padding, the
// quantization bound (each weight within half a step of max |row| / 127), zero rows, decoding;
// and q8 through weights_load: which matrices become q8 (qkv, out, unembedding) and which stay
// bf16 (embedding, router), the plan's byte count, every weight within half a step of the
// checkpoint's; the --weight-format names.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint_fixture.h"
#include "common/check.h"
#include "model/q8.h"
#include "model/weights.h"

// A 17 x 5 matrix: two tiles of 16 rows (the second holds one row) by two groups of 4 columns
// (the second holds one column). W[r][c] = (r + 1) * (c - 2), so each row's largest |w| is
// 2 (r + 1) at c = 0 and c = 4 (q = -127 and 127, scale (r + 1) * 2 / 127).
static void test_layout_by_hand(void **state) {
  (void)state;
  enum { ROWS = 17, COLS = 5 };
  assert_int_equal(q8_tiles(ROWS), 2);
  assert_int_equal(q8_groups(COLS), 2);
  assert_int_equal(q8_data_bytes(ROWS, COLS), 32 * 8);
  assert_int_equal(q8_num_scales(ROWS), 32);
  uint8_t data[32 * 8];
  float scales[32], row[COLS];
  q8_clear(ROWS, COLS, data, scales);
  for (int r = 0; r < ROWS; r++) {
    for (int c = 0; c < COLS; c++) row[c] = (float)((r + 1) * (c - 2));
    q8_quantize_row(row, r, COLS, data, scales);
  }
  // Tile 0, group 0 is bytes 0..63: row r's columns 0..3 at 4r .. 4r + 3.
  assert_int_equal(data[0], 128 - 127);         // W[0][0] = -2: q = -127
  assert_int_equal(data[2], 128);               // W[0][2] = 0
  assert_int_equal(data[4 * 3 + 1], 128 - 64);  // W[3][1] = -4 of max 8: q = -63.5 -> -64
  // Tile 0, group 1 is bytes 64..127: column 4 of row r at 64 + 4r, then 3 padding columns.
  assert_int_equal(data[64 + 4 * 5], 128 + 127);  // W[5][4] = 12 = max: q = 127
  assert_int_equal(data[64 + 4 * 5 + 1], 128);    // padding column
  assert_int_equal(data[4 * 15 + 3], 128 + 64);   // W[15][3] = 16 of max 32: q = 63.5 -> 64
  // Tile 1 starts at byte 128: row 16 is its row 0; rows 17 .. 31 are padding.
  assert_int_equal(data[128], 128 - 127);  // W[16][0] = -34 = -max
  for (int r = 1; r < 16; r++) assert_int_equal(data[128 + 4 * r], 128);
  assert_int_equal(q8_index(16, 3, COLS), 128 + 3);
  assert_int_equal(q8_index(15, 3, COLS), 63);
  assert_int_equal(q8_index(5, 4, COLS), 64 + 20);
  assert_true(scales[16] == 34.0f / 127.0f && scales[17] == 0.0f && scales[31] == 0.0f);
}

static void test_quantization_bound_and_decode(void **state) {
  (void)state;
  enum { ROWS = 40, COLS = 70 };
  uint8_t *data = xmalloc(q8_data_bytes(ROWS, COLS));
  float scales[48], w[ROWS][COLS], back[COLS];
  q8_clear(ROWS, COLS, data, scales);
  uint64_t s = 99;
  for (int r = 0; r < ROWS; r++) {
    for (int c = 0; c < COLS; c++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      w[r][c] = r == 7 ? 0.0f : (float)((double)(s >> 11) * 0x1p-52 - 1.0) * (float)(r + 1);
    }
    q8_quantize_row(w[r], r, COLS, data, scales);
  }
  for (int r = 0; r < ROWS; r++) {
    float amax = 0;
    for (int c = 0; c < COLS; c++) amax = fmaxf(amax, fabsf(w[r][c]));
    assert_true(scales[r] == amax / 127.0f);
    q8_decode_row(data, scales, r, COLS, back);
    for (int c = 0; c < COLS; c++) {
      const int q = (int)data[q8_index(r, c, COLS)] - 128;
      assert_true(q >= -127 && q <= 127);
      assert_true(back[c] == (float)q * scales[r]);
      if (!(fabs((double)back[c] - w[r][c]) <= scales[r] * 0.5 * (1 + 1e-6)))
        fail_msg("W[%d][%d] = %g decodes to %g (scale %g)", r, c, w[r][c], back[c], scales[r]);
    }
  }
  assert_true(scales[7] == 0.0f);  // the zero row: scale 0, every q 0
  for (int c = 0; c < COLS; c++) assert_int_equal(data[q8_index(7, c, COLS)], 128);
  free(data);
}

// Loading the fixture with q8 dense weights: the unembedding is q8, within half a step of the
// f32 load; the other dense matrices bf16.
static void test_load_fixture_as_q8(void **state) {
  (void)state;
  char err[1024];
  WeightsOptions f32 = {.load_format = LOAD_SAFETENSORS}, q8 = f32;
  assert_true(weights_formats_from_name("f32", FIXTURE_A, &f32));
  assert_true(weights_formats_from_name("q8", FIXTURE_A, &q8));
  assert_int_equal(q8.dense_format, WEIGHT_Q8);
  assert_int_equal(q8.expert_format, WEIGHT_MXFP4);
  GptOssWeights a, b;
  if (!weights_load(FIXTURE_A, &f32, &a, err, sizeof err)) fail_msg("%s", err);
  if (!weights_load(FIXTURE_A, &q8, &b, err, sizeof err)) fail_msg("%s", err);
  assert_int_equal(b.embedding.format, WEIGHT_BF16);
  for (int l = 0; l < b.config.num_layers; l++) {
    assert_int_equal(b.layers[l].qkv.format, WEIGHT_BF16);
    assert_int_equal(b.layers[l].out.format, WEIGHT_BF16);
    assert_int_equal(b.layers[l].gate.format, WEIGHT_BF16);
    assert_int_equal(b.layers[l].mlp1[0].format, WEIGHT_MXFP4);
  }
  const WeightMatrix *m = &a.unembedding, *q = &b.unembedding;
  assert_int_equal(q->format, WEIGHT_Q8);
  assert_int_equal(weight_matrix_bytes(q),
                   q8_data_bytes(q->rows, q->cols) + q8_num_scales(q->rows) * 4);
  float *row = xmalloc((size_t)q->cols * sizeof(float));  // [cols]
  const float *scales = q->scales;                        // [rows, padded]
  for (int64_t r = 0; r < q->rows; r++) {
    q8_decode_row(q->data, scales, r, q->cols, row);
    const float *want = (const float *)m->data + r * m->cols;  // [cols]
    for (int64_t c = 0; c < q->cols; c++)
      assert_true(fabsf(row[c] - want[c]) <= scales[r] * 0.5f * 1.0001f);
  }
  free(row);
  // The plan counts q8 bytes for the unembedding: the difference from bf16 dense is its alone.
  WeightsPlan plan_q8, plan_bf16;
  WeightsOptions bf16 = q8;
  bf16.dense_format = WEIGHT_BF16;
  weights_plan(&b.config, &q8, &plan_q8);
  weights_plan(&b.config, &bf16, &plan_bf16);
  const int64_t v = b.config.vocab_size, h = b.config.hidden_size;
  assert_int_equal(plan_bf16.loaded_bytes - plan_q8.loaded_bytes,
                   v * h * 2 - (int64_t)(q8_data_bytes(v, h) + q8_num_scales(v) * 4));
  weights_free(&a);
  weights_free(&b);
}

static void test_weight_format_names(void **state) {
  (void)state;
  WeightsOptions o = {.load_format = LOAD_AUTO};
  assert_true(weights_formats_from_name("auto", FIXTURE_A, &o));  // a checkpoint folder: exact
  assert_int_equal(o.dense_format, WEIGHT_F32);
  assert_int_equal(o.expert_format, WEIGHT_F32);
  assert_true(weights_formats_from_name("auto", "gpt-oss-tiny", &o));  // dummy weights: fast
  assert_int_equal(o.dense_format, WEIGHT_Q8);
  assert_int_equal(o.expert_format, WEIGHT_MXFP4);
  o.load_format = LOAD_DUMMY;
  assert_true(weights_formats_from_name("auto", FIXTURE_A, &o));  // dummy from a folder's config
  assert_int_equal(o.dense_format, WEIGHT_Q8);
  assert_true(weights_formats_from_name("bf16", "gpt-oss-tiny", &o));
  assert_int_equal(o.dense_format, WEIGHT_BF16);
  assert_int_equal(o.expert_format, WEIGHT_MXFP4);
  assert_false(weights_formats_from_name("f16", "gpt-oss-tiny", &o));
  assert_false(weights_formats_from_name("mxfp4", "gpt-oss-tiny", &o));
  WeightFormat f;
  assert_true(weight_format_from_name("q8", &f) && f == WEIGHT_Q8);
  assert_string_equal(weight_format_name(WEIGHT_MXFP4), "mxfp4");
  assert_false(weight_format_from_name("int8", &f));
  // Q8 experts are refused with a message.
  char err[256];
  GptOssWeights w;
  WeightsOptions bad = {
      .load_format = LOAD_DUMMY, .dense_format = WEIGHT_F32, .expert_format = WEIGHT_Q8};
  assert_false(weights_load("gpt-oss-tiny", &bad, &w, err, sizeof err));
  assert_non_null(strstr(err, "not q8"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout_by_hand),
      cmocka_unit_test(test_quantization_bound_and_decode),
      cmocka_unit_test(test_load_fixture_as_q8),
      cmocka_unit_test(test_weight_format_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
