// test_api_tools.c: function tools and tool history rendered as vLLM renders them for gpt-oss:
// openai-harmony's own fixture (test-data/test_render_functions_with_parameters.txt: four tools
// whose schemas use descriptions, enums, defaults, arrays, titles, examples, nullable and oneOf)
// reproduced byte for byte; vLLM's system message (date, channels) with and without tools; chat
// history with reasoning, tool calls and tool outputs (vLLM's parse_chat_inputs_to_harmony_
// messages shapes, earlier analysis dropped); the 400s for tool fields; and tool calls read back
// out of harmony output, whole and streamed (vLLM's delta shapes, finish_reason "tool_calls").
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <string.h>

#include "../unit/harmony_fixture.h"
#include "api/api_chat.h"
#include "api/api_conversation.h"
#include "api/api_output.h"
#include "api/api_request.h"
#include "api/api_tools.h"
#include "output_script.h"

// Rendered ids must equal text encoded with special tokens allowed.
static void assert_ids_are_text(const Tokenizer *t, const TokenIds *ids, const char *text) {
  TokenIds want = {0};
  tok_encode(t, text, strlen(text), true, &want);
  Buf got = {0};
  tok_decode(t, ids->data, ids->len, &got);
  assert_string_equal(got.data, text);  // readable on failure
  assert_int_equal(ids->len, want.len);
  assert_memory_equal(ids->data, want.data, want.len * sizeof *want.data);
  buf_free(&got);
  token_ids_free(&want);
}

// harmony's tools, in chat's form (the order of keys is the fixture's).
static const char HARMONY_TOOLS[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_location\",\"description\":\"Gets the "
    "location of the user.\"}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"get_current_weather\",\"description\":\"Gets "
    "the current weather in the provided location.\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"location\":{\"type\":\"string\",\"description\":\"The city and state, e.g. "
    "San Francisco, CA\"},\"format\":{\"type\":\"string\",\"enum\":[\"celsius\",\"fahrenheit\"],"
    "\"default\":\"celsius\"}},\"required\":[\"location\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"get_multiple_weathers\",\"description\":"
    "\"Gets the current weather in the provided list of locations.\",\"parameters\":{\"type\":"
    "\"object\",\"properties\":{\"locations\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
    "\"description\":\"List of city and state, e.g. [\\\"San Francisco, CA\\\", \\\"New York, "
    "NY\\\"]\"},\"format\":{\"type\":\"string\",\"enum\":[\"celsius\",\"fahrenheit\"],\"default\":"
    "\"celsius\"}},\"required\":[\"locations\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"kitchensink\",\"description\":\"A function "
    "with various complex schemas.\",\"parameters\":{\"description\":\"params object\",\"type\":"
    "\"object\",\"properties\":{\"string\":{\"type\":\"string\",\"title\":\"STRING\","
    "\"description\":\"A string\",\"examples\":[\"hello\",\"world\"]},\"string_nullable\":{"
    "\"type\":\"string\",\"nullable\":true,\"description\":\"A nullable string\",\"default\":"
    "\"the default\"},\"string_enum\":{\"type\":\"string\",\"enum\":[\"a\",\"b\",\"c\"]},"
    "\"oneof_string_or_number\":{\"oneOf\":[{\"type\":\"string\",\"default\":"
    "\"default_string_in_oneof\"},{\"type\":\"number\",\"description\":\"numbers can happen "
    "too\"}],\"description\":\"a oneof\",\"default\":20}}}}}]";

// test-data/test_render_functions_with_parameters.txt of openai/harmony, verbatim.
static const char HARMONY_FIXTURE[] =
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
    "Knowledge cutoff: 2024-06\nCurrent date: 2025-06-28\n\nReasoning: high\n\n"
    "# Valid channels: analysis, commentary, final. Channel must be included for every message.\n"
    "Calls to these tools must go to the commentary channel: 'functions'.<|end|>"
    "<|start|>developer<|message|># Instructions\n\nAlways respond in riddles\n\n# Tools\n\n"
    "## functions\n\nnamespace functions {\n\n"
    "// Gets the location of the user.\ntype get_location = () => any;\n\n"
    "// Gets the current weather in the provided location.\n"
    "type get_current_weather = (_: {\n// The city and state, e.g. San Francisco, CA\n"
    "location: string,\nformat?: \"celsius\" | \"fahrenheit\", // default: celsius\n}) => any;\n\n"
    "// Gets the current weather in the provided list of locations.\n"
    "type get_multiple_weathers = (_: {\n"
    "// List of city and state, e.g. [\"San Francisco, CA\", \"New York, NY\"]\n"
    "locations: string[],\nformat?: \"celsius\" | \"fahrenheit\", // default: celsius\n"
    "}) => any;\n\n"
    "// A function with various complex schemas.\ntype kitchensink = (_: // params object\n{\n"
    "// STRING\n//\n// A string\n// Examples:\n// - \"hello\"\n// - \"world\"\nstring?: string,\n"
    "// A nullable string\nstring_nullable?: string | null, // default: \"the default\"\n"
    "string_enum?: \"a\" | \"b\" | \"c\",\n// a oneof\n// default: 20\n"
    "oneof_string_or_number?:\n | string // default: \"default_string_in_oneof\"\n"
    " | number // numbers can happen too\n,\n}) => any;\n\n"
    "} // namespace functions<|end|><|start|>user<|message|>What is the weather like in SF?<|end|>"
    "<|start|>assistant";

static void test_tools_render_as_harmony_renders_them(void **state) {
  cJSON *json = cJSON_Parse(HARMONY_TOOLS);
  ApiTools tools;
  ApiError err;
  assert_true(api_tools_parse(json, true, &tools, &err));
  assert_int_equal(tools.num_items, 4);
  ApiConversation c = {0};
  api_conv_add(&c, "user", NULL, NULL, NULL, "What is the weather like in SF?");
  ApiPreamble p = {.current_date = "2025-06-28",
                   .reasoning_effort = "high",
                   .instructions = "Always respond in riddles",
                   .tools = &tools};
  TokenIds ids = {0};
  api_conv_render(&c, &p, *state, &ids);
  assert_ids_are_text(*state, &ids, HARMONY_FIXTURE);
  token_ids_free(&ids);
  api_conv_free(&c);
  api_tools_free(&tools);
  cJSON_Delete(json);
}

// Renders a chat request's messages (and tools) with a fixed date.
static bool render_chat(const Tokenizer *t, const char *messages, const char *tools_json,
                        TokenIds *out, ApiError *err) {
  cJSON *m = cJSON_Parse(messages), *tj = tools_json ? cJSON_Parse(tools_json) : NULL;
  ApiTools tools = {0};
  assert_true(api_tools_parse(tj, true, &tools, err));
  ApiChatOptions o = {.current_date = "2026-12-04", .tools = &tools};
  bool ok = api_chat_render(m, &o, t, out, err);
  api_tools_free(&tools);
  cJSON_Delete(m);
  cJSON_Delete(tj);
  return ok;
}

static const char SYSTEM_NO_TOOLS[] =
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
    "Knowledge cutoff: 2024-06\nCurrent date: 2026-12-04\n\nReasoning: medium\n\n"
    "# Valid channels: analysis, final. Channel must be included for every message.<|end|>";

static void test_chat_without_tools_is_vllms_system_message(void **state) {
  TokenIds ids = {0};
  ApiError err;
  assert_true(render_chat(*state, "[{\"role\":\"user\",\"content\":\"Hi\"}]", NULL, &ids, &err));
  Buf want = {0};
  buf_printf(&want, "%s<|start|>user<|message|>Hi<|end|><|start|>assistant", SYSTEM_NO_TOOLS);
  assert_ids_are_text(*state, &ids, want.data);
  buf_free(&want);
  token_ids_free(&ids);
}

static const char ONE_TOOL[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather "
    "now.\\nIn Celsius.\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
    "\"string\"},\"days\":{\"type\":\"integer\",\"default\":1}},\"required\":[\"city\"]}}}]";

// A tool round trip: the call (with its reasoning) and the tool's output, then the next turn.
// An earlier turn's reasoning is dropped: it precedes the last final answer.
static void test_chat_tool_history_renders_as_vllm_does(void **state) {
  const char *messages =
      "[{\"role\":\"system\",\"content\":\"Be brief.\"},"
      "{\"role\":\"user\",\"content\":\"Hi\"},"
      "{\"role\":\"assistant\",\"reasoning\":\"Greet.\",\"content\":\"Hello!\"},"
      "{\"role\":\"user\",\"content\":\"Weather in Paris?\"},"
      "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"Need the tool.\","
      "\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":"
      "\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},"
      "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":[{\"type\":\"text\",\"text\":"
      "\"{\\\"temp\\\":21}\"}]}]";
  TokenIds ids = {0};
  ApiError err;
  assert_true(render_chat(*state, messages, ONE_TOOL, &ids, &err));
  assert_ids_are_text(
      *state, &ids,
      "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
      "Knowledge cutoff: 2024-06\nCurrent date: 2026-12-04\n\nReasoning: medium\n\n"
      "# Valid channels: analysis, commentary, final. Channel must be included for every "
      "message.\nCalls to these tools must go to the commentary channel: 'functions'.<|end|>"
      "<|start|>developer<|message|># Instructions\n\nBe brief.\n\n# Tools\n\n## functions\n\n"
      "namespace functions {\n\n// Weather now.\n// In Celsius.\ntype get_weather = (_: {\n"
      "city: string,\ndays?: number, // default: 1\n}) => any;\n\n} // namespace functions<|end|>"
      "<|start|>user<|message|>Hi<|end|>"
      "<|start|>assistant<|channel|>final<|message|>Hello!<|end|>"
      "<|start|>user<|message|>Weather in Paris?<|end|>"
      "<|start|>assistant<|channel|>analysis<|message|>Need the tool.<|end|>"
      "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
      "{\"city\":\"Paris\"}<|call|>"
      "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"
      "{\"temp\":21}<|end|><|start|>assistant");
  token_ids_free(&ids);
}

static void test_tool_faults_are_400s(void **state) {
  static const struct {
    const char *messages, *tools, *param;
  } CASES[] = {
      {"[{\"role\":\"tool\",\"tool_call_id\":\"nope\",\"content\":\"x\"}]", NULL, "messages"},
      {"[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"a\",\"function\":{}}]}]", NULL,
       "messages"},
      {"[{\"role\":\"user\",\"content\":\"x\"}]", "[{\"type\":\"web_search_preview\"}]", "tools"},
      {"[{\"role\":\"user\",\"content\":\"x\"}]", "[{\"type\":\"function\",\"function\":{}}]",
       "tools"},
      {"[{\"role\":\"user\",\"content\":\"x\"}]",
       "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":[1]}}]", "tools"},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
    cJSON *m = cJSON_Parse(CASES[i].messages),
          *tj = CASES[i].tools ? cJSON_Parse(CASES[i].tools) : NULL;
    ApiTools tools = {0};
    ApiError err = {0};
    TokenIds ids = {0};
    bool ok = api_tools_parse(tj, true, &tools, &err);
    if (ok) {
      ApiChatOptions o = {.current_date = "2026-12-04", .tools = &tools};
      ok = api_chat_render(m, &o, *state, &ids, &err);
    }
    assert_false(ok);
    assert_int_equal(err.status, 400);
    assert_string_equal(err.param, CASES[i].param);
    api_tools_free(&tools);
    token_ids_free(&ids);
    cJSON_Delete(m);
    cJSON_Delete(tj);
  }
}

static void test_tool_choice_fields(void **state) {
  ApiRequestContext ctx = {
      .model = "m", .t = *state, .max_model_len = 4096, .current_date = "2026-12-04"};
  static const struct {
    const char *extra;
    unsigned status;
    bool tools_in_prompt;
  } CASES[] = {
      {"", 200, true},
      {",\"tool_choice\":\"auto\",\"parallel_tool_calls\":false", 200, true},
      {",\"tool_choice\":\"none\"", 200, false},  // vLLM leaves the tools out
      {",\"tool_choice\":\"required\"", 400, false},
      {",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}", 400,
       false},
      {",\"parallel_tool_calls\":\"yes\"", 400, false},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
    Buf body = {0};
    buf_printf(&body, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":%s%s}",
               ONE_TOOL, CASES[i].extra);
    ApiRequest r;
    ApiError err = {0};
    bool ok = api_request_parse(&r, &ctx, true, body.data, body.len, &err);
    assert_int_equal(ok ? 200 : err.status, CASES[i].status);
    if (ok) {
      Buf prompt = {0};
      tok_decode(*state, r.prompt.data, r.prompt.len, &prompt);
      assert_int_equal(strstr(prompt.data, "namespace functions") != NULL,
                       CASES[i].tools_in_prompt);
      buf_free(&prompt);
      api_request_free(&r);
    } else {
      assert_string_equal(err.param, i == 5 ? "parallel_tool_calls" : "tool_choice");
    }
    buf_free(&body);
  }
}

// ---- tool calls out of the model's output ---------------------------------------------------

static const char CALL_OUTPUT[] =
    "<|channel|>analysis<|message|>Need the tool.<|end|><|start|>assistant<|channel|>commentary "
    "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>";

// A chat answer written from output (harmony text), into out.
static void run_output(const Tokenizer *t, bool stream, const char *output, Buf *out) {
  ApiOutputInfo info = {
      .chat = true, .stream = stream, .request_id = 7, .created = 1, .model = "m", .t = t};
  output_script_run(t, &info, output, FINISH_STOP, out);
}

static void test_whole_answer_carries_tool_calls(void **state) {
  Buf out = {0};
  run_output(*state, false, CALL_OUTPUT, &out);
  cJSON *body = cJSON_Parse(out.data);
  cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItem(body, "choices"), 0);
  cJSON *msg = cJSON_GetObjectItem(choice, "message");
  assert_string_equal(cJSON_GetObjectItem(choice, "finish_reason")->valuestring, "tool_calls");
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(msg, "content")));
  assert_string_equal(cJSON_GetObjectItem(msg, "reasoning_content")->valuestring, "Need the tool.");
  cJSON *calls = cJSON_GetObjectItem(msg, "tool_calls");
  assert_int_equal(cJSON_GetArraySize(calls), 1);
  cJSON *call = cJSON_GetArrayItem(calls, 0);
  assert_string_equal(cJSON_GetObjectItem(call, "type")->valuestring, "function");
  assert_memory_equal(cJSON_GetObjectItem(call, "id")->valuestring, "chatcmpl-tool-", 14);
  cJSON *fn = cJSON_GetObjectItem(call, "function");
  assert_string_equal(cJSON_GetObjectItem(fn, "name")->valuestring, "get_weather");
  assert_string_equal(cJSON_GetObjectItem(fn, "arguments")->valuestring, "{\"city\":\"Paris\"}");
  cJSON_Delete(body);
  buf_free(&out);
}

static void test_stream_carries_tool_call_deltas(void **state) {
  Buf out = {0};
  run_output(*state, true, CALL_OUTPUT, &out);
  Buf args = {0};
  int num_starts = 0;
  const char *finish = NULL;
  char *save, *text = strdup(out.data);
  cJSON *chunks = cJSON_CreateArray();
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (strncmp(line, "data: {", 7) != 0) continue;
    cJSON *chunk = cJSON_Parse(line + 6);
    cJSON_AddItemToArray(chunks, chunk);
    cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItem(chunk, "choices"), 0);
    cJSON *f = cJSON_GetObjectItem(choice, "finish_reason");
    if (cJSON_IsString(f)) finish = f->valuestring;
    cJSON *call = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(choice, "delta"), "tool_calls"), 0);
    if (!call) continue;
    assert_int_equal(cJSON_GetObjectItem(call, "index")->valueint, 0);
    cJSON *fn = cJSON_GetObjectItem(call, "function");
    if (cJSON_GetObjectItem(call, "id")) {  // the first delta of a call
      num_starts++;
      assert_string_equal(cJSON_GetObjectItem(call, "type")->valuestring, "function");
      assert_string_equal(cJSON_GetObjectItem(fn, "name")->valuestring, "get_weather");
      assert_string_equal(cJSON_GetObjectItem(fn, "arguments")->valuestring, "");
    } else {
      assert_null(cJSON_GetObjectItem(fn, "name"));
    }
    buf_append_str(&args, cJSON_GetObjectItem(fn, "arguments")->valuestring);
  }
  assert_int_equal(num_starts, 1);
  assert_string_equal(args.data, "{\"city\":\"Paris\"}");
  assert_non_null(finish);
  assert_string_equal(finish, "tool_calls");
  assert_non_null(strstr(out.data, "\"reasoning_content\":\"Need\""));
  assert_null(strstr(out.data, "\"content\":\"{"));  // arguments never leak into content
  cJSON_Delete(chunks);
  free(text);
  buf_free(&args);
  buf_free(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tools_render_as_harmony_renders_them),
      cmocka_unit_test(test_chat_without_tools_is_vllms_system_message),
      cmocka_unit_test(test_chat_tool_history_renders_as_vllm_does),
      cmocka_unit_test(test_tool_faults_are_400s),
      cmocka_unit_test(test_tool_choice_fields),
      cmocka_unit_test(test_whole_answer_carries_tool_calls),
      cmocka_unit_test(test_stream_carries_tool_call_deltas),
  };
  return cmocka_run_group_tests(tests, harmony_setup, harmony_teardown);
}
