// test_openai_stream.c: vLLM v0.10.2's reading of a streamed answer, on hand-made SSE bytes
// with chosen arrival times: TTFT/ITL/E2EL for completions (usage chunks do not move the clock)
// and chat (every event does; the role chunk is the first token), empty text still counts,
// output_tokens from usage, the "never received a valid chunk" failure, malformed JSON, events
// split across reads, the unterminated last event, server send stamps, reuse across requests.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "bench/openai_stream.h"

static const char *completion(const char *text) {
  static char buf[256];
  snprintf(buf, sizeof buf, "data: {\"choices\":[{\"index\":0,\"text\":\"%s\"}]}\n\n", text);
  return buf;
}

static const char *chat(const char *delta) {
  static char buf[256];
  snprintf(buf, sizeof buf, "data: {\"choices\":[{\"index\":0,\"delta\":%s}]}\n\n", delta);
  return buf;
}

static const char USAGE[] = "data: {\"choices\":[],\"usage\":{\"completion_tokens\":42}}\n\n";
static const char DONE[] = "data: [DONE]\n\n";

static void feed(OaiStream *s, const char *bytes, int64_t at_ns) {
  assert_true(oai_stream_feed(s, bytes, strlen(bytes), at_ns));
}

static void test_completions(void **state) {
  (void)state;
  OaiStream s = {0};
  JsonScratch json = {0};
  LogHist lags = {0};
  RequestResult r = {.start_ns = 1000};
  oai_stream_begin(&s, ENDPOINT_COMPLETIONS, &r, 4, &json, &lags);
  feed(&s, completion("Hello"), 1100);
  feed(&s, completion(""), 1150);  // an empty text still counts as an event
  feed(&s, completion(" world"), 1190);
  feed(&s, USAGE, 1300);  // does not move the clock
  feed(&s, DONE, 1400);
  oai_stream_end(&s, true, 1500);
  assert_true(r.success);
  assert_int_equal(r.failure, FAILURE_NONE);
  assert_null(r.error);
  assert_int_equal(r.ttft_ns, 100);
  assert_int_equal(r.num_itl, 2);
  assert_int_equal(r.itl_ns[0], 50);
  assert_int_equal(r.itl_ns[1], 40);
  assert_int_equal(r.latency_ns, 190);
  assert_int_equal(r.output_tokens, 42);
  assert_string_equal(r.generated_text, "Hello world");
  request_result_free(&r);
  oai_stream_free(&s);
  json_scratch_free(&json);
}

static void test_chat(void **state) {
  (void)state;
  OaiStream s = {0};
  JsonScratch json = {0};
  LogHist lags = {0};
  RequestResult r = {.start_ns = 0};
  oai_stream_begin(&s, ENDPOINT_CHAT, &r, 0, &json, &lags);  // no preallocation: ITLs grow
  Buf both = {0};  // role chunk and first content in one read
  buf_append_str(&both, chat("{\"role\":\"assistant\",\"content\":\"\"}"));
  buf_append_str(&both, chat("{\"content\":\"Hi\"}"));
  feed(&s, both.data, 100);
  feed(&s, chat("{\"content\":null}"), 130);
  feed(&s, chat("{\"content\":\"!\"}"), 170);
  feed(&s, USAGE, 180);  // chat: moves the clock
  feed(&s, DONE, 190);
  oai_stream_end(&s, true, 200);
  assert_true(r.success);
  assert_int_equal(r.ttft_ns, 100);
  assert_int_equal(r.num_itl, 3);
  assert_int_equal(r.itl_ns[0], 0);
  assert_int_equal(r.itl_ns[1], 30);
  assert_int_equal(r.itl_ns[2], 40);
  assert_int_equal(r.latency_ns, 180);
  assert_int_equal(r.output_tokens, 42);
  assert_string_equal(r.generated_text, "Hi!");
  buf_free(&both);
  request_result_free(&r);
  oai_stream_free(&s);
  json_scratch_free(&json);
}

static void test_no_choices(void **state) {
  (void)state;
  OaiStream s = {0};
  JsonScratch json = {0};
  LogHist lags = {0};
  RequestResult r = {.start_ns = 0};
  oai_stream_begin(&s, ENDPOINT_COMPLETIONS, &r, 4, &json, &lags);
  feed(&s, USAGE, 10);
  feed(&s, DONE, 20);
  oai_stream_end(&s, true, 30);
  assert_false(r.success);
  assert_int_equal(r.failure, FAILURE_STREAM);
  assert_string_equal(r.error,
                      "Never received a valid chunk to calculate TTFT.This response "
                      "will be marked as failed!");
  assert_int_equal(r.latency_ns, 0);
  assert_string_equal(r.generated_text, "");
  request_result_free(&r);

  // chat counts any finished 200 stream as a success, even an empty one (as vLLM does)
  r = (RequestResult){.start_ns = 0};
  oai_stream_begin(&s, ENDPOINT_CHAT, &r, 4, &json, &lags);
  oai_stream_end(&s, true, 30);
  assert_true(r.success);
  assert_int_equal(r.num_itl, 0);
  assert_null(r.itl_ns);
  request_result_free(&r);
  oai_stream_free(&s);
  json_scratch_free(&json);
}

static void test_malformed(void **state) {
  (void)state;
  OaiStream s = {0};
  JsonScratch json = {0};
  LogHist lags = {0};
  RequestResult r = {.start_ns = 0};
  oai_stream_begin(&s, ENDPOINT_COMPLETIONS, &r, 4, &json, &lags);
  feed(&s, completion("a"), 10);
  assert_false(oai_stream_feed(&s, "data: {not json\n\n", 17, 20));
  assert_false(oai_stream_feed(&s, completion("b"), 2, 30));  // stays broken
  oai_stream_end(&s, false, 40);
  assert_false(r.success);
  assert_int_equal(r.failure, FAILURE_STREAM);
  assert_non_null(strstr(r.error, "malformed SSE event"));
  assert_string_equal(r.generated_text, "a");
  request_result_free(&r);

  r = (RequestResult){.start_ns = 0};
  oai_stream_begin(&s, ENDPOINT_COMPLETIONS, &r, 4, &json, &lags);  // the next request starts clean
  assert_false(oai_stream_feed(&s, "data: [1,2]\n\n", 13, 5));    // JSON, but not an object
  oai_stream_end(&s, true, 6);
  assert_int_equal(r.failure, FAILURE_STREAM);
  request_result_free(&r);
  oai_stream_free(&s);
  json_scratch_free(&json);
}

static void test_split_events_take_the_completing_read_time(void **state) {
  (void)state;
  OaiStream s = {0};
  JsonScratch json = {0};
  LogHist lags = {0};
  RequestResult r = {.start_ns = 0};
  oai_stream_begin(&s, ENDPOINT_COMPLETIONS, &r, 4, &json, &lags);
  const char *event = completion("x");
  size_t half = strlen(event) / 2;
  assert_true(oai_stream_feed(&s, event, half, 10));
  assert_true(oai_stream_feed(&s, event + half, strlen(event) - half, 25));
  oai_stream_end(&s, true, 30);
  assert_int_equal(r.ttft_ns, 25);
  request_result_free(&r);
  oai_stream_free(&s);
  json_scratch_free(&json);
}

static void test_unterminated_last_event(void **state) {
  (void)state;
  OaiStream s = {0};
  JsonScratch json = {0};
  LogHist lags = {0};
  RequestResult r = {.start_ns = 0};
  oai_stream_begin(&s, ENDPOINT_COMPLETIONS, &r, 4, &json, &lags);
  feed(&s, "data: {\"choices\":[{\"text\":\"end\"}]}", 10);
  oai_stream_end(&s, true, 50);  // the body ended cleanly: the last event counts, at the end
  assert_true(r.success);
  assert_int_equal(r.ttft_ns, 50);
  assert_string_equal(r.generated_text, "end");
  request_result_free(&r);

  r = (RequestResult){.start_ns = 0};
  oai_stream_begin(&s, ENDPOINT_COMPLETIONS, &r, 4, &json, &lags);
  feed(&s, "data: {\"choices\":[{\"text\":\"end\"}]}", 10);
  oai_stream_end(&s, false, 50);  // broken off: a partial event is not read
  assert_false(r.success);
  request_result_free(&r);
  oai_stream_free(&s);
  json_scratch_free(&json);
}

static void test_server_stamps(void **state) {
  (void)state;
  OaiStream s = {0};
  JsonScratch json = {0};
  LogHist lags = {0};
  RequestResult r = {.start_ns = 0};
  oai_stream_begin(&s, ENDPOINT_COMPLETIONS, &r, 4, &json, &lags);
  feed(&s, ": t=1000\n\n", 1005);
  feed(&s, completion("a"), 1010);  // received 10 ns after its stamp
  feed(&s, ": t=2000\n\n", 2001);
  feed(&s, completion("b"), 2030);  // 30 ns
  feed(&s, completion("c"), 2040);  // no stamp: not counted
  oai_stream_end(&s, true, 3000);
  assert_int_equal(lags.num, 2);
  assert_true(lags.sum == 40);
  assert_int_equal(lags.max, 30);
  request_result_free(&r);
  oai_stream_free(&s);
  json_scratch_free(&json);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_completions),
      cmocka_unit_test(test_chat),
      cmocka_unit_test(test_no_choices),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_split_events_take_the_completing_read_time),
      cmocka_unit_test(test_unterminated_last_event),
      cmocka_unit_test(test_server_stamps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
