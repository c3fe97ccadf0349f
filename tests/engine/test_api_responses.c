// test_api_responses.c: POST /v1/responses without a server: input items rendered as vLLM's
// parse_response_input maps them (messages, function_call, function_call_output, reasoning;
// instructions and tools in the developer message), every refused field a 400 naming it, and
// the answer: a whole Response object (reasoning, message and function_call items, usage,
// status incomplete at max_output_tokens) and the stream's events in vLLM's order with
// sequence numbers and indices (the order the OpenAI SDK's ResponseStream accumulates).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <string.h>

#include "../unit/harmony_fixture.h"
#include "api/api_responses_request.h"
#include "output_script.h"

static ApiRequestContext context(const Tokenizer *t) {
  return (ApiRequestContext){
      .model = "m", .t = t, .max_model_len = 4096, .default_seed = 5, .current_date = "2026-12-04"};
}

static void test_input_items_render_as_vllm_maps_them(void **state) {
  const char *body =
      "{\"model\":\"m\",\"instructions\":\"Be brief.\",\"reasoning\":{\"effort\":\"low\"},"
      "\"tools\":[{\"type\":\"function\",\"name\":\"get_weather\",\"description\":\"Weather.\","
      "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},"
      "\"required\":[\"city\"]},\"strict\":false}],"
      "\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"Paris?\"}]},"
      "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],\"content\":[{\"type\":"
      "\"reasoning_text\",\"text\":\"Need the tool.\"}]},"
      "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"get_weather\",\"arguments\":"
      "\"{\\\"city\\\":\\\"Paris\\\"}\"},"
      "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"21C\"},"
      "{\"type\":\"message\",\"role\":\"developer\",\"content\":\"Use Celsius.\"}],"
      "\"max_output_tokens\":50,\"temperature\":0.5,\"metadata\":{\"k\":\"v\"},\"store\":false}";
  ApiRequestContext c = context(*state);
  ApiRequest r;
  ApiResponsesInfo info;
  ApiError err = {0};
  assert_true(api_responses_parse(&r, &info, &c, body, strlen(body), &err));
  Buf got = {0};
  tok_decode(*state, r.prompt.data, r.prompt.len, &got);
  assert_string_equal(
      got.data,
      "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
      "Knowledge cutoff: 2024-06\nCurrent date: 2026-12-04\n\nReasoning: low\n\n"
      "# Valid channels: analysis, commentary, final. Channel must be included for every "
      "message.\nCalls to these tools must go to the commentary channel: 'functions'.<|end|>"
      "<|start|>developer<|message|># Instructions\n\nBe brief.\n\n# Tools\n\n## functions\n\n"
      "namespace functions {\n\n// Weather.\ntype get_weather = (_: {\ncity: string,\n}) => "
      "any;\n\n} // namespace functions<|end|>"
      "<|start|>user<|message|>Paris?<|end|>"
      "<|start|>assistant<|channel|>analysis<|message|>Need the tool.<|end|>"
      "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
      "{\"city\":\"Paris\"}<|call|>"
      "<|start|>functions.get_weather<|message|>21C<|end|>"
      "<|start|>developer<|message|>Instructions:\nUse Celsius.<|end|><|start|>assistant");
  assert_int_equal(r.params.max_tokens, 50);
  assert_float_equal(r.params.sampling.temperature, 0.5, 1e-6);
  assert_false(r.stream);
  assert_string_equal(
      cJSON_GetObjectItem(cJSON_GetObjectItem(info.echo, "metadata"), "k")->valuestring, "v");
  assert_string_equal(
      cJSON_GetObjectItem(cJSON_GetObjectItem(info.echo, "reasoning"), "effort")->valuestring,
      "low");
  buf_free(&got);
  cJSON_Delete(info.echo);
  api_request_free(&r);
}

static void test_refused_fields_are_400s(void **state) {
  static const struct {
    const char *extra, *param;
  } CASES[] = {
      {"\"previous_response_id\":\"resp_1\"", "previous_response_id"},
      {"\"background\":true", "background"},
      {"\"store\":true", "store"},
      {"\"tools\":[{\"type\":\"web_search_preview\"}]", "tools"},
      {"\"tools\":[{\"type\":\"code_interpreter\",\"container\":{\"type\":\"auto\"}}]", "tools"},
      {"\"tools\":[{\"type\":\"mcp\",\"server_label\":\"x\"}]", "tools"},
      {"\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"x\",\"schema\":{}}}",
       "text.format"},
      {"\"tool_choice\":\"required\"", "tool_choice"},
      {"\"reasoning\":{\"summary\":\"auto\"}", "reasoning.summary"},
      {"\"reasoning\":{\"effort\":\"minimal\"}", "reasoning.effort"},
      {"\"include\":[\"reasoning.encrypted_content\"]", "include"},
      {"\"top_logprobs\":2", "top_logprobs"},
      {"\"max_output_tokens\":0", "max_output_tokens"},
      {"\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"x\",\"output\":\"1\"}]",
       "input"},
      {"\"input\":[{\"type\":\"item_reference\",\"id\":\"msg_1\"}]", "input"},
      {"\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\"}]}]", "input"},
  };
  ApiRequestContext c = context(*state);
  for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
    Buf body = {0};
    bool has_input = strstr(CASES[i].extra, "\"input\"") != NULL;
    buf_printf(&body, "{%s%s}", has_input ? "" : "\"input\":\"hi\",", CASES[i].extra);
    ApiRequest r;
    ApiResponsesInfo info;
    ApiError err = {0};
    assert_false(api_responses_parse(&r, &info, &c, body.data, body.len, &err));
    assert_int_equal(err.status, 400);
    assert_string_equal(err.param, CASES[i].param);
    assert_null(info.echo);
    buf_free(&body);
  }
}

// A /v1/responses answer written from output (harmony text), into out.
static void run_output(const Tokenizer *t, bool stream, const char *output, FinishReason finish,
                       Buf *out) {
  cJSON *echo = cJSON_CreateObject();
  cJSON_AddStringToObject(echo, "tool_choice", "auto");
  ApiResponsesInfo ri = {.echo = echo};
  ApiOutputInfo info = {.chat = true,
                        .stream = stream,
                        .request_id = 3,
                        .created = 9,
                        .model = "m",
                        .t = t,
                        .responses = &ri};
  output_script_run(t, &info, output, finish, out);
  cJSON_Delete(echo);
}

static const char *str_of(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItem(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static void test_whole_response_has_its_items(void **state) {
  Buf out = {0};
  run_output(*state, false,
             "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary "
             "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
             FINISH_STOP, &out);
  cJSON *r = cJSON_Parse(out.data);
  assert_string_equal(str_of(r, "object"), "response");
  assert_memory_equal(str_of(r, "id"), "resp_", 5);
  assert_string_equal(str_of(r, "status"), "completed");
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(r, "incomplete_details")));
  assert_string_equal(str_of(r, "tool_choice"), "auto");  // echoed
  cJSON *output = cJSON_GetObjectItem(r, "output");
  assert_int_equal(cJSON_GetArraySize(output), 2);
  cJSON *reasoning = cJSON_GetArrayItem(output, 0), *call = cJSON_GetArrayItem(output, 1);
  assert_string_equal(str_of(reasoning, "type"), "reasoning");
  cJSON *part = cJSON_GetArrayItem(cJSON_GetObjectItem(reasoning, "content"), 0);
  assert_string_equal(str_of(part, "type"), "reasoning_text");
  assert_string_equal(str_of(part, "text"), "Think.");
  assert_string_equal(str_of(call, "type"), "function_call");
  assert_string_equal(str_of(call, "name"), "get_weather");
  assert_string_equal(str_of(call, "arguments"), "{\"city\":\"Paris\"}");
  assert_memory_equal(str_of(call, "call_id"), "call_", 5);
  cJSON *usage = cJSON_GetObjectItem(r, "usage");
  assert_int_equal(cJSON_GetObjectItem(usage, "input_tokens")->valueint, 10);
  int n_out = cJSON_GetObjectItem(usage, "output_tokens")->valueint;
  assert_int_equal(cJSON_GetObjectItem(usage, "total_tokens")->valueint, 10 + n_out);
  int n_reasoning =
      cJSON_GetObjectItem(cJSON_GetObjectItem(usage, "output_tokens_details"), "reasoning_tokens")
          ->valueint;
  assert_true(n_reasoning > 0 && n_reasoning < n_out);
  cJSON_Delete(r);
  buf_free(&out);
}

static void test_cut_response_is_incomplete(void **state) {
  Buf out = {0};
  run_output(*state, false, "<|channel|>final<|message|>Par", FINISH_LENGTH, &out);
  cJSON *r = cJSON_Parse(out.data);
  assert_string_equal(str_of(r, "status"), "incomplete");
  assert_string_equal(str_of(cJSON_GetObjectItem(r, "incomplete_details"), "reason"),
                      "max_output_tokens");
  cJSON *msg = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "output"), 0);
  assert_string_equal(str_of(msg, "type"), "message");
  assert_string_equal(str_of(msg, "role"), "assistant");
  cJSON *text = cJSON_GetArrayItem(cJSON_GetObjectItem(msg, "content"), 0);
  assert_string_equal(str_of(text, "type"), "output_text");
  assert_string_equal(str_of(text, "text"), "Par");
  assert_true(cJSON_IsArray(cJSON_GetObjectItem(text, "annotations")));
  cJSON_Delete(r);
  buf_free(&out);
}

static void test_stream_events_come_in_vllms_order(void **state) {
  Buf out = {0};
  run_output(*state, true,
             "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
             "<|message|>Paris.<|return|>",
             FINISH_STOP, &out);
  // Collapse runs of one delta type: the order of the kinds of events is what must hold.
  Buf kinds = {0};
  Buf reasoning = {0}, text = {0};
  long seq = 0;
  const char *last = "";
  char *save, *copy = strdup(out.data);
  cJSON *events = cJSON_CreateArray();
  for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (strncmp(line, "event: ", 7) == 0) continue;
    assert_memory_equal(line, "data: ", 6);
    cJSON *e = cJSON_Parse(line + 6);
    assert_non_null(e);
    cJSON_AddItemToArray(events, e);
    assert_int_equal((long)cJSON_GetObjectItem(e, "sequence_number")->valuedouble, seq++);
    const char *type = str_of(e, "type");
    if (strcmp(type, last) != 0) buf_printf(&kinds, "%s\n", type + strlen("response."));
    last = type;
    if (!strcmp(type, "response.reasoning_text.delta"))
      buf_append_str(&reasoning, str_of(e, "delta"));
    if (!strcmp(type, "response.output_text.delta")) {
      buf_append_str(&text, str_of(e, "delta"));
      assert_int_equal(cJSON_GetObjectItem(e, "output_index")->valueint, 1);
      assert_int_equal(cJSON_GetObjectItem(e, "content_index")->valueint, 0);
    }
  }
  assert_string_equal(kinds.data,
                      "created\nin_progress\noutput_item.added\ncontent_part.added\n"
                      "reasoning_text.delta\nreasoning_text.done\ncontent_part.done\n"
                      "output_item.done\noutput_item.added\ncontent_part.added\n"
                      "output_text.delta\noutput_text.done\ncontent_part.done\n"
                      "output_item.done\ncompleted\n");
  assert_string_equal(reasoning.data, "Think.");
  assert_string_equal(text.data, "Paris.");
  cJSON *completed =
      cJSON_GetObjectItem(cJSON_GetArrayItem(events, cJSON_GetArraySize(events) - 1), "response");
  assert_string_equal(str_of(completed, "status"), "completed");
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(completed, "output")), 2);
  cJSON *created = cJSON_GetObjectItem(cJSON_GetArrayItem(events, 0), "response");
  assert_string_equal(str_of(created, "status"), "in_progress");
  assert_string_equal(str_of(created, "id"), str_of(completed, "id"));
  cJSON_Delete(events);
  free(copy);
  buf_free(&kinds);
  buf_free(&reasoning);
  buf_free(&text);
  buf_free(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_input_items_render_as_vllm_maps_them),
      cmocka_unit_test(test_refused_fields_are_400s),
      cmocka_unit_test(test_whole_response_has_its_items),
      cmocka_unit_test(test_cut_response_is_incomplete),
      cmocka_unit_test(test_stream_events_come_in_vllms_order),
  };
  return cmocka_run_group_tests(tests, harmony_setup, harmony_teardown);
}
