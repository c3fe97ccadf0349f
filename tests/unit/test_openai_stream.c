// test_openai_stream.c: vLLM v0.10.2's reading of a streamed answer, on hand-made SSE bytes
// with chosen arrival times: TTFT/ITL/E2EL for completions (usage chunks do not move the clock)
// and chat (every event does; the role chunk is the first token), empty text still counts,
// output_tokens from usage, the "never received a valid chunk" failure, malformed JSON, events
// split across reads, the unterminated last event, server send stamps, reuse across requests;
// and ours: a server's error event inside the 200 answer (llama-server's and vLLM's forms, split
// anywhere) fails the request, so its tokens count nowhere; so does a stream that ends without
// [DONE] and without a finish_reason.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "bench/metrics.h"
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

  // chat counts a finished 200 stream as a success even without choices (as vLLM does)...
  r = (RequestResult){.start_ns = 0};
  oai_stream_begin(&s, ENDPOINT_CHAT, &r, 4, &json, &lags);
  feed(&s, DONE, 20);
  oai_stream_end(&s, true, 30);
  assert_true(r.success);
  assert_int_equal(r.num_itl, 0);
  assert_null(r.itl_ns);
  request_result_free(&r);
  // ... but not an empty body: no [DONE], no finish_reason (ours)
  r = (RequestResult){.start_ns = 0};
  oai_stream_begin(&s, ENDPOINT_CHAT, &r, 4, &json, &lags);
  oai_stream_end(&s, true, 30);
  assert_false(r.success);
  assert_string_equal(r.error, "stream ended without [DONE] or a finish_reason after 0 events");
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
  feed(&s, "data: {\"choices\":[{\"text\":\"end\",\"finish_reason\":\"stop\"}]}", 10);
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

// Ours: a 200 stream whose body ends cleanly without [DONE] and without any finish_reason was
// given up by the server (llama-server on invalid UTF-8): failed. Either marker alone ends it.
static void test_stream_without_end(void **state) {
  (void)state;
  OaiStream s = {0};
  JsonScratch json = {0};
  LogHist lags = {0};
  static const struct {
    const char *last;  // after two token events
    bool success;
  } cases[] = {
      {"", false},
      {"data: {\"choices\":[{\"text\":\"c\",\"finish_reason\":null}]}\n\n", false},
      {"data: {\"choices\":[{\"text\":\"c\",\"finish_reason\":\"length\"}]}\n\n", true},
      {"data: [DONE]\n\n", true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    RequestResult r = {.start_ns = 0};
    oai_stream_begin(&s, ENDPOINT_COMPLETIONS, &r, 4, &json, &lags);
    feed(&s, completion("a"), 10);
    feed(&s, completion("b"), 20);
    oai_stream_feed(&s, cases[i].last, strlen(cases[i].last), 30);
    oai_stream_end(&s, true, 40);
    assert_int_equal(r.success, cases[i].success);
    if (i == 1) {
      assert_int_equal(r.failure, FAILURE_STREAM);
      assert_string_equal(r.error,
                          "stream ended without [DONE] or a finish_reason after 3 events");
      assert_string_equal(r.generated_text, "abc");  // kept for --save-detailed
    }
    request_result_free(&r);
  }
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

// llama-server aborting a stream: two tokens and a usage chunk, then its error event (CRLF line
// ends, so a split can fall between '\r' and '\n'), then more that must not be read.
static const char ABORTED_STREAM[] =
    ": t=5\n\n"
    "data: {\"choices\":[{\"index\":0,\"text\":\"Hel\"}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"text\":\"lo\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\n"
    "data: {\"error\":{\"code\":500,\"message\":\"...invalid UTF-8...\",\"type\":\"server_error\"}}"
    "\r\n\r\n"
    "data: {\"choices\":[{\"index\":0,\"text\":\" more\"}]}\n\n"
    "data: [DONE]\n\n";
static const char ABORTED_ERROR[] =
    "stream error event after 2 events: ...invalid UTF-8... (code 500, type server_error)";

// Feeds ABORTED_STREAM in pieces of `piece` bytes, but the first piece `first` bytes, as the
// client does: it stops at the first false. Returns the bytes fed by then.
static size_t feed_aborted(OaiStream *s, size_t first, size_t piece) {
  size_t len = strlen(ABORTED_STREAM), at = 0;
  for (size_t n = first; at < len; at += n, n = piece) {
    if (n > len - at) n = len - at;
    if (!oai_stream_feed(s, ABORTED_STREAM + at, n, (int64_t)(10 + at))) return at + n;
  }
  return at;
}

static void assert_aborted(const RequestResult *r) {
  assert_false(r->success);
  assert_int_equal(r->failure, FAILURE_STREAM);
  assert_string_equal(r->error, ABORTED_ERROR);
  assert_string_equal(r->generated_text, "Hello");  // nothing after the error was read
}

static void test_error_event_fails_the_request_wherever_split(void **state) {
  (void)state;
  OaiStream s = {0};
  JsonScratch json = {0};
  LogHist lags = {0};
  size_t len = strlen(ABORTED_STREAM);
  // The event is complete at the blank line's '\r': a lone '\r' ends a line.
  size_t error_end = (size_t)(strstr(ABORTED_STREAM, "\r\n\r\n") - ABORTED_STREAM) + 3;
  for (size_t first = 1; first <= len; first++) {  // two reads, split at every byte
    RequestResult r = {.start_ns = 0};
    oai_stream_begin(&s, ENDPOINT_COMPLETIONS, &r, 4, &json, &lags);
    // The read that completes the error event is the one that fails, never an earlier one.
    assert_int_equal(feed_aborted(&s, first, len), first >= error_end ? first : len);
    assert_false(oai_stream_feed(&s, DONE, strlen(DONE), 99));  // stays failed
    // The client aborted the transfer: the body did not end cleanly.
    oai_stream_end(&s, false, 100);
    assert_aborted(&r);
    request_result_free(&r);
  }
  RequestResult r = {.start_ns = 0};  // one byte per read
  oai_stream_begin(&s, ENDPOINT_COMPLETIONS, &r, 4, &json, &lags);
  assert_int_equal(feed_aborted(&s, 1, 1), error_end);
  oai_stream_end(&s, false, 100);
  assert_aborted(&r);
  assert_int_equal(r.output_tokens, 2);  // the usage chunk was read, and yet...

  // ... a failed request is counted as vLLM counts one: not successful, no tokens, no latency.
  MetricsOptions mo;
  metrics_options_init(&mo);
  BenchMetrics m;
  metrics_compute(&m, &r, 1, 1000000000, &mo);
  assert_int_equal(m.num_completed, 0);
  assert_int_equal(m.num_failed, 1);
  assert_int_equal(m.num_failed_by_kind[FAILURE_STREAM], 1);
  assert_int_equal(m.num_output_tokens, 0);
  assert_true(m.output_throughput == 0.0);
  request_result_free(&r);
  oai_stream_free(&s);
  json_scratch_free(&json);
}

// Reads one chat stream of a role chunk, `event` (a data line) and [DONE], and returns its
// error, or NULL when it succeeded. Caller frees r.
static const char *chat_error_after_role(OaiStream *s, RequestResult *r, JsonScratch *json,
                                         LogHist *lags, const char *event) {
  *r = (RequestResult){.start_ns = 0};
  oai_stream_begin(s, ENDPOINT_CHAT, r, 4, json, lags);
  feed(s, chat("{\"role\":\"assistant\",\"content\":\"\"}"), 10);
  oai_stream_feed(s, event, strlen(event), 20);
  oai_stream_feed(s, "\n\ndata: [DONE]\n\n", 16, 25);
  oai_stream_end(s, true, 30);
  assert_int_equal(r->success, r->error == NULL);
  if (!r->success) assert_int_equal(r->failure, FAILURE_STREAM);
  return r->error;
}

static void test_error_event_forms(void **state) {
  (void)state;
  OaiStream s = {0};
  JsonScratch json = {0};
  LogHist lags = {0};
  RequestResult r;
  static const struct {
    const char *event, *error;
  } cases[] = {
      {"data: {\"error\":\"overloaded\"}", "stream error event after 1 events: overloaded"},
      {"data: {\"error\":{\"object\":\"error\",\"message\":\"bad\",\"type\":\"BadRequestError\","
       "\"param\":null,\"code\":400}}",  // vLLM
       "stream error event after 1 events: bad (code 400, type BadRequestError)"},
      {"data: {\"object\":\"error\",\"message\":\"old\",\"type\":\"InternalServerError\"}",
       "stream error event after 1 events: old (type InternalServerError)"},  // older vLLM
      {"data: {\"error\":{\"code\":\"E1\"}}",  // no message: the event's text says it
       "stream error event after 1 events: {\"error\":{\"code\":\"E1\"}} (code E1)"},
      {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}],\"error\":null}",
       NULL},  // an empty error member is no error
      {"data: {\"choices\":[],\"object\":\"chat.completion.chunk\"}", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *error = chat_error_after_role(&s, &r, &json, &lags, cases[i].event);
    if (cases[i].error) {
      assert_string_equal(error, cases[i].error);
    } else {
      assert_null(error);
    }
    request_result_free(&r);
  }
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
      cmocka_unit_test(test_stream_without_end),
      cmocka_unit_test(test_server_stamps),
      cmocka_unit_test(test_error_event_fails_the_request_wherever_split),
      cmocka_unit_test(test_error_event_forms),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
