// test_shard.c: the tensor/pipeline split of the real models against hand-computed ranges:
// gpt-oss-120b (64 query heads, 8 KV heads, 128 experts, 36 layers, vocabulary 201,088) and
// fixture-sized configs where tp exceeds the KV heads; and the messages for sizes that do not
// divide.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "model/shard.h"

static void test_120b_tp4_pp2(void **state) {
  (void)state;
  GptOssConfig c;
  assert_true(config_preset("openai/gpt-oss-120b", &c));
  char err[256];
  assert_true(shard_check(&c, 4, 2, err, sizeof err));
  Shard s = shard_of(&c, 4, 2, 3, 1);  // tensor rank 3 of the second stage
  assert_int_equal(s.layer_begin, 18);
  assert_int_equal(s.layer_end, 36);
  assert_int_equal(s.head_begin, 48);
  assert_int_equal(s.num_heads, 16);
  assert_int_equal(s.kv_head_begin, 6);
  assert_int_equal(s.num_kv_heads, 2);
  assert_int_equal(s.expert_begin, 96);
  assert_int_equal(s.expert_end, 128);
  assert_int_equal(s.vocab_begin, 3 * 50272);
  assert_int_equal(s.vocab_end, 201088);
  assert_true(shard_is_last_stage(&s) && !shard_is_first_stage(&s));
}

// 8 query heads over 2 KV heads (groups of 4), tp 4: two query heads a rank, each rank a copy of
// the KV head of its group.
static void test_more_ranks_than_kv_heads(void **state) {
  (void)state;
  GptOssConfig c;
  assert_true(config_preset("gpt-oss-tiny", &c));
  c.num_heads = 8;
  c.num_kv_heads = 2;
  const int want_kv[4] = {0, 0, 1, 1};
  for (int r = 0; r < 4; r++) {
    Shard s = shard_of(&c, 4, 1, r, 0);
    assert_int_equal(s.head_begin, 2 * r);
    assert_int_equal(s.num_heads, 2);
    assert_int_equal(s.num_kv_heads, 1);
    assert_int_equal(s.kv_head_begin, want_kv[r]);
  }
}

// 5 layers over 2 stages: the first stage gets the extra layer.
static void test_uneven_layers(void **state) {
  (void)state;
  GptOssConfig c;
  assert_true(config_preset("gpt-oss-tiny", &c));
  c.num_layers = 5;
  Shard first = shard_of(&c, 1, 2, 0, 0), second = shard_of(&c, 1, 2, 0, 1);
  assert_int_equal(first.layer_begin, 0);
  assert_int_equal(first.layer_end, 3);
  assert_int_equal(second.layer_begin, 3);
  assert_int_equal(second.layer_end, 5);
  Shard whole = shard_whole(&c);
  assert_int_equal(whole.num_heads, c.num_heads);
  assert_int_equal(whole.expert_end, c.num_experts);
  assert_int_equal(whole.vocab_end, c.vocab_size);
}

static void test_refusals(void **state) {
  (void)state;
  GptOssConfig c;
  assert_true(config_preset("openai/gpt-oss-120b", &c));
  char err[256];
  assert_false(shard_check(&c, 3, 1, err, sizeof err));
  assert_non_null(strstr(err, "-tp 3 does not divide the model's 64 query heads"));
  assert_non_null(strstr(err, "1, 2, 4, 8, 16, 32, 64"));
  assert_false(shard_check(&c, 1, 37, err, sizeof err));
  assert_non_null(strstr(err, "-pp 37 is more stages than the model's 36 layers"));
  // tp 12 divides 48 query heads, 96 experts and the vocabulary, but 8 KV heads neither divide
  // by 12 nor does 12 divide by 8.
  c.num_heads = 48;
  c.num_kv_heads = 8;
  c.num_experts = 96;
  c.vocab_size = 96 * 2000;
  assert_false(shard_check(&c, 12, 1, err, sizeof err));
  assert_non_null(strstr(err, "8 KV heads"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_120b_tp4_pp2),
      cmocka_unit_test(test_more_ranks_than_kv_heads),
      cmocka_unit_test(test_uneven_layers),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
