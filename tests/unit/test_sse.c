// test_sse.c: the incremental SSE parser: one byte stream cut at every split point (one cut and
// every pair of cuts, and byte by byte) gives the same events; LF, CRLF and lone-CR line ends;
// comments; multi-line data; fields other than data ignored; an unterminated last event
// completed by sse_finish; a large event.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/sse.h"
#include "common/buf.h"

// Events rendered as one string: "D<data>|" or "C<comment>|", so whole runs compare at once.
static void drain(SseParser *p, Buf *out) {
  SseEvent ev;
  while (sse_next(p, &ev)) {
    buf_append_byte(out, ev.kind == SSE_DATA ? 'D' : 'C');
    buf_append(out, ev.text, ev.len);
    buf_append_byte(out, '|');
  }
}

// Parses stream fed in pieces cut at cuts[0..num_cuts) (ascending), then finished.
static void parse_cut(const char *stream, const size_t *cuts, size_t num_cuts, Buf *out) {
  SseParser p = {0};
  size_t len = strlen(stream), at = 0;
  buf_clear(out);
  for (size_t i = 0; i <= num_cuts; i++) {
    size_t end = i < num_cuts ? cuts[i] : len;
    sse_feed(&p, stream + at, end - at);
    drain(&p, out);
    at = end;
  }
  sse_finish(&p);
  drain(&p, out);
  sse_free(&p);
}

static const char STREAM[] =
    ": t=123\n\n"
    "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"
    "data: {\"x\":1}\r\n\r\n"
    "event: message\nid: 7\nretry: 10\ndata: first\ndata:second\ndata\n\n"
    ":no-space comment\r"
    "data: lone cr\r\r"
    "event: no data here\n\n"
    "data: [DONE]\n\n";

static const char EXPECTED[] =
    "Ct=123|"
    "D{\"choices\":[{\"text\":\"a\"}]}|"
    "D{\"x\":1}|"
    "Dfirst\nsecond\n|"
    "Cno-space comment|"
    "Dlone cr|"
    "D[DONE]|";

static void test_every_single_split(void **state) {
  (void)state;
  Buf out = {0};
  size_t len = strlen(STREAM);
  for (size_t cut = 0; cut <= len; cut++) {
    parse_cut(STREAM, &cut, 1, &out);
    if (strcmp(out.data, EXPECTED) != 0) fail_msg("cut at %zu: got %s", cut, out.data);
  }
  buf_free(&out);
}

static void test_every_pair_of_splits(void **state) {
  (void)state;
  Buf out = {0};
  size_t len = strlen(STREAM);
  for (size_t a = 0; a <= len; a++)
    for (size_t b = a; b <= len; b++) {
      size_t cuts[2] = {a, b};
      parse_cut(STREAM, cuts, 2, &out);
      if (strcmp(out.data, EXPECTED) != 0) fail_msg("cuts at %zu,%zu: got %s", a, b, out.data);
    }
  buf_free(&out);
}

static void test_byte_by_byte(void **state) {
  (void)state;
  size_t len = strlen(STREAM);
  size_t *cuts = malloc(len * sizeof *cuts);
  for (size_t i = 0; i < len; i++) cuts[i] = i;
  Buf out = {0};
  parse_cut(STREAM, cuts, len, &out);
  assert_string_equal(out.data, EXPECTED);
  buf_free(&out);
  free(cuts);
}

static void test_crlf_split_between_cr_and_lf(void **state) {
  (void)state;
  SseParser p = {0};
  Buf out = {0};
  sse_feed(&p, "data: a\r", 8);
  drain(&p, &out);
  sse_feed(&p, "\n\r", 2);  // the LF completes CRLF; the CR is the blank line
  drain(&p, &out);
  sse_feed(&p, "\ndata: b\r\n\r\n", 12);  // this LF belongs to the previous CR: no extra line
  drain(&p, &out);
  assert_string_equal(out.data, "Da|Db|");
  sse_free(&p);
  buf_free(&out);
}

static void test_many_events_in_one_read(void **state) {
  (void)state;
  Buf stream = {0}, expected = {0}, out = {0};
  for (int i = 0; i < 1000; i++) {
    buf_printf(&stream, ": t=%d\n\ndata: {\"i\":%d}\n\n", i, i);
    buf_printf(&expected, "Ct=%d|D{\"i\":%d}|", i, i);
  }
  SseParser p = {0};
  sse_feed(&p, stream.data, stream.len);
  drain(&p, &out);
  assert_string_equal(out.data, expected.data);
  sse_free(&p);
  buf_free(&stream);
  buf_free(&expected);
  buf_free(&out);
}

static void test_finish_completes_unterminated_event(void **state) {
  (void)state;
  Buf out = {0};
  parse_cut("data: {\"a\":1}\n\ndata: [DONE]", NULL, 0, &out);
  assert_string_equal(out.data, "D{\"a\":1}|D[DONE]|");
  parse_cut("data: x\r", NULL, 0, &out);
  assert_string_equal(out.data, "Dx|");
  parse_cut("data: x\n\n", NULL, 0, &out);  // finishing a complete stream adds nothing
  assert_string_equal(out.data, "Dx|");
  buf_free(&out);
}

static void test_empty_data_is_an_event(void **state) {
  (void)state;
  Buf out = {0};
  parse_cut("data:\n\ndata\n\n\n\n", NULL, 0, &out);
  assert_string_equal(out.data, "D|D|");
  buf_free(&out);
}

static void test_large_event(void **state) {
  (void)state;
  Buf stream = {0}, want = {0}, out = {0};
  buf_append_str(&stream, "data: ");
  buf_append_str(&want, "D");
  for (int i = 0; i < 100000; i++) {
    buf_append_byte(&stream, (uint8_t)('a' + i % 26));
    buf_append_byte(&want, (uint8_t)('a' + i % 26));
  }
  buf_append_str(&stream, "\n\n");
  buf_append_str(&want, "|");
  size_t cuts[3] = {1000, 50000, 99999};
  parse_cut(stream.data, cuts, 3, &out);
  assert_string_equal(out.data, want.data);
  buf_free(&stream);
  buf_free(&want);
  buf_free(&out);
}

static void test_reset_forgets_partial_input(void **state) {
  (void)state;
  SseParser p = {0};
  Buf out = {0};
  sse_feed(&p, "data: half", 10);
  drain(&p, &out);
  sse_reset(&p);
  sse_feed(&p, "data: whole\n\n", 13);
  drain(&p, &out);
  assert_string_equal(out.data, "Dwhole|");
  sse_free(&p);
  buf_free(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_single_split),
      cmocka_unit_test(test_every_pair_of_splits),
      cmocka_unit_test(test_byte_by_byte),
      cmocka_unit_test(test_crlf_split_between_cr_and_lf),
      cmocka_unit_test(test_many_events_in_one_read),
      cmocka_unit_test(test_finish_completes_unterminated_event),
      cmocka_unit_test(test_empty_data_is_an_event),
      cmocka_unit_test(test_large_event),
      cmocka_unit_test(test_reset_forgets_partial_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
