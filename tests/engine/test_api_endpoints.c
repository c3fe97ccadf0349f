// test_api_endpoints.c: /tokenize, /detokenize, /v1/models/{id}, /version and the error body,
// against known o200k_harmony ids ("Hello" 13225, " world" 2375, "<|start|>" 200006,
// "assistant" 173781), GPT-2's byte-to-unicode table (what Hugging Face's convert_ids_to_tokens
// gives vLLM's token_strs), vLLM's TokenizeResponse/DetokenizeResponse shapes and OpenAI's error
// body (code a string or null).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "api/api_error.h"
#include "api/api_models.h"
#include "api/api_tokenize.h"
#include "text/utf8.h"

static Tokenizer tok;

static int group_setup(void **state) {
  (void)state;
  char err[512];
  if (!tok_init(&tok, TOK_O200K_HARMONY, NULL, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  tok_free(&tok);
  return 0;
}

static const ApiRequestContext CTX = {.model = "m", .t = &tok, .max_model_len = 4096};

static cJSON *call(ApiTextRoute route, const char *body, ApiError *err) {
  return api_tokenize_answer(route, &CTX, body, strlen(body), err);
}

// The answer's JSON text, compact.
static void assert_answer(ApiTextRoute route, const char *body, const char *want) {
  ApiError err = {0};
  cJSON *a = call(route, body, &err);
  if (!a) fail_msg("%s: %u %s", body, err.status, err.message);
  char *text = cJSON_PrintUnformatted(a);
  assert_string_equal(text, want);
  cJSON_free(text);
  cJSON_Delete(a);
}

static void assert_refused(ApiTextRoute route, const char *body, unsigned status,
                           const char *param) {
  ApiError err = {0};
  cJSON *a = call(route, body, &err);
  if (a) fail_msg("%s was answered", body);
  assert_int_equal(err.status, status);
  assert_string_equal(err.param, param);
  assert_true(err.message[0]);
}

static void test_routes(void **state) {
  (void)state;
  assert_int_equal(api_tokenize_route("/tokenize"), API_TEXT_TOKENIZE);
  assert_int_equal(api_tokenize_route("/detokenize"), API_TEXT_DETOKENIZE);
  assert_int_equal(api_tokenize_route("/tokenize/x"), API_TEXT_NONE);
  assert_int_equal(api_tokenize_route("/v1/tokenize"), API_TEXT_NONE);
}

static void test_tokenize_prompt(void **state) {
  (void)state;
  assert_answer(API_TEXT_TOKENIZE, "{\"prompt\": \"Hello world\"}",
                "{\"count\":2,\"max_model_len\":4096,\"tokens\":[13225,2375],\"token_strs\":null}");
  assert_answer(API_TEXT_TOKENIZE,
                "{\"model\": \"m\", \"prompt\": \"Hello world\", \"return_token_strs\": true, "
                "\"add_special_tokens\": false}",
                "{\"count\":2,\"max_model_len\":4096,\"tokens\":[13225,2375],"
                "\"token_strs\":[\"Hello\",\"\xC4\xA0world\"]}");  // "Ġworld"
  // Special-token text is plain text, as /v1/completions encodes it: not 200006.
  ApiError err = {0};
  cJSON *a = call(API_TEXT_TOKENIZE, "{\"prompt\": \"<|start|>\"}", &err);
  assert_non_null(a);
  assert_true(cJSON_GetObjectItem(a, "count")->valueint > 1);
  cJSON_Delete(a);
}

// The token string of the one id text encodes to.
static void assert_token_str(const char *text, size_t n, const char *want) {
  TokenIds ids = {0};
  tok_encode(&tok, text, n, false, &ids);
  assert_int_equal(ids.len, 1);
  Buf out = {0};
  assert_true(api_tokenize_token_str(&tok, ids.data[0], &out));
  buf_append_byte(&out, '\0');
  assert_string_equal(out.data, want);
  buf_free(&out);
  token_ids_free(&ids);
}

static void test_token_strs(void **state) {
  (void)state;
  // GPT-2's bytes_to_unicode: 0x00 -> U+0100, 0x01 -> U+0101, ' ' -> U+0120 (the 33rd
  // non-printable), 0x7F -> U+0121, 0xAD -> U+0143; printable bytes stand for themselves.
  assert_token_str("\x00", 1, "\xC4\x80");
  assert_token_str("\x01", 1, "\xC4\x81");
  assert_token_str(" ", 1, "\xC4\xA0");
  assert_token_str("\x7F", 1, "\xC4\xA1");
  assert_token_str("\xAD", 1, "\xC5\x83");
  assert_token_str("\xFF", 1, "\xC3\xBF");  // 0xFF is printable Latin-1: U+00FF
  assert_token_str("A", 1, "A");
  Buf out = {0};
  assert_true(api_tokenize_token_str(&tok, 200006, &out));
  buf_append_byte(&out, '\0');
  assert_string_equal(out.data, "<|start|>");
  buf_free(&out);
  assert_false(api_tokenize_token_str(&tok, tok.vocab_size, &out));
}

// The "tokens" of a chat /tokenize answer.
static TokenIds chat_tokens(const char *extra) {
  char body[512];
  snprintf(body, sizeof body, "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]%s}",
           extra);
  ApiError err = {0};
  cJSON *a = call(API_TEXT_TOKENIZE, body, &err);
  if (!a) fail_msg("%s: %s", body, err.message);
  TokenIds ids = {0};
  const cJSON *id;
  cJSON_ArrayForEach(id, cJSON_GetObjectItem(a, "tokens"))
      token_ids_push(&ids, (uint32_t)id->valuedouble);
  assert_int_equal(cJSON_GetObjectItem(a, "count")->valueint, (int)ids.len);
  cJSON_Delete(a);
  return ids;
}

static void test_tokenize_chat(void **state) {
  (void)state;
  TokenIds full = chat_tokens("");
  assert_true(full.len > 4);
  assert_int_equal(full.data[0], 200006);             // <|start|>system...
  assert_int_equal(full.data[full.len - 2], 200006);  // ...<|start|>assistant
  assert_int_equal(full.data[full.len - 1], 173781);
  TokenIds bare = chat_tokens(", \"add_generation_prompt\": false");
  assert_int_equal(bare.len, full.len - 2);
  assert_memory_equal(bare.data, full.data, bare.len * sizeof *bare.data);
  assert_int_equal(bare.data[bare.len - 1], 200007);  // the user message's <|end|>
  TokenIds low = chat_tokens(", \"chat_template_kwargs\": {\"reasoning_effort\": \"low\"}");
  assert_int_equal(low.len, full.len);  // "Reasoning: medium" -> "Reasoning: low": one token
  assert_memory_not_equal(low.data, full.data, low.len * sizeof *low.data);
  token_ids_free(&full);
  token_ids_free(&bare);
  token_ids_free(&low);
}

static void test_tokenize_refusals(void **state) {
  (void)state;
  const char *m = "\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]";
  char b[512];
  assert_refused(API_TEXT_TOKENIZE, "{}", 400, "");
  assert_refused(API_TEXT_TOKENIZE, "{\"prompt\": [\"a\"]}", 400, "prompt");
  assert_refused(API_TEXT_TOKENIZE, "{\"prompt\": 5}", 400, "prompt");
  assert_refused(API_TEXT_TOKENIZE, "{\"prompt\": \"a\", \"model\": \"x\"}", 404, "model");
  assert_refused(API_TEXT_TOKENIZE, "{\"prompt\": \"a\", \"return_token_strs\": 1}", 400,
                 "return_token_strs");
  assert_refused(API_TEXT_TOKENIZE, "{\"prompt\": \"a\", \"add_special_tokens\": \"no\"}", 400,
                 "add_special_tokens");
  assert_refused(API_TEXT_TOKENIZE, "{\"prompt\": \"a\\u0000b\"}", 400, "");
  assert_refused(API_TEXT_TOKENIZE, "[1]", 400, "");
  assert_refused(API_TEXT_TOKENIZE, "{\"messages\": \"hi\"}", 400, "messages");
  snprintf(b, sizeof b, "{%s, \"continue_final_message\": true}", m);
  assert_refused(API_TEXT_TOKENIZE, b, 400, "continue_final_message");  // with the default
  snprintf(b, sizeof b, "{%s, \"continue_final_message\": true, \"add_generation_prompt\": false}",
           m);
  assert_refused(API_TEXT_TOKENIZE, b, 400, "continue_final_message");  // not supported
  snprintf(b, sizeof b, "{%s, \"tools\": [{\"type\": \"function\"}]}", m);
  assert_refused(API_TEXT_TOKENIZE, b, 400, "tools");
  snprintf(b, sizeof b, "{%s, \"chat_template\": \"{{x}}\"}", m);
  assert_refused(API_TEXT_TOKENIZE, b, 400, "chat_template");
  snprintf(b, sizeof b, "{%s, \"chat_template_kwargs\": {\"enable_thinking\": true}}", m);
  assert_refused(API_TEXT_TOKENIZE, b, 400, "chat_template_kwargs");
  snprintf(b, sizeof b, "{%s, \"chat_template_kwargs\": {\"reasoning_effort\": 2}}", m);
  assert_refused(API_TEXT_TOKENIZE, b, 400, "chat_template_kwargs");
}

static void test_detokenize(void **state) {
  (void)state;
  assert_answer(API_TEXT_DETOKENIZE, "{\"tokens\": [13225, 2375, 200006]}",
                "{\"prompt\":\"Hello world<|start|>\"}");
  assert_answer(API_TEXT_DETOKENIZE, "{\"tokens\": []}", "{\"prompt\":\"\"}");
  TokenIds half = {0};  // the lone first byte of "é": never a character, so U+FFFD
  tok_encode(&tok, "\xC3", 1, false, &half);
  char body[64];
  snprintf(body, sizeof body, "{\"tokens\": [%u]}", half.data[0]);
  assert_answer(API_TEXT_DETOKENIZE, body, "{\"prompt\":\"" UTF8_REPLACEMENT "\"}");
  token_ids_free(&half);
  assert_refused(API_TEXT_DETOKENIZE, "{}", 400, "tokens");
  assert_refused(API_TEXT_DETOKENIZE, "{\"tokens\": \"hi\"}", 400, "tokens");
  assert_refused(API_TEXT_DETOKENIZE, "{\"tokens\": [1, -1]}", 400, "tokens");
  assert_refused(API_TEXT_DETOKENIZE, "{\"tokens\": [1.5]}", 400, "tokens");
  assert_refused(API_TEXT_DETOKENIZE, "{\"tokens\": [\"1\"]}", 400, "tokens");
  snprintf(body, sizeof body, "{\"tokens\": [%u]}", tok.vocab_size);
  assert_refused(API_TEXT_DETOKENIZE, body, 400, "tokens");
  assert_refused(API_TEXT_DETOKENIZE, "{\"tokens\": [1], \"model\": 3}", 400, "model");
}

static void test_models_and_version(void **state) {
  (void)state;
  ApiModelInfo m = {.id = "gpt-oss-tiny", .created = 1700000000, .max_model_len = 4096};
  ApiError err = {0};
  cJSON *model = api_models_get(&m, "gpt-oss-tiny", &err);
  char *text = cJSON_PrintUnformatted(model);
  assert_string_equal(text,
                      "{\"id\":\"gpt-oss-tiny\",\"object\":\"model\",\"created\":1700000000,"
                      "\"owned_by\":\"gptoss-engine\",\"root\":\"gpt-oss-tiny\",\"parent\":null,"
                      "\"max_model_len\":4096}");
  cJSON_free(text);
  cJSON_Delete(model);
  assert_null(api_models_get(&m, "gpt-oss-120b", &err));
  cJSON *body = api_error_body(&err);
  text = cJSON_PrintUnformatted(body);
  assert_string_equal(text,
                      "{\"error\":{\"message\":\"The model `gpt-oss-120b` does not exist.\","
                      "\"type\":\"NotFoundError\",\"param\":null,\"code\":\"model_not_found\"}}");
  cJSON_free(text);
  cJSON_Delete(body);
  cJSON *v = api_models_version();
  assert_string_equal(cJSON_GetObjectItem(v, "version")->valuestring, API_ENGINE_VERSION);
  cJSON_Delete(v);
}

static void test_error_codes(void **state) {
  (void)state;
  ApiError e;
  api_error(&e, 401, NULL, "Incorrect or missing API key");
  cJSON *body = api_error_body(&e);
  char *text = cJSON_PrintUnformatted(body);
  assert_string_equal(text,
                      "{\"error\":{\"message\":\"Incorrect or missing API key\",\"type\":"
                      "\"AuthenticationError\",\"param\":null,\"code\":\"invalid_api_key\"}}");
  cJSON_free(text);
  cJSON_Delete(body);
  api_error(&e, 400, "top_p", "top_p must be in (0, 1]");
  body = api_error_body(&e);
  text = cJSON_PrintUnformatted(body);
  assert_string_equal(text,
                      "{\"error\":{\"message\":\"top_p must be in (0, 1]\",\"type\":"
                      "\"BadRequestError\",\"param\":\"top_p\",\"code\":null}}");
  cJSON_free(text);
  cJSON_Delete(body);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_routes),
      cmocka_unit_test(test_tokenize_prompt),
      cmocka_unit_test(test_token_strs),
      cmocka_unit_test(test_tokenize_chat),
      cmocka_unit_test(test_tokenize_refusals),
      cmocka_unit_test(test_detokenize),
      cmocka_unit_test(test_models_and_version),
      cmocka_unit_test(test_error_codes),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
