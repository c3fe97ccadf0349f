// test_request_body.c: the request JSON, byte for byte: vLLM v0.10.2's keys and key order for
// completions and chat, the optional sampling keys appended after the fixed ones (temperature
// replaced in place), logprobs null by default, JSON escaping of the prompt, and --extra-body's
// keys merged last.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "bench/request_body.h"

static void assert_body(const ClientOptions *o, const BenchRequest *r, const char *expected) {
  char *body = request_body_build(o, r);
  assert_string_equal(body, expected);
  cJSON_free(body);
}

static void test_completions_defaults(void **state) {
  (void)state;
  ClientOptions o = {.endpoint = ENDPOINT_COMPLETIONS, .model = "m", .logprobs = -1};
  BenchRequest r = {.prompt = "Hi", .expected_output_len = 7};
  assert_body(&o, &r,
              "{\"model\":\"m\",\"prompt\":\"Hi\",\"temperature\":0,\"repetition_penalty\":1,"
              "\"max_tokens\":7,\"logprobs\":null,\"stream\":true,"
              "\"stream_options\":{\"include_usage\":true}}");
}

static void test_completions_all_options(void **state) {
  (void)state;
  ClientOptions o = {.endpoint = ENDPOINT_COMPLETIONS,
                     .model = "m",
                     .logprobs = 3,
                     .ignore_eos = true,
                     .has_temperature = true,
                     .temperature = 0.7,
                     .has_top_p = true,
                     .top_p = 0.9,
                     .has_top_k = true,
                     .top_k = 20,
                     .has_min_p = true,
                     .min_p = 0.05};
  BenchRequest r = {.prompt = "Hi", .expected_output_len = 128};
  assert_body(&o, &r,
              "{\"model\":\"m\",\"prompt\":\"Hi\",\"temperature\":0.7,\"repetition_penalty\":1,"
              "\"max_tokens\":128,\"logprobs\":3,\"stream\":true,"
              "\"stream_options\":{\"include_usage\":true},\"ignore_eos\":true,\"top_p\":0.9,"
              "\"top_k\":20,\"min_p\":0.05}");
}

static void test_chat(void **state) {
  (void)state;
  ClientOptions o = {.endpoint = ENDPOINT_CHAT,
                     .model = "openai/gpt-oss-120b",
                     .logprobs = 2,
                     .ignore_eos = true,
                     .has_top_p = true,
                     .top_p = 1};
  BenchRequest r = {.prompt = "Hi", .expected_output_len = 5};
  assert_body(&o, &r,
              "{\"model\":\"openai/gpt-oss-120b\",\"messages\":[{\"role\":\"user\",\"content\":"
              "[{\"type\":\"text\",\"text\":\"Hi\"}]}],\"temperature\":0,"
              "\"max_completion_tokens\":5,\"stream\":true,"
              "\"stream_options\":{\"include_usage\":true},\"ignore_eos\":true,\"top_p\":1}");
}

static void test_escaping(void **state) {
  (void)state;
  ClientOptions o = {.endpoint = ENDPOINT_COMPLETIONS, .model = "m", .logprobs = -1};
  BenchRequest r = {.prompt = "say \"hi\"\n\tnow \\ caf\xc3\xa9", .expected_output_len = 1};
  char *body = request_body_build(&o, &r);
  cJSON *parsed = cJSON_Parse(body);
  assert_string_equal(cJSON_GetObjectItem(parsed, "prompt")->valuestring, r.prompt);
  cJSON_Delete(parsed);
  cJSON_free(body);
}

static void test_extra_body(void **state) {
  (void)state;
  // Its keys come last; a key we send too (temperature) is replaced where it stands.
  cJSON *extra = cJSON_Parse("{\"logit_bias\": {\"13\": -100}, \"temperature\": 0.5}");
  ClientOptions o = {.endpoint = ENDPOINT_COMPLETIONS, .model = "m", .logprobs = -1,
                     .extra_body = extra};
  BenchRequest r = {.prompt = "Hi", .expected_output_len = 7};
  assert_body(&o, &r,
              "{\"model\":\"m\",\"prompt\":\"Hi\",\"temperature\":0.5,\"repetition_penalty\":1,"
              "\"max_tokens\":7,\"logprobs\":null,\"stream\":true,"
              "\"stream_options\":{\"include_usage\":true},\"logit_bias\":{\"13\":-100}}");
  cJSON_Delete(extra);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_completions_defaults),
      cmocka_unit_test(test_completions_all_options),
      cmocka_unit_test(test_chat),
      cmocka_unit_test(test_escaping),
      cmocka_unit_test(test_extra_body),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
