// test_rope.c: the YaRN table (spec gptoss-model.md section 3) against the inverse frequencies
// and the concentration the spec prints for the real models, the plain-RoPE case, and a
// fixture's small head_dim against the formula evaluated here in double.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "model/rope.h"

// inv_freq for the real models, i = 0..31 (float64, as printed in the spec).
static const double REAL_INV_FREQ[32] = {
    1.000000000e+00, 6.890443059e-01, 4.747820555e-01, 3.271458719e-01, 2.254180002e-01,
    1.553229895e-01, 1.070244215e-01, 7.374456821e-02, 5.081327482e-02, 3.170569618e-02,
    1.933500113e-02, 1.159204926e-02, 6.794959490e-03, 3.860359317e-03, 2.093792379e-03,
    1.052602101e-03, 4.564839192e-04, 1.293187012e-04, 3.830881237e-05, 2.639646903e-05,
    1.818833668e-05, 1.253256982e-05, 8.635495875e-06, 5.950239261e-06, 4.099978482e-06,
    2.825066827e-06, 1.946596211e-06, 1.341291035e-06, 9.242089502e-07, 6.368209146e-07,
    4.387978251e-07, 3.023511428e-07};

static void assert_relative(double got, double want, double tolerance) {
  if (fabs(got - want) > tolerance * fabs(want)) fail_msg("%.10g != %.10g", got, want);
}

static void test_real_models_table(void **state) {
  (void)state;
  const char *names[] = {"openai/gpt-oss-120b", "openai/gpt-oss-20b", "gpt-oss-tiny"};
  for (int m = 0; m < 3; m++) {
    GptOssConfig c;
    assert_true(config_preset(names[m], &c));
    RopeTable r;
    rope_table_init(&r, &c);
    assert_int_equal(r.half_dim, 32);
    // The printed table has 10 significant digits; float storage adds 6e-8.
    for (int i = 0; i < 32; i++) assert_relative(r.inv_freq[i], REAL_INV_FREQ[i], 2e-7);
    assert_relative(r.concentration, 1.3465735902799727, 1e-7);
    assert_relative((double)r.concentration * r.concentration, 1.8132604340394958, 2e-7);
  }
}

static void test_plain_rope_without_scaling(void **state) {
  (void)state;
  GptOssConfig c;
  assert_true(config_preset("gpt-oss-tiny", &c));
  c.rope_scaling_factor = 1.0f;
  RopeTable r;
  rope_table_init(&r, &c);
  assert_true(r.concentration == 1.0f);
  for (int i = 0; i < 32; i++) assert_relative(r.inv_freq[i], pow(150000.0, -i / 32.0), 1e-7);
}

// Fixture a's head_dim 16: low = 8 ln(4096 / (32 * 2 pi)) / ln 150000, high likewise with 1.
static void test_small_head_dim(void **state) {
  (void)state;
  GptOssConfig c;
  assert_true(config_preset("gpt-oss-tiny", &c));
  c.head_dim = 16;
  RopeTable r;
  rope_table_init(&r, &c);
  assert_int_equal(r.half_dim, 8);
  double low = 8 * log(4096 / (32 * 2 * M_PI)) / log(150000.0);
  double high = 8 * log(4096 / (2 * M_PI)) / log(150000.0);
  for (int i = 0; i < 8; i++) {
    double plain = pow(150000.0, -2.0 * i / 16), ramp = fmin(fmax((i - low) / (high - low), 0), 1);
    assert_relative(r.inv_freq[i], plain * (1 - ramp) + plain / 32 * ramp, 1e-7);
  }
  assert_true(r.inv_freq[0] == 1.0f);  // i <= low keeps the original frequency
  assert_relative(r.inv_freq[7], pow(150000.0, -14.0 / 16) / 32, 1e-7);  // i >= high: / s
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_real_models_table),
      cmocka_unit_test(test_plain_rope_without_scaling),
      cmocka_unit_test(test_small_head_dim),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
