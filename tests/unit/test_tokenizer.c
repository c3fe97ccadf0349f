// test_tokenizer.c: o200k_base / o200k_harmony against the reference tiktoken's vectors
// (tests/fixtures/tokenizer: 227 texts from the shared fixtures, 1,853 more from npm tiktoken),
// round trips, special tokens both ways,
// invalid UTF-8, and the vocabulary file's checks.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/file.h"
#include "text/tokenizer.h"

#define VECTORS "tests/fixtures/tokenizer/o200k_base-vectors.jsonl"
// 1,853 harder cases (Unicode whitespace, contractions, scripts, emoji, 5,000-letter runs,
// seeded random strings) from the npm tiktoken package; scripts/make-extra-vectors.mjs makes them.
#define EXTRA_VECTORS "tests/fixtures/tokenizer/o200k_base-extra-vectors.jsonl"

typedef struct {
  Tokenizer base;
  Tokenizer harmony;
} Fixture;

static int setup(void **state) {
  Fixture *f = calloc(1, sizeof *f);
  char err[1024];
  if (!tok_init(&f->base, TOK_O200K_BASE, NULL, err, sizeof err) ||
      !tok_init(&f->harmony, TOK_O200K_HARMONY, NULL, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  Fixture *f = *state;
  tok_free(&f->base);
  tok_free(&f->harmony);
  free(f);
  return 0;
}

// Calls check(text, len, expected ids) for every vector; returns how many there were.
static size_t for_each_vector(const char *path,
                              void (*check)(const Fixture *, const char *, size_t, const TokenIds *),
                              const Fixture *f) {
  FILE *in = fopen(path, "r");
  assert_non_null(in);
  char *line = NULL;
  size_t cap = 0, count = 0;
  while (getline(&line, &cap, in) > 0) {
    json_error_t jerr;
    json_t *obj = json_loads(line, JSON_ALLOW_NUL, &jerr);
    assert_non_null(obj);
    json_t *text = json_object_get(obj, "text"), *ids = json_object_get(obj, "ids");
    TokenIds expected = {0};
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v) token_ids_push(&expected, (uint32_t)json_integer_value(v));
    check(f, json_string_value(text), json_string_length(text), &expected);
    token_ids_free(&expected);
    json_decref(obj);
    count++;
  }
  free(line);
  fclose(in);
  return count;
}

static void assert_ids_equal(const TokenIds *got, const TokenIds *expected, const char *text) {
  if (got->len != expected->len ||
      (got->len && memcmp(got->data, expected->data, got->len * sizeof *got->data) != 0)) {
    fprintf(stderr, "mismatch for text \"%.60s\": %zu ids, expected %zu\n", text, got->len,
            expected->len);
    fail();
  }
}

static void check_vector(const Fixture *f, const char *text, size_t len, const TokenIds *expected) {
  const Tokenizer *encoders[] = {&f->base, &f->harmony};  // same text ranks in both
  for (int e = 0; e < 2; e++) {
    TokenIds got = {0};
    tok_encode(encoders[e], text, len, false, &got);
    assert_ids_equal(&got, expected, text);
    Buf back = {0};
    assert_int_equal(tok_decode(encoders[e], got.data, got.len, &back), -1);
    assert_int_equal(back.len, len);
    assert_memory_equal(back.data, text, len);
    buf_free(&back);
    token_ids_free(&got);
  }
}

static void test_reference_vectors_match_and_round_trip(void **state) {
  assert_int_equal(for_each_vector(VECTORS, check_vector, *state), 227);
}

static void test_extra_reference_vectors_match_and_round_trip(void **state) {
  assert_int_equal(for_each_vector(EXTRA_VECTORS, check_vector, *state), 1853);
}

static void encode(const Tokenizer *t, const char *text, bool allow_special, TokenIds *out) {
  out->len = 0;
  tok_encode(t, text, strlen(text), allow_special, out);
}

static void test_special_tokens_recognised_only_when_allowed(void **state) {
  Fixture *f = *state;
  TokenIds ids = {0};
  encode(&f->harmony, "<|start|>user<|message|>hi<|end|>", true, &ids);
  uint32_t expected[] = {200006, 1428, 200008, 3686, 200007};
  assert_int_equal(ids.len, 5);
  assert_memory_equal(ids.data, expected, sizeof expected);

  // As plain text (the default) the same string is ordinary tokens and decodes back verbatim.
  encode(&f->harmony, "<|start|>user<|message|>hi<|end|>", false, &ids);
  assert_true(ids.len > 5);
  for (size_t i = 0; i < ids.len; i++) assert_false(tok_is_special(&f->harmony, ids.data[i]));
  Buf back = {0};
  tok_decode(&f->harmony, ids.data, ids.len, &back);
  assert_string_equal(back.data, "<|start|>user<|message|>hi<|end|>");

  // Names that are not specials of this encoding stay text even when allowed.
  encode(&f->base, "<|start|>", true, &ids);
  assert_false(tok_is_special(&f->base, ids.data[0]));
  encode(&f->harmony, "<|endofprompt|><|reserved_200018|><|foo|>", true, &ids);
  assert_int_equal(ids.data[0], 27);  // "<|" of the text "<|endofprompt|>"
  encode(&f->base, "a<|endofprompt|>b<|endoftext|>", true, &ids);
  assert_int_equal(ids.len, 4);
  assert_int_equal(ids.data[1], 200018);
  assert_int_equal(ids.data[3], 199999);
  buf_free(&back);
  token_ids_free(&ids);
}

static void test_special_ids_decode_to_names(void **state) {
  Fixture *f = *state;
  uint32_t ids[] = {200006, 200005, 200002, 200012, 201087, 199998, 200018};
  Buf out = {0};
  assert_int_equal(tok_decode(&f->harmony, ids, 7, &out), -1);
  assert_string_equal(out.data,
                      "<|start|><|channel|><|return|><|call|><|reserved_201087|><|startoftext|>"
                      "<|reserved_200018|>");
  assert_int_equal(f->harmony.vocab_size, 201088);
  assert_int_equal(tok_special_id(&f->harmony, "<|constrain|>", 13), 200003);
  assert_int_equal(tok_special_id(&f->harmony, "<|constrain", 11), -1);
  buf_free(&out);
}

static void test_unknown_ids_are_reported(void **state) {
  Fixture *f = *state;
  uint32_t harmony_ids[] = {17360, 201088};
  Buf out = {0};
  assert_int_equal(tok_decode(&f->harmony, harmony_ids, 2, &out), 1);
  uint32_t base_ids[] = {199998, 200006};  // not o200k_base ids
  buf_clear(&out);
  assert_int_equal(tok_decode(&f->base, base_ids, 2, &out), 0);
  assert_int_equal(f->base.vocab_size, 200019);
  buf_free(&out);
}

static void test_invalid_utf8_keeps_its_bytes(void **state) {
  Fixture *f = *state;
  const char text[] = "ok \xff\xfe bad \xc3( \xe2\x82 end\xf0\x9f\x98";  // stray, broken, truncated
  TokenIds ids = {0};
  tok_encode(&f->harmony, text, sizeof text - 1, false, &ids);
  Buf back = {0};
  tok_decode(&f->harmony, ids.data, ids.len, &back);
  assert_int_equal(back.len, sizeof text - 1);
  assert_memory_equal(back.data, text, sizeof text - 1);
  // Valid text around the invalid bytes is tokenized as usual: "ok" is one token.
  assert_int_equal(ids.data[0], 525);
  buf_free(&back);
  token_ids_free(&ids);
}

static void test_long_single_piece_round_trips(void **state) {
  Fixture *f = *state;
  size_t n = 200000;  // one regex piece: a 200 KB run of letters
  char *text = malloc(n + 1);
  for (size_t i = 0; i < n; i++) text[i] = "abcdefghij"[(i * 7 + i / 3) % 10];
  text[n] = '\0';
  TokenIds ids = {0};
  tok_encode(&f->base, text, n, false, &ids);
  assert_true(ids.len > n / 10 && ids.len < n);
  Buf back = {0};
  tok_decode(&f->base, ids.data, ids.len, &back);
  assert_int_equal(back.len, n);
  assert_memory_equal(back.data, text, n);
  buf_free(&back);
  token_ids_free(&ids);
  free(text);
}

static void test_vocabulary_with_wrong_sha256_is_refused(void **state) {
  (void)state;
  Buf vocab = {0};
  char err[1024];
  assert_true(file_read_all(tok_default_vocab_path(), &vocab, err, sizeof err));
  vocab.data[0] = 'J';  // "IQ== 0" -> "JQ== 0": another byte for rank 0
  char path[] = "/tmp/gptoss-vocab-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, vocab.data, vocab.len), (ssize_t)vocab.len);
  close(fd);
  Tokenizer t;
  assert_false(tok_init(&t, TOK_O200K_BASE, path, err, sizeof err));
  assert_non_null(strstr(err, "sha256"));
  assert_non_null(strstr(err, path));
  assert_false(tok_init(&t, TOK_O200K_BASE, "/nonexistent/o200k.tiktoken", err, sizeof err));
  assert_non_null(strstr(err, "/nonexistent/o200k.tiktoken"));
  unlink(path);
  buf_free(&vocab);
}

static void test_malformed_vocabulary_names_the_line(void **state) {
  (void)state;
  char path[] = "/tmp/gptoss-vocab-XXXXXX";
  int fd = mkstemp(path);
  const char bad[] = "IQ== 0\nIg== 1\nnot-base64! 2\n";
  assert_int_equal(write(fd, bad, sizeof bad - 1), (ssize_t)sizeof bad - 1);
  close(fd);
  Vocab v;
  char err[1024];
  assert_false(vocab_load(&v, path, NULL, err, sizeof err));
  char expected[64];
  snprintf(expected, sizeof expected, "%s:3:", path);
  assert_non_null(strstr(err, expected));
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_vectors_match_and_round_trip),
      cmocka_unit_test(test_extra_reference_vectors_match_and_round_trip),
      cmocka_unit_test(test_special_tokens_recognised_only_when_allowed),
      cmocka_unit_test(test_special_ids_decode_to_names),
      cmocka_unit_test(test_unknown_ids_are_reported),
      cmocka_unit_test(test_invalid_utf8_keeps_its_bytes),
      cmocka_unit_test(test_long_single_piece_round_trips),
      cmocka_unit_test(test_vocabulary_with_wrong_sha256_is_refused),
      cmocka_unit_test(test_malformed_vocabulary_names_the_line),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
