// test_stream_decoder.c: incremental detokenization never emits broken UTF-8: characters split
// across byte-level tokens at every position, invalid bytes as U+FFFD, and equality with the
// one-shot decode over the reference vectors.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/stream_decoder.h"
#include "text/utf8.h"
#include "harmony_fixture.h"


// The id of the single-byte token for b (every byte is a token of o200k).
static uint32_t byte_id(const Tokenizer *t, uint8_t b) {
  int32_t r = vocab_rank(&t->vocab, &b, 1);
  assert_true(r >= 0);
  return (uint32_t)r;
}

// Streams bytes as one token per byte into all; lens_after[i] = output length after byte i.
static void stream_bytes(const Tokenizer *t, const char *bytes, size_t n, Buf *all,
                         size_t *lens_after) {
  StreamDecoder d = {0};
  for (size_t i = 0; i < n; i++) {
    assert_true(stream_decoder_push(&d, t, byte_id(t, (uint8_t)bytes[i]), all));
    lens_after[i] = all->len;
  }
  stream_decoder_flush(&d, all);
}

static void test_multibyte_characters_wait_until_complete(void **state) {
  const char text[] = "a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80z";  // a é 中 😀 z
  size_t lens[16];
  Buf out = {0};
  stream_bytes(*state, text, sizeof text - 1, &out, lens);
  size_t expected[] = {1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 11};
  assert_memory_equal(lens, expected, sizeof expected);
  assert_string_equal(out.data, text);
  buf_free(&out);
}

static void test_invalid_bytes_become_replacement_characters(void **state) {
  // truncated é before 'A'; stray continuation byte; surrogate encoding (ED A0 80); 0xFF
  const char text[] = "\xc3" "A\x80" "B\xed\xa0\x80" "C\xff";
  size_t lens[16];
  Buf out = {0};
  stream_bytes(*state, text, sizeof text - 1, &out, lens);
  assert_string_equal(out.data, UTF8_REPLACEMENT "A" UTF8_REPLACEMENT "B" UTF8_REPLACEMENT
                                UTF8_REPLACEMENT UTF8_REPLACEMENT "C" UTF8_REPLACEMENT);
  buf_free(&out);
}

static void test_unfinished_character_at_the_end_is_flushed_as_replacement(void **state) {
  size_t lens[4];
  Buf out = {0};
  stream_bytes(*state, "x\xf0\x9f", 3, &out, lens);
  assert_int_equal(lens[2], 1);  // nothing of the emoji was emitted before the flush
  assert_string_equal(out.data, "x" UTF8_REPLACEMENT);
  buf_free(&out);
}

static void assert_valid_utf8(const char *s, size_t n) {
  for (size_t k = 0; k < n;) {
    int len = utf8_next((const uint8_t *)s + k, n - k);
    assert_true(len > 0);
    k += (size_t)len;
  }
}

static void test_streaming_equals_full_decode_on_reference_vectors(void **state) {
  const Tokenizer *t = *state;
  FILE *in = fopen("tests/fixtures/tokenizer/o200k_base-vectors.jsonl", "r");
  assert_non_null(in);
  char *line = NULL;
  size_t cap = 0;
  int num_multibyte = 0;
  while (getline(&line, &cap, in) > 0) {
    json_t *obj = json_loads(line, 0, NULL);
    json_t *ids = json_object_get(obj, "ids");
    StreamDecoder d = {0};
    Buf streamed = {0}, full = {0};
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v) {
      uint32_t id = (uint32_t)json_integer_value(v);
      size_t before = streamed.len;
      assert_true(stream_decoder_push(&d, t, id, &streamed));
      assert_valid_utf8(streamed.data + before, streamed.len - before);
      tok_decode(t, &id, 1, &full);
    }
    stream_decoder_flush(&d, &streamed);
    assert_int_equal(streamed.len, full.len);
    if (full.len) assert_memory_equal(streamed.data, full.data, full.len);
    for (size_t k = 0; k < full.len; k++) num_multibyte += (uint8_t)full.data[k] >= 0xC0;
    buf_free(&streamed);
    buf_free(&full);
    json_decref(obj);
  }
  assert_true(num_multibyte > 100);  // the vectors do exercise multi-byte characters
  free(line);
  fclose(in);
}

static void test_unknown_id_is_refused(void **state) {
  StreamDecoder d = {0};
  Buf out = {0};
  assert_false(stream_decoder_push(&d, *state, 201088, &out));
  assert_int_equal(out.len, 0);
  buf_free(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_multibyte_characters_wait_until_complete),
      cmocka_unit_test(test_invalid_bytes_become_replacement_characters),
      cmocka_unit_test(test_unfinished_character_at_the_end_is_flushed_as_replacement),
      cmocka_unit_test(test_streaming_equals_full_decode_on_reference_vectors),
      cmocka_unit_test(test_unknown_id_is_refused),
  };
  return cmocka_run_group_tests(tests, harmony_setup, harmony_teardown);
}
