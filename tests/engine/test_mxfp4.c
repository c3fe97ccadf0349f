// test_mxfp4.c: MXFP4 decoding (spec gptoss-model.md section 5.3) against values worked out by
// hand, and against an independent decode of every byte from the e2m1 bit fields (sign,
// exponent with bias 1, mantissa) in double precision.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "model/mxfp4.h"

// e2m1 from its bit fields: bit 3 sign, bits 2-1 exponent (bias 1, 0 = subnormal), bit 0 mantissa.
static double e2m1_from_bits(unsigned code) {
  unsigned e = (code >> 1) & 3, m = code & 1;
  double magnitude = e == 0 ? 0.5 * m : (1.0 + 0.5 * m) * ldexp(1.0, (int)e - 1);
  return (code & 8) ? -magnitude : magnitude;
}

static void test_table_matches_bit_fields(void **state) {
  (void)state;
  const float spec[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (unsigned k = 0; k < 16; k++) {
    assert_true(MXFP4_E2M1[k] == spec[k]);
    assert_true(MXFP4_E2M1[k] == (float)e2m1_from_bits(k));
    assert_int_equal(signbit(MXFP4_E2M1[k]) != 0, k >= 8);
  }
}

// One handcrafted block: the even element is the low nibble, the odd one the high nibble.
static void test_handcrafted_block(void **state) {
  (void)state;
  uint8_t block[16] = {0};
  block[0] = 0x2F;      // element 0: code 0xF = -6.0, element 1: code 0x2 = +1.0
  block[1] = 0x10;      // element 2: +0.0, element 3: code 0x1 = +0.5
  block[15] = 0x9B;     // element 30: code 0xB = -1.5, element 31: code 0x9 = -0.5
  uint8_t scale = 128;  // x 2
  float out[32];
  mxfp4_decode_row(block, &scale, 32, out);
  assert_true(out[0] == -12.0f);
  assert_true(out[1] == 2.0f);
  assert_true(out[2] == 0.0f);
  assert_true(out[3] == 1.0f);
  assert_true(out[30] == -3.0f);
  assert_true(out[31] == -1.0f);
  for (int i = 4; i < 30; i++) assert_true(out[i] == 0.0f);
  scale = 125;  // x 1/4
  mxfp4_decode_row(block, &scale, 32, out);
  assert_true(out[0] == -1.5f);
  assert_true(out[1] == 0.25f);
}

// Each group of 32 uses its own scale, and the row is the groups in order.
static void test_groups_use_their_own_scale(void **state) {
  (void)state;
  uint8_t blocks[3 * 16];
  memset(blocks, 0x22, sizeof blocks);  // every element +1.0
  const uint8_t scales[3] = {127, 130, 120};
  float out[96];
  mxfp4_decode_row(blocks, scales, 96, out);
  for (int c = 0; c < 96; c++) assert_true(out[c] == ldexpf(1.0f, scales[c / 32] - 127));
}

// Every byte at every scale byte: exact against the double-precision decode (scales 0 and 255
// included: 2^-127 is subnormal, 2^128 overflows unless the code is 0 or 0.5).
static void test_every_byte_and_scale_exact(void **state) {
  (void)state;
  uint8_t block[16];
  float out[32];
  for (int scale = 0; scale < 256; scale++) {
    for (int b0 = 0; b0 < 256; b0 += 16) {
      for (int j = 0; j < 16; j++) block[j] = (uint8_t)(b0 + j);
      uint8_t s = (uint8_t)scale;
      mxfp4_decode_row(block, &s, 32, out);
      for (int j = 0; j < 16; j++) {
        float lo = (float)ldexp(e2m1_from_bits(block[j] & 0xF), scale - 127);
        float hi = (float)ldexp(e2m1_from_bits(block[j] >> 4), scale - 127);
        assert_memory_equal(&out[2 * j], &lo, sizeof lo);
        assert_memory_equal(&out[2 * j + 1], &hi, sizeof hi);
        assert_true(mxfp4_value(block[j] & 0xF, s) == lo);
      }
    }
  }
  // Scale 255 is not special: 0.5 * 2^128 is finite, 1.0 * 2^128 is infinite, 0 stays 0.
  assert_true(mxfp4_value(1, 255) == ldexpf(1.0f, 127));
  assert_true(isinf(mxfp4_value(2, 255)));
  assert_true(mxfp4_value(0, 255) == 0.0f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_matches_bit_fields),
      cmocka_unit_test(test_handcrafted_block),
      cmocka_unit_test(test_groups_use_their_own_scale),
      cmocka_unit_test(test_every_byte_and_scale_exact),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
