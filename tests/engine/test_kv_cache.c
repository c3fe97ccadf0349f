// test_kv_cache.c: KV storage sizes (spec gptoss-model.md section 5.4: 2 KiB per token per layer
// in bf16, so 4 KiB in float32), a rank's share under tensor and pipeline parallelism, zeroed
// allocation in the backend's memory, a hybrid cache's shared arrays, and the errors for
// impossible sizes.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "model/kv_cache.h"

// Under AddressSanitizer, an impossible allocation must return NULL as it does in libc.
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

static void test_bytes_per_token(void **state) {
  (void)state;
  GptOssConfig c;
  assert_true(config_preset("openai/gpt-oss-120b", &c));
  assert_int_equal(kv_cache_bytes_per_token(&c, NULL, KV_F32, false), 36 * 2 * 512 * 4);
  assert_true(config_preset("openai/gpt-oss-20b", &c));
  assert_int_equal(kv_cache_bytes_per_token(&c, NULL, KV_F32, false), 24 * 2 * 512 * 4);
  assert_int_equal(kv_cache_bytes_per_token(&c, NULL, KV_BF16, false), 24 * 2 * 512 * 2);
}

static void test_dtype_names(void **state) {
  (void)state;
  KvDtype d = KV_F32;
  assert_true(kv_dtype_from_name("bfloat16", &d) && d == KV_BF16);
  assert_string_equal(kv_dtype_name(d), "bfloat16");
  assert_true(kv_dtype_from_name("float32", &d) && d == KV_F32);
  assert_string_equal(kv_dtype_name(d), "float32");
  assert_false(kv_dtype_from_name("fp8", &d));
  assert_int_equal(kv_dtype_size(KV_BF16), 2);
  assert_int_equal(kv_dtype_size(KV_F32), 4);
}

// 120b: 36 layers, 8 KV heads of 64. tp 2: half the heads; pp 4: 9 layers; tp 16: more ranks
// than KV heads, each rank keeps one.
static void test_bytes_per_token_of_a_shard(void **state) {
  (void)state;
  GptOssConfig c;
  assert_true(config_preset("openai/gpt-oss-120b", &c));
  Shard s = shard_of(&c, 2, 1, 1, 0);
  assert_int_equal(kv_cache_bytes_per_token(&c, &s, KV_F32, false), 36 * 2 * 4 * 64 * 4);
  s = shard_of(&c, 1, 4, 0, 3);
  assert_int_equal(kv_cache_bytes_per_token(&c, &s, KV_F32, false), 9 * 2 * 8 * 64 * 4);
  s = shard_of(&c, 16, 1, 15, 0);
  assert_int_equal(kv_cache_bytes_per_token(&c, &s, KV_F32, false), 36 * 2 * 1 * 64 * 4);
}

static void test_init_zeroed_and_free(void **state) {
  Backend *be = *state;
  GptOssConfig c;
  assert_true(config_preset("gpt-oss-tiny", &c));
  KvCache kv;
  char err[256] = "";
  assert_true(kv_cache_init(&kv, be, &c, NULL, KV_F32, 10, 16, false, err, sizeof err));
  assert_int_equal(kv.num_layers, 4);
  assert_int_equal(kv.num_blocks, 10);
  assert_int_equal(kv.block_size, 16);
  assert_int_equal(kv.num_kv_heads, 2);
  assert_int_equal(kv.head_dim, 64);
  assert_int_equal(kv.dtype, KV_F32);
  const size_t n = 10 * 16 * 2 * 64;
  for (int l = 0; l < kv.num_layers; l++) {
    float *k = kv.k[l], *v = kv.v[l];
    for (size_t i = 0; i < n; i++) assert_true(k[i] == 0.0f && v[i] == 0.0f);
    k[n - 1] = 1.0f;  // the last slot is writable
    v[n - 1] = 1.0f;
  }
  kv_cache_free(&kv);
  assert_null(kv.k);
  assert_int_equal(kv.num_layers, 0);
}

// Hybrid: the k-th sliding layer and the k-th full layer share one array (tiny: layers 0 and 1,
// 2 and 3), so a token takes half the bytes; a pipeline stage counts its own layers (120b pp 4:
// 9 layers, 5 of one kind and 4 of the other, so 5 arrays).
static void test_hybrid_shares_arrays(void **state) {
  Backend *be = *state;
  GptOssConfig c;
  assert_true(config_preset("gpt-oss-tiny", &c));
  assert_int_equal(kv_cache_bytes_per_token(&c, NULL, KV_F32, true), 2 * 2 * 2 * 64 * 4);
  KvCache kv;
  char err[256] = "";
  assert_true(kv_cache_init(&kv, be, &c, NULL, KV_F32, 10, 16, true, err, sizeof err));
  assert_true(kv.hybrid);
  assert_int_equal(kv.num_layers, 4);
  assert_int_equal(kv.num_arrays, 2);
  assert_ptr_equal(kv.k[0], kv.k[1]);
  assert_ptr_equal(kv.v[2], kv.v[3]);
  assert_ptr_not_equal(kv.k[0], kv.k[2]);
  assert_ptr_not_equal(kv.k[0], kv.v[0]);
  kv_cache_free(&kv);
  assert_true(config_preset("openai/gpt-oss-120b", &c));
  assert_int_equal(kv_cache_bytes_per_token(&c, NULL, KV_BF16, true), 18 * 2 * 512 * 2);
  Shard s = shard_of(&c, 1, 4, 0, 1);  // layers 9 .. 17: 5 full (odd), 4 sliding
  assert_int_equal(kv_cache_bytes_per_token(&c, &s, KV_BF16, true), 5 * 2 * 512 * 2);
}

static void test_impossible_sizes(void **state) {
  Backend *be = *state;
  GptOssConfig c;
  assert_true(config_preset("openai/gpt-oss-120b", &c));
  KvCache kv;
  char err[256] = "";
  assert_false(kv_cache_init(&kv, be, &c, NULL, KV_F32, 0, 16, false, err, sizeof err));
  assert_non_null(strstr(err, "KV cache"));
  assert_false(kv_cache_init(&kv, be, &c, NULL, KV_F32, 16, -1, false, err, sizeof err));
  // 2^31 blocks of 2^31 tokens: overflows any address space.
  assert_false(
      kv_cache_init(&kv, be, &c, NULL, KV_F32, 2147483647, 2147483647, false, err, sizeof err));
  assert_non_null(strstr(err, "overflow"));
  // 2^30 blocks of 2^10 tokens: 288 PiB, never there.
  err[0] = '\0';
  assert_false(kv_cache_init(&kv, be, &c, NULL, KV_F32, 1 << 30, 1 << 10, false, err, sizeof err));
  assert_non_null(strstr(err, "out of memory"));
  assert_null(kv.k);
}

static int setup(void **state) {
  *state = cpu_backend_create(1);
  return 0;
}

static int teardown(void **state) {
  Backend *be = *state;
  be->destroy(be);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtype_names),
      cmocka_unit_test(test_bytes_per_token),
      cmocka_unit_test(test_bytes_per_token_of_a_shard),
      cmocka_unit_test(test_init_zeroed_and_free),
      cmocka_unit_test(test_hybrid_shares_arrays),
      cmocka_unit_test(test_impossible_sizes),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
