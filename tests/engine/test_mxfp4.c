// test_mxfp4.c: MXFP4 decoding (spec gptoss-model.md section 5.3) against values worked out by
// hand, and against an independent decode of every byte from the e2m1 bit fields (sign,
// exponent with bias 1, mantissa) in double precision. Also, on the host, the CUDA backend's
// stored layout of expert codes (backend/cuda/cuda_mxfp4_layout.h): storing a word moves every
// bit somewhere of its own, and the pairs read back from a stored word are, bit for bit, the
// bf16 of each code's value (that same decode) times 2^-126, for every code at every position
// beside random neighbours; the device kernels then only multiply by 2^126 x the scale.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "backend/cuda/cuda_mxfp4_layout.h"
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

// The bf16 bits of code's value times 2^-126 (exact: a float, subnormal for the smallest, whose
// low 16 bits are zero).
static uint16_t scaled_bf16_bits(unsigned code) {
  const float f = (float)ldexp(e2m1_from_bits(code), -126);
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  assert_int_equal(bits & 0xffffu, 0);
  return (uint16_t)(bits >> 16);
}

static void test_storing_permutes_the_bits(void **state) {
  (void)state;
  uint32_t seen = 0;
  for (int b = 0; b < 32; b++) {
    const uint32_t stored = mxfp4_to_stored(1u << b);
    assert_int_equal(__builtin_popcount(stored), 1);
    assert_int_equal(stored & seen, 0);
    seen |= stored;
  }
  assert_int_equal(seen, 0xffffffffu);
}

// Every pair of a stored word against the independent decode of its two codes.
static void check_word(uint32_t word) {
  uint32_t pair[4];
  mxfp4_stored_pairs(mxfp4_to_stored(word), pair);
  for (int i = 0; i < 8; i++) {
    const unsigned code = word >> (4 * i) & 15u;
    const uint16_t got = (uint16_t)(pair[i / 2] >> (16 * (i % 2)));
    if (got != scaled_bf16_bits(code))
      fail_msg("word %08x, code %d (%x): got bf16 %04x, want %04x", word, i, code, got,
               scaled_bf16_bits(code));
  }
}

static void test_every_code_at_every_position(void **state) {
  (void)state;
  uint64_t z = 0x243f6a8885a308d3ull;
  for (int trial = 0; trial < 64; trial++) {
    z = z * 6364136223846793005ull + 1442695040888963407ull;
    const uint32_t neighbours = (uint32_t)(z >> 32);
    for (int i = 0; i < 8; i++)
      for (unsigned code = 0; code < 16; code++)
        check_word((neighbours & ~(15u << (4 * i))) | code << (4 * i));
  }
}

static void test_random_words(void **state) {
  (void)state;
  uint64_t z = 0x13198a2e03707344ull;
  for (int trial = 0; trial < 100000; trial++) {
    z = z * 6364136223846793005ull + 1442695040888963407ull;
    check_word((uint32_t)(z >> 32));
  }
  check_word(0), check_word(0xffffffffu), check_word(0x88888888u), check_word(0x77777777u);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_matches_bit_fields),
      cmocka_unit_test(test_handcrafted_block),
      cmocka_unit_test(test_groups_use_their_own_scale),
      cmocka_unit_test(test_every_byte_and_scale_exact),
      cmocka_unit_test(test_storing_permutes_the_bits),
      cmocka_unit_test(test_every_code_at_every_position),
      cmocka_unit_test(test_random_words),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
