// test_mock_stream.c: mock-server's event plan without sockets: which events are due when,
// catching up when late, tokens per event, the usage chunk and [DONE] with the last token,
// a stream with no tokens, the cut point, the error event that ends a stream (llama-server's),
// and that every data line carries a send stamp.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "bench/mock_stream.h"
#include "bench/sse.h"

typedef struct {
  size_t num_data, num_comments, num_done, num_usage;
} Counts;

static Counts count(const Buf *out) {
  Counts c = {0};
  SseParser p = {0};
  sse_feed(&p, out->data ? out->data : "", out->len);
  SseEvent ev;
  while (sse_next(&p, &ev)) {
    if (ev.kind == SSE_COMMENT) {
      assert_memory_equal(ev.text, "t=", 2);
      c.num_comments++;
    } else {
      c.num_data++;
      c.num_done += strcmp(ev.text, "[DONE]") == 0;
      c.num_usage += strstr(ev.text, "\"usage\"") != NULL;
    }
  }
  sse_free(&p);
  return c;
}

static MockStreamPlan plan(uint32_t num_tokens, uint32_t per_event, int64_t cut_after) {
  return (MockStreamPlan){.include_usage = true,
                          .num_tokens = num_tokens,
                          .tokens_per_event = per_event,
                          .cut_after = cut_after,
                          .first_due_ns = 1000,
                          .itl_ns = 100,
                          .model_json = "\"m\""};
}

static void test_events_come_due_one_by_one(void **state) {
  (void)state;
  MockStream m = {0};
  MockStreamPlan p = plan(5, 2, -1);  // events of 2, 2, 1 tokens at 1000, 1100, 1200
  mock_stream_init(&m, &p);
  Buf out = {0};
  mock_stream_produce(&m, 999, &out);
  assert_int_equal(out.len, 0);
  mock_stream_produce(&m, 1000, &out);
  assert_int_equal(count(&out).num_data, 1);
  assert_int_equal(mock_stream_next_due(&m), 1100);
  mock_stream_produce(&m, 1150, &out);
  assert_int_equal(count(&out).num_data, 2);
  assert_int_equal(m.phase, MOCK_STREAMING);
  mock_stream_produce(&m, 1200, &out);  // the last token, then usage and [DONE] at once
  Counts c = count(&out);
  assert_int_equal(c.num_data, 5);
  assert_int_equal(c.num_comments, 5);
  assert_int_equal(c.num_usage, 1);
  assert_int_equal(c.num_done, 1);
  assert_int_equal(m.phase, MOCK_DONE);
  assert_non_null(strstr(out.data, "\"completion_tokens\":5"));
  assert_non_null(strstr(out.data, "\"finish_reason\":\"length\""));
  buf_free(&out);
  mock_stream_free(&m);
}

static void test_late_production_catches_up(void **state) {
  (void)state;
  MockStream m = {0};
  MockStreamPlan p = plan(10, 1, -1);
  p.chat = true;
  mock_stream_init(&m, &p);
  Buf out = {0};
  mock_stream_produce(&m, 1000000, &out);
  Counts c = count(&out);
  assert_int_equal(c.num_data, 1 + 10 + 1 + 1);  // role chunk, tokens, usage, [DONE]
  assert_int_equal(m.phase, MOCK_DONE);
  assert_non_null(strstr(out.data, "chat.completion.chunk"));
  buf_free(&out);
  mock_stream_free(&m);
}

static void test_no_tokens(void **state) {
  (void)state;
  MockStream m = {0};
  MockStreamPlan p = plan(0, 1, -1);
  p.include_usage = false;
  mock_stream_init(&m, &p);
  Buf out = {0};
  mock_stream_produce(&m, 1000, &out);
  Counts c = count(&out);
  assert_int_equal(c.num_data, 1);
  assert_int_equal(c.num_done, 1);
  assert_int_equal(m.phase, MOCK_DONE);
  buf_free(&out);
  mock_stream_free(&m);
}

static void test_cut(void **state) {
  (void)state;
  MockStream m = {0};
  MockStreamPlan p = plan(10, 1, 2);
  mock_stream_init(&m, &p);
  Buf out = {0};
  mock_stream_produce(&m, 1100, &out);  // two tokens are due and sent
  assert_int_equal(count(&out).num_data, 2);
  assert_int_equal(m.phase, MOCK_STREAMING);
  mock_stream_produce(&m, 1200, &out);  // the third is where the cut falls
  assert_int_equal(m.phase, MOCK_CUT);
  assert_int_equal(count(&out).num_data, 2);
  mock_stream_init(&m, &(MockStreamPlan){.num_tokens = 3, .cut_after = 0, .model_json = "\"m\""});
  buf_clear(&out);
  mock_stream_produce(&m, 0, &out);  // cut before the first token
  assert_int_equal(m.phase, MOCK_CUT);
  assert_int_equal(out.len, 0);
  buf_free(&out);
  mock_stream_free(&m);
}

static void test_error_event(void **state) {
  (void)state;
  MockStream m = {0};
  MockStreamPlan p = plan(10, 1, -1);
  p.error_event = true;
  p.error_after = 2;
  mock_stream_init(&m, &p);
  Buf out = {0};
  mock_stream_produce(&m, 1100, &out);  // two tokens
  assert_int_equal(m.phase, MOCK_STREAMING);
  mock_stream_produce(&m, 1200, &out);  // the error where the third would be, and the end
  Counts c = count(&out);
  assert_int_equal(c.num_data, 3);
  assert_int_equal(c.num_comments, 3);
  assert_int_equal(c.num_usage + c.num_done, 0);
  assert_int_equal(m.phase, MOCK_DONE);
  assert_non_null(strstr(out.data, "data: {\"error\":{\"code\":500,\"message\":"));

  p = plan(2, 1, -1);  // a shorter answer: the error comes instead of usage and [DONE]
  p.error_event = true;
  p.error_after = 5;
  mock_stream_init(&m, &p);
  buf_clear(&out);
  mock_stream_produce(&m, 1000000, &out);
  c = count(&out);
  assert_int_equal(c.num_data, 3);
  assert_int_equal(c.num_usage + c.num_done, 0);
  assert_int_equal(m.phase, MOCK_DONE);
  assert_non_null(strstr(out.data, "\"error\""));
  buf_free(&out);
  mock_stream_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_events_come_due_one_by_one),
      cmocka_unit_test(test_late_production_catches_up),
      cmocka_unit_test(test_no_tokens),
      cmocka_unit_test(test_cut),
      cmocka_unit_test(test_error_event),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
