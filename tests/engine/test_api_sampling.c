// test_api_sampling.c: the sampling and output fields of chat and completions requests, without
// HTTP: api_request_parse turns the penalties, logit_bias, min_tokens, stop_token_ids and
// logprobs fields into EngineRequestParams with vLLM's ranges and error messages, refuses every
// field that would change the output and is not implemented (400 naming it) and accepts those
// that change nothing; api_output writes logprobs in OpenAI's chat and completions shapes, whole
// and streamed, from hand-made token events; stop strings held back while they may still match,
// cut before the match (or after it with include_stop_str_in_output), finish_reason "stop" and
// stop_reason the string, the engine request aborted; echo prefixing each choice with its own
// prompt's text; continuous_usage_stats putting usage on every chunk; n > 1 and lists of prompts
// fan out to one engine request per choice (seeds, prompts, indices as vLLM's) and back into one
// answer through the dispatcher and the engine double (fake_engine.h), aborts reaching every
// choice.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_dispatch.h"
#include "api/api_output.h"
#include "api/api_request.h"
#include "api/api_stop.h"
#include "fake_engine.h"

static Tokenizer tokenizer;

static int group_setup(void **state) {
  (void)state;
  char err[1024];
  if (!tok_init(&tokenizer, TOK_O200K_HARMONY, NULL, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  tok_free(&tokenizer);
  return 0;
}

static const ApiRequestContext CONTEXT = {.model = "m", .t = &tokenizer, .max_model_len = 4096};

static bool parse(bool chat, const char *body, ApiRequest *r, ApiError *err) {
  return api_request_parse(r, &CONTEXT, chat, body, strlen(body), err);
}

// A value inside j by keys and array indices given as strings ("choices", "0", "text").
static const cJSON *get(const cJSON *j, ...) {
  va_list ap;
  va_start(ap, j);
  for (const char *k; j && (k = va_arg(ap, const char *));)
    j = k[0] >= '0' && k[0] <= '9' ? cJSON_GetArrayItem(j, atoi(k))
                                   : cJSON_GetObjectItemCaseSensitive(j, k);
  va_end(ap);
  return j;
}

// ---- parsing --------------------------------------------------------------------------------

static void test_sampling_fields_reach_the_engine(void **state) {
  (void)state;
  ApiRequest r;
  ApiError err;
  const char *body =
      "{\"prompt\":\"x\",\"presence_penalty\":0.5,\"frequency_penalty\":-1.5,"
      "\"repetition_penalty\":1.2,\"min_tokens\":3,\"max_tokens\":9,"
      "\"logit_bias\":{\"42\":250,\"7\":-3.5},\"stop_token_ids\":[200007,5],\"logprobs\":4}";
  assert_true(parse(false, body, &r, &err));
  const EngineRequestParams *p = &r.params;
  assert_float_equal(p->sampling.presence_penalty, 0.5, 1e-6);
  assert_float_equal(p->sampling.frequency_penalty, -1.5, 1e-6);
  assert_float_equal(p->sampling.repetition_penalty, 1.2, 1e-6);
  assert_int_equal(p->sampling.min_tokens, 3);
  assert_int_equal(p->num_logit_bias, 2);
  assert_int_equal(p->logit_bias[0].token_id, 42);
  assert_float_equal(p->logit_bias[0].bias, 100, 0);  // clamped to [-100, 100] as vLLM does
  assert_int_equal(p->logit_bias[1].token_id, 7);
  assert_float_equal(p->logit_bias[1].bias, -3.5, 0);
  assert_int_equal(p->num_stop_token_ids, 2);
  assert_int_equal(p->stop_token_ids[0], 200007);
  assert_int_equal(p->stop_token_ids[1], 5);
  assert_true(p->logprobs);
  assert_int_equal(p->num_top_logprobs, 4);
  api_request_free(&r);
  // defaults: no penalty, no bias, no logprobs
  assert_true(parse(true, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &r, &err));
  assert_float_equal(r.params.sampling.repetition_penalty, 1, 0);
  assert_float_equal(r.params.sampling.presence_penalty, 0, 0);
  assert_int_equal(r.params.num_logit_bias, 0);
  assert_false(r.params.logprobs);
  api_request_free(&r);
  // chat: logprobs true with top_logprobs
  assert_true(parse(true,
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logprobs\":true,"
                    "\"top_logprobs\":20}",
                    &r, &err));
  assert_true(r.params.logprobs);
  assert_int_equal(r.params.num_top_logprobs, 20);
  api_request_free(&r);
}

typedef struct {
  bool chat;
  const char *fields;  // spliced into the body after the prompt or messages
  const char *param;   // NULL: accepted
} FieldCase;

static void check_cases(const FieldCase *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char body[512];
    snprintf(
        body, sizeof body, "{%s,%s}",
        cases[i].chat ? "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]" : "\"prompt\":\"x\"",
        cases[i].fields);
    ApiRequest r;
    ApiError err = {0};
    bool ok = parse(cases[i].chat, body, &r, &err);
    if (ok != !cases[i].param)
      fail_msg("%s: %s (%s)", body, ok ? "accepted" : "refused", err.message);
    if (ok) {
      api_request_free(&r);
      continue;
    }
    assert_int_equal(err.status, 400);
    if (strcmp(err.param, cases[i].param) != 0)
      fail_msg("%s: param %s, wanted %s", body, err.param, cases[i].param);
    if (!strstr(err.message, cases[i].param))  // the message names it too
      fail_msg("%s: message \"%s\" does not name %s", body, err.message, cases[i].param);
  }
}

static void test_sampling_field_errors(void **state) {
  (void)state;
  const FieldCase cases[] = {
      {false, "\"presence_penalty\":2.5", "presence_penalty"},
      {false, "\"frequency_penalty\":-2.01", "frequency_penalty"},
      {false, "\"frequency_penalty\":\"a\"", "frequency_penalty"},
      {false, "\"repetition_penalty\":0", "repetition_penalty"},
      {false, "\"min_tokens\":-1", "min_tokens"},
      {false, "\"min_tokens\":1.5", "min_tokens"},
      {false, "\"logit_bias\":[1]", "logit_bias"},
      {false, "\"logit_bias\":{\"abc\":1}", "logit_bias"},
      {false, "\"logit_bias\":{\"201088\":1}", "logit_bias"},
      {false, "\"logit_bias\":{\"-1\":1}", "logit_bias"},
      {false, "\"logit_bias\":{\"5\":\"high\"}", "logit_bias"},
      {false, "\"stop_token_ids\":[1.5]", "stop_token_ids"},
      {false, "\"stop_token_ids\":[201088]", "stop_token_ids"},
      {false, "\"stop_token_ids\":7", "stop_token_ids"},
      {false, "\"logprobs\":21", "logprobs"},
      {false, "\"logprobs\":-1", "logprobs"},
      {false, "\"logprobs\":true", "logprobs"},
      {true, "\"logprobs\":1", "logprobs"},
      {true, "\"top_logprobs\":2", "top_logprobs"},  // without logprobs true
      {true, "\"logprobs\":true,\"top_logprobs\":21", "top_logprobs"},
      {true, "\"logprobs\":true,\"top_logprobs\":-1", "top_logprobs"},
      {false, "\"presence_penalty\":-2,\"frequency_penalty\":2,\"repetition_penalty\":0.01", NULL},
      {false, "\"logit_bias\":{},\"stop_token_ids\":[],\"logprobs\":0,\"min_tokens\":0", NULL},
      {true, "\"logprobs\":false,\"top_logprobs\":0", NULL},
  };
  check_cases(cases, sizeof cases / sizeof *cases);
}

// Fields that would change the output and are not implemented are refused by name; their
// defaults, and fields that change nothing, are accepted.
static void test_unsupported_fields_are_refused(void **state) {
  (void)state;
  const FieldCase cases[] = {
      {false, "\"best_of\":2", "best_of"},
      {false, "\"suffix\":\"end\"", "suffix"},
      {false, "\"echo\":true,\"logprobs\":1", "echo"},  // needs prompt logprobs
      {true, "\"echo\":true", "echo"},
      {false, "\"use_beam_search\":true", "use_beam_search"},
      {false, "\"min_p\":0.1", "min_p"},
      {false, "\"prompt_logprobs\":1", "prompt_logprobs"},
      {false, "\"allowed_token_ids\":[1,2]", "allowed_token_ids"},
      {false, "\"bad_words\":[\"x\"]", "bad_words"},
      {false, "\"skip_special_tokens\":false", "skip_special_tokens"},
      {false, "\"truncate_prompt_tokens\":5", "truncate_prompt_tokens"},
      {false, "\"return_tokens_as_token_ids\":true", "return_tokens_as_token_ids"},
      {false, "\"priority\":1", "priority"},
      {true, "\"response_format\":{\"type\":\"json_object\"}", "response_format"},
      {true, "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{}}",
       "response_format"},
      {false, "\"response_format\":\"json\"", "response_format"},
      {true, "\"guided_json\":{\"type\":\"object\"}", "guided_json"},
      {false, "\"guided_regex\":\"a+\"", "guided_regex"},
      {false, "\"guided_choice\":[\"a\",\"b\"]", "guided_choice"},
      {false, "\"guided_grammar\":\"root ::= x\"", "guided_grammar"},
      {true, "\"structured_outputs\":{\"json\":{}}", "structured_outputs"},
      {true, "\"prediction\":{\"type\":\"content\",\"content\":\"x\"}", "prediction"},
      {true, "\"continue_final_message\":true", "continue_final_message"},
      {true, "\"add_generation_prompt\":false", "add_generation_prompt"},
      {true, "\"chat_template\":\"{{x}}\"", "chat_template"},
      {false, "\"best_of\":1,\"echo\":false,\"suffix\":null,\"min_p\":0,\"user\":\"u\"", NULL},
      {true,
       "\"response_format\":{\"type\":\"text\"},\"metadata\":{\"a\":\"b\"},\"store\":false,"
       "\"service_tier\":\"auto\",\"skip_special_tokens\":true,\"add_generation_prompt\":true",
       NULL},
  };
  check_cases(cases, sizeof cases / sizeof *cases);
}

// ---- logprobs output ------------------------------------------------------------------------

static uint32_t id_of(const char *text) {
  TokenIds ids = {0};
  tok_encode(&tokenizer, text, strlen(text), false, &ids);
  assert_int_equal(ids.len, 1);
  uint32_t id = ids.data[0];
  token_ids_free(&ids);
  return id;
}

// A token event with logprobs: the sampled id, its logprob, and a top list.
static TokenEvent event(uint32_t id, float logprob, int num_top, const uint32_t *top_ids,
                        const float *top_logprobs, FinishReason finish) {
  TokenEvent ev = {.request_id = 1,
                   .has_token = true,
                   .token_id = id,
                   .finish = finish,
                   .num_prompt_tokens = 3,
                   .has_logprobs = true};
  ev.logprobs.logprob = logprob;
  ev.logprobs.num_top = num_top;
  for (int k = 0; k < num_top; k++) {
    ev.logprobs.top_ids[k] = top_ids[k];
    ev.logprobs.top_logprobs[k] = top_logprobs[k];
  }
  return ev;
}

static cJSON *whole_answer(bool chat, int num_top, const TokenEvent *events, size_t n) {
  ApiOutputInfo info = {.chat = chat,
                        .logprobs = true,
                        .num_top_logprobs = num_top,
                        .request_id = 1,
                        .model = "m",
                        .t = &tokenizer};
  ApiOutput o;
  api_output_init(&o, &info);
  Buf out = {0};
  for (size_t i = 0; i < n; i++) assert_int_equal(api_output_event(&o, &events[i], &out), 200);
  cJSON *body = cJSON_Parse(out.data);
  assert_non_null(body);
  buf_free(&out);
  api_output_free(&o);
  return body;
}

// Completions: " world" sampled (logprob -0.5) while "Hello" tops the list: the dict holds the
// sampled token first, then the top 2; text_offset counts code points of the token texts
// ("Hello" is 5); -inf is written as -9999.0. The stop token's entry is its name.
static void test_completions_logprobs_shape(void **state) {
  (void)state;
  uint32_t hello = id_of("Hello"), world = id_of(" world"), bang = id_of("!");
  const uint32_t top[] = {hello, bang};
  const float top_lp[] = {-0.25f, -1.0f};
  TokenEvent events[] = {event(hello, -0.25f, 2, top, top_lp, FINISH_NONE),
                         event(world, -0.5f, 2, top, top_lp, FINISH_NONE),
                         event(TOK_RETURN, -INFINITY, 0, NULL, NULL, FINISH_STOP)};
  cJSON *body = whole_answer(false, 2, events, 3);
  const cJSON *lp = get(body, "choices", "0", "logprobs", NULL);
  assert_string_equal(get(lp, "tokens", "0", NULL)->valuestring, "Hello");
  assert_string_equal(get(lp, "tokens", "1", NULL)->valuestring, " world");
  assert_string_equal(get(lp, "tokens", "2", NULL)->valuestring, "<|return|>");
  assert_float_equal(get(lp, "token_logprobs", "1", NULL)->valuedouble, -0.5, 1e-6);
  assert_float_equal(get(lp, "token_logprobs", "2", NULL)->valuedouble, -9999.0, 0);
  assert_int_equal(get(lp, "text_offset", "0", NULL)->valueint, 0);
  assert_int_equal(get(lp, "text_offset", "1", NULL)->valueint, 5);
  assert_int_equal(get(lp, "text_offset", "2", NULL)->valueint, 11);
  const cJSON *first = get(lp, "top_logprobs", "0", NULL);
  assert_int_equal(cJSON_GetArraySize(first), 2);  // sampled == top 1: not twice
  const cJSON *second = get(lp, "top_logprobs", "1", NULL);
  assert_int_equal(cJSON_GetArraySize(second), 3);
  assert_string_equal(second->child->string, " world");
  assert_float_equal(second->child->valuedouble, -0.5, 1e-6);
  assert_float_equal(get(second, "Hello", NULL)->valuedouble, -0.25, 1e-6);
  assert_float_equal(get(second, "!", NULL)->valuedouble, -1.0, 1e-6);
  assert_int_equal(cJSON_GetArraySize(get(lp, "top_logprobs", "2", NULL)), 1);
  assert_string_equal(get(body, "choices", "0", "text", NULL)->valuestring, "Hello world");
  cJSON_Delete(body);
}

// Chat: one content entry per token with its text, logprob and UTF-8 bytes, top_logprobs in
// order; a token holding half a UTF-8 character reads U+FFFD (bytes EF BF BD), as vLLM decodes
// one token.
static void test_chat_logprobs_shape(void **state) {
  (void)state;
  uint32_t hello = id_of("Hello"), bang = id_of("!");
  TokenIds e_acute = {0};
  tok_encode(&tokenizer, "\xc3", 1, false, &e_acute);  // a lone lead byte: one byte token
  assert_int_equal(e_acute.len, 1);
  const uint32_t top[] = {bang, hello};
  const float top_lp[] = {-0.1f, -2.5f};
  TokenEvent events[] = {event(hello, -2.5f, 2, top, top_lp, FINISH_NONE),
                         event(e_acute.data[0], -3.0f, 1, top, top_lp, FINISH_LENGTH)};
  cJSON *body = whole_answer(true, 2, events, 2);
  const cJSON *content = get(body, "choices", "0", "logprobs", "content", NULL);
  assert_int_equal(cJSON_GetArraySize(content), 2);
  const cJSON *e0 = get(content, "0", NULL);
  assert_string_equal(get(e0, "token", NULL)->valuestring, "Hello");
  assert_float_equal(get(e0, "logprob", NULL)->valuedouble, -2.5, 1e-6);
  const cJSON *bytes = get(e0, "bytes", NULL);
  assert_int_equal(cJSON_GetArraySize(bytes), 5);
  assert_int_equal(get(bytes, "0", NULL)->valueint, 'H');
  assert_int_equal(get(bytes, "4", NULL)->valueint, 'o');
  assert_string_equal(get(e0, "top_logprobs", "0", "token", NULL)->valuestring, "!");
  assert_float_equal(get(e0, "top_logprobs", "0", "logprob", NULL)->valuedouble, -0.1, 1e-6);
  assert_string_equal(get(e0, "top_logprobs", "1", "token", NULL)->valuestring, "Hello");
  const cJSON *e1 = get(content, "1", NULL);
  assert_string_equal(get(e1, "token", NULL)->valuestring, "\xef\xbf\xbd");
  assert_int_equal(get(e1, "bytes", "0", NULL)->valueint, 0xef);
  assert_int_equal(get(e1, "bytes", "2", NULL)->valueint, 0xbd);
  assert_int_equal(cJSON_GetArraySize(get(e1, "top_logprobs", NULL)), 1);
  cJSON_Delete(body);
  token_ids_free(&e_acute);
}

// Streams: each token chunk carries its own logprobs; completions' text_offset keeps counting
// across chunks; a whole answer without logprobs says null.
static void test_streamed_logprobs(void **state) {
  (void)state;
  uint32_t hello = id_of("Hello"), world = id_of(" world");
  const uint32_t top[] = {hello};
  const float top_lp[] = {-0.5f};
  ApiOutputInfo info = {.stream = true,
                        .logprobs = true,
                        .num_top_logprobs = 1,
                        .request_id = 1,
                        .model = "m",
                        .t = &tokenizer};
  ApiOutput o;
  api_output_init(&o, &info);
  Buf out = {0};
  TokenEvent a = event(hello, -0.5f, 1, top, top_lp, FINISH_NONE);
  TokenEvent b = event(world, -1.5f, 1, top, top_lp, FINISH_LENGTH);
  api_output_event(&o, &a, &out);
  size_t first_len = out.len;
  api_output_event(&o, &b, &out);
  out.data[first_len - 2] = '\0';  // "data: {...}\n\n"
  cJSON *c0 = cJSON_Parse(out.data + strlen("data: "));
  char *second = out.data + first_len + strlen("data: ");
  *strstr(second, "\n\n") = '\0';
  cJSON *c1 = cJSON_Parse(second);
  assert_non_null(c0);
  assert_non_null(c1);
  assert_string_equal(get(c0, "choices", "0", "logprobs", "tokens", "0", NULL)->valuestring,
                      "Hello");
  assert_int_equal(get(c1, "choices", "0", "logprobs", "text_offset", "0", NULL)->valueint, 5);
  assert_float_equal(get(c1, "choices", "0", "logprobs", "token_logprobs", "0", NULL)->valuedouble,
                     -1.5, 1e-6);
  assert_int_equal(
      cJSON_GetArraySize(get(c1, "choices", "0", "logprobs", "top_logprobs", "0", NULL)), 2);
  cJSON_Delete(c0);
  cJSON_Delete(c1);
  buf_free(&out);
  api_output_free(&o);
  info = (ApiOutputInfo){.chat = true, .request_id = 1, .model = "m", .t = &tokenizer};
  api_output_init(&o, &info);
  b.has_logprobs = false;
  api_output_event(&o, &b, &out);
  cJSON *body = cJSON_Parse(out.data);
  assert_true(cJSON_IsNull(get(body, "choices", "0", "logprobs", NULL)));
  cJSON_Delete(body);
  buf_free(&out);
  api_output_free(&o);
}

// ---- n > 1 and lists of prompts -------------------------------------------------------------

// Choice c: prompt c / n, seed + c % n, each prompt its own default max_tokens.
static void test_choices_of_prompts(void **state) {
  (void)state;
  ApiRequest r;
  ApiError err;
  assert_true(
      parse(false, "{\"prompt\":[[1,2],\"Hello world\",[7]],\"n\":2,\"seed\":100}", &r, &err));
  assert_int_equal(r.num_prompts, 3);
  assert_int_equal(r.n, 2);
  for (size_t c = 0; c < 6; c++) {
    EngineRequestParams p = api_request_choice(&r, c);
    assert_int_equal(p.seed, 100 + c % 2);
    size_t want_len = c / 2 == 0 ? 2 : c / 2 == 1 ? 2 : 1;  // "Hello world": 2 tokens
    assert_int_equal(p.num_prompt_ids, want_len);
    assert_int_equal(p.max_tokens, 4096 - (int)want_len);
  }
  assert_int_equal(api_request_choice(&r, 5).prompt_ids[0], 7);
  api_request_free(&r);
  const FieldCase cases[] = {
      {false, "\"n\":0", "n"},
      {false, "\"n\":1.5", "n"},
      {false, "\"n\":129", "n"},
      {true, "\"n\":3", NULL},
  };
  check_cases(cases, sizeof cases / sizeof *cases);
  assert_false(parse(false, "{\"prompt\":[\"a\",\"b\",\"c\"],\"n\":43}", &r, &err));  // 129
  assert_string_equal(err.param, "n");
}

typedef struct {
  FakeEngine fake;
  ApiHub hub;
} Hub;

static uint32_t script[3];  // "Hello" " world" "!"

static void hub_start(Hub *h) {
  memset(h, 0, sizeof *h);
  script[0] = id_of("Hello");
  script[1] = id_of(" world");
  script[2] = id_of("!");
  fake_start(&h->fake, script, 3, 1000000);
  ApiEngine engine = fake_api_engine(&h->fake);
  assert_true(api_hub_start(&h->hub, &engine));
}

static void hub_stop(Hub *h) {
  api_hub_stop(&h->hub);
  api_hub_free(&h->hub);
  fake_stop(&h->fake);
}

// Waits for s's last bytes and appends them to bytes.
static void wait_finished(Hub *h, ApiStream *s, Buf *bytes) {
  for (bool done = false; !done;) {
    pthread_mutex_lock(&h->hub.mu);
    done = s->finished;
    if (done) buf_append(bytes, s->bytes.data, s->bytes.len);
    pthread_mutex_unlock(&h->hub.mu);
    if (!done) clock_sleep_until_ns(clock_now_ns() + 1000000);
  }
}

// Submits body's choices and waits for the answer's last bytes; returns them (owned).
static ApiStream *answer(Hub *h, bool chat, const char *body, Buf *bytes) {
  ApiRequest r;
  ApiError err;
  assert_true(parse(chat, body, &r, &err));
  EngineRequestParams params[API_MAX_CHOICES];
  size_t num = r.num_prompts * (size_t)r.n;
  for (size_t c = 0; c < num; c++) params[c] = api_request_choice(&r, c);
  ApiOutputInfo info = {.chat = chat,
                        .stream = r.stream,
                        .include_usage = r.include_usage,
                        .model = "m",
                        .t = &tokenizer,
                        .stop = (const char *const *)r.stop,
                        .num_stop = r.num_stop};
  ApiStream *s = api_hub_submit(&h->hub, params, (int)num, r.n, info, NULL, &err);
  assert_non_null(s);
  api_request_free(&r);
  wait_finished(h, s, bytes);
  return s;
}

// Whole chat answer with n = 3: three choices indexed 0..2, each the script's text; usage
// counts the prompt once and the three outputs.
static void test_n_choices_fan_in(void **state) {
  (void)state;
  Hub h;
  hub_start(&h);
  Buf bytes = {0};
  ApiStream *s = answer(&h, false, "{\"prompt\":[5,6,7,8],\"n\":3,\"max_tokens\":2}", &bytes);
  assert_int_equal(s->status, 200);
  api_hub_close(&h.hub, s);
  cJSON *body = cJSON_Parse(bytes.data);
  assert_non_null(body);
  const cJSON *choices = get(body, "choices", NULL);
  assert_int_equal(cJSON_GetArraySize(choices), 3);
  for (int i = 0; i < 3; i++) {
    char k[4];
    snprintf(k, sizeof k, "%d", i);
    assert_int_equal(get(choices, k, "index", NULL)->valueint, i);
    assert_string_equal(get(choices, k, "text", NULL)->valuestring, "Hello world");
    assert_string_equal(get(choices, k, "finish_reason", NULL)->valuestring, "length");
  }
  assert_int_equal(get(body, "usage", "prompt_tokens", NULL)->valueint, 4);
  assert_int_equal(get(body, "usage", "completion_tokens", NULL)->valueint, 6);
  assert_int_equal(fake_num_submitted(&h.fake), 3);
  cJSON_Delete(body);
  buf_free(&bytes);
  hub_stop(&h);
}

// A stream of two prompts x n = 2: every chunk names its choice (0..3, prompt * n + i), each
// choice ends once with finish_reason, one usage chunk sums both prompts, one [DONE] ends it.
static void test_streamed_prompts_fan_in(void **state) {
  (void)state;
  Hub h;
  hub_start(&h);
  Buf bytes = {0};
  ApiStream *s = answer(&h, false,
                        "{\"prompt\":[[1,2,3],[4]],\"n\":2,\"stream\":true,"
                        "\"stream_options\":{\"include_usage\":true}}",
                        &bytes);
  api_hub_close(&h.hub, s);
  int finishes[4] = {0}, num_done = 0, num_usage = 0;
  Buf text[4] = {0};
  for (char *line = strtok(bytes.data, "\n"); line; line = strtok(NULL, "\n")) {
    assert_true(strncmp(line, "data: ", 6) == 0);
    if (strcmp(line + 6, "[DONE]") == 0) {
      num_done++;
      continue;
    }
    assert_int_equal(num_done, 0);  // nothing after [DONE]
    cJSON *chunk = cJSON_Parse(line + 6);
    assert_non_null(chunk);
    if (cJSON_GetArraySize(get(chunk, "choices", NULL)) == 0) {
      num_usage++;
      assert_int_equal(get(chunk, "usage", "prompt_tokens", NULL)->valueint, 4);
      assert_int_equal(get(chunk, "usage", "completion_tokens", NULL)->valueint, 12);
    } else {
      int i = get(chunk, "choices", "0", "index", NULL)->valueint;
      assert_true(i >= 0 && i < 4);
      assert_int_equal(num_usage, 0);
      buf_append_str(&text[i], get(chunk, "choices", "0", "text", NULL)->valuestring);
      if (cJSON_IsString(get(chunk, "choices", "0", "finish_reason", NULL))) finishes[i]++;
    }
    cJSON_Delete(chunk);
  }
  assert_int_equal(num_done, 1);
  assert_int_equal(num_usage, 1);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(finishes[i], 1);
    assert_string_equal(text[i].data, "Hello world!");
    buf_free(&text[i]);
  }
  buf_free(&bytes);
  hub_stop(&h);
}

// Aborting the answer aborts every choice; the first abort ends it (an error event, [DONE]).
static void test_abort_reaches_every_choice(void **state) {
  (void)state;
  Hub h;
  hub_start(&h);
  pthread_mutex_lock(&h.fake.mu);
  h.fake.start_after = 1000;  // no tokens: the choices stay live
  pthread_mutex_unlock(&h.fake.mu);
  ApiRequest r;
  ApiError err;
  assert_true(parse(true,
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":3,"
                    "\"stream\":true}",
                    &r, &err));
  EngineRequestParams params[3];
  for (size_t c = 0; c < 3; c++) params[c] = api_request_choice(&r, c);
  ApiOutputInfo info = {.chat = true, .stream = true, .model = "m", .t = &tokenizer};
  ApiStream *s = api_hub_submit(&h.hub, params, 3, 3, info, NULL, &err);
  assert_non_null(s);
  api_request_free(&r);
  api_hub_abort(&h.hub, s);
  for (int i = 0; i < 3; i++) assert_true(fake_wait_aborted(&h.fake, s->choices[i].id, 1000));
  pthread_mutex_lock(&h.fake.mu);
  h.fake.start_after = 0;  // the aborts come out now
  pthread_mutex_unlock(&h.fake.mu);
  for (bool done = false; !done;) {
    pthread_mutex_lock(&h.hub.mu);
    done = s->engine_done;
    if (done) {
      assert_true(s->finished);
      assert_non_null(strstr(s->bytes.data, "\"error\""));
      assert_non_null(strstr(s->bytes.data, "data: [DONE]"));
      assert_null(strstr(strstr(s->bytes.data, "data: [DONE]") + 1, "data: [DONE]"));
    }
    pthread_mutex_unlock(&h.hub.mu);
    if (!done) clock_sleep_until_ns(clock_now_ns() + 1000000);
  }
  api_hub_close(&h.hub, s);
  hub_stop(&h);
}

// ---- stop strings ---------------------------------------------------------------------------

// Text arrives in pieces: a piece that may begin a stop string is held back until it cannot
// (then shown whole) or matches (then cut before the match); the earliest match wins.
static void test_stop_strings_hold_back_and_cut(void **state) {
  (void)state;
  const char *stops[] = {"END", "xyz"};
  ApiStop st;
  api_stop_init(&st, stops, 2, false);
  Buf out = {0};
  assert_false(api_stop_filter(&st, "hello E", 7, &out));
  assert_string_equal(out.data, "hello ");  // "E" may start "END"
  assert_false(api_stop_filter(&st, "Nx", 2, &out));
  assert_string_equal(out.data, "hello EN");  // "ENx" is no start of a stop: only "x" waits
  assert_false(api_stop_filter(&st, "y", 1, &out));
  assert_string_equal(out.data, "hello EN");
  assert_true(api_stop_filter(&st, "zEND tail", 9, &out));  // "xyz" comes before "END"
  assert_string_equal(out.data, "hello EN");
  assert_int_equal(st.matched, 1);
  assert_true(api_stop_filter(&st, "more", 4, &out));  // after a match nothing more
  assert_string_equal(out.data, "hello EN");
  api_stop_free(&st);
  // include_stop_str_in_output keeps the match; the end flushes what was held back
  api_stop_init(&st, stops, 2, true);
  buf_clear(&out);
  assert_true(api_stop_filter(&st, "a ENDb", 6, &out));
  assert_string_equal(out.data, "a END");
  api_stop_free(&st);
  api_stop_init(&st, stops, 2, false);
  buf_clear(&out);
  assert_false(api_stop_filter(&st, "ab EN", 5, &out));
  api_stop_flush(&st, &out);
  assert_string_equal(out.data, "ab EN");
  api_stop_free(&st);
  buf_free(&out);
}

// Through the output: a whole completion cut before " world" with finish_reason "stop" and
// stop_reason the string; completion tokens are those generated up to the match.
static void test_stop_string_ends_the_choice(void **state) {
  (void)state;
  const char *stops[] = {" wor"};
  ApiOutputInfo info = {
      .request_id = 1, .model = "m", .t = &tokenizer, .stop = stops, .num_stop = 1};
  ApiOutput o;
  api_output_init(&o, &info);
  Buf out = {0};
  TokenEvent a = {.request_id = 1,
                  .has_token = true,
                  .token_id = id_of("Hello"),
                  .num_prompt_tokens = 2,
                  .num_output_tokens = 1};
  TokenEvent b = a;
  b.token_id = id_of(" world");
  b.num_output_tokens = 2;
  api_output_event(&o, &a, &out);
  assert_int_equal(out.len, 0);
  assert_false(o.done);
  api_output_event(&o, &b, &out);
  assert_true(o.done);
  cJSON *body = cJSON_Parse(out.data);
  assert_non_null(body);
  assert_string_equal(get(body, "choices", "0", "text", NULL)->valuestring, "Hello");
  assert_string_equal(get(body, "choices", "0", "finish_reason", NULL)->valuestring, "stop");
  assert_string_equal(get(body, "choices", "0", "stop_reason", NULL)->valuestring, " wor");
  assert_int_equal(get(body, "usage", "completion_tokens", NULL)->valueint, 2);
  cJSON_Delete(body);
  size_t len = out.len;
  TokenEvent end = {.request_id = 1, .finish = FINISH_ABORT};  // the engine's answer to the abort
  api_output_event(&o, &end, &out);
  assert_int_equal(out.len, len);  // ignored
  api_output_free(&o);
  buf_free(&out);
  ApiRequest r;
  ApiError err;
  assert_true(parse(false, "{\"prompt\":\"x\",\"stop\":\"\"}", &r, &err));
  assert_int_equal(r.num_stop, 0);
  api_request_free(&r);
  assert_true(parse(true,
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":[\"a\",\"bc\"],"
                    "\"include_stop_str_in_output\":true}",
                    &r, &err));
  assert_int_equal(r.num_stop, 2);
  assert_string_equal(r.stop[1], "bc");
  assert_true(r.include_stop_str_in_output);
  api_request_free(&r);
  const FieldCase cases[] = {
      {false, "\"stop\":[\"a\",\"\"]", "stop"},
      {false, "\"stop\":[1]", "stop"},
      {false, "\"stop\":{}", "stop"},
  };
  check_cases(cases, sizeof cases / sizeof *cases);
}

// A stop string in a stream ends the choice: the dispatcher aborts its engine request and the
// answer ends at once with finish_reason "stop" (the engine's abort event is not an error).
static void test_stop_string_aborts_the_request(void **state) {
  (void)state;
  Hub h;
  hub_start(&h);
  Buf bytes = {0};
  ApiStream *s = answer(&h, false, "{\"prompt\":[1],\"stream\":true,\"stop\":\"ell\"}", &bytes);
  assert_true(fake_wait_aborted(&h.fake, s->choices[0].id, 1000));
  assert_non_null(strstr(bytes.data, "\"finish_reason\":\"stop\",\"stop_reason\":\"ell\""));
  assert_null(strstr(bytes.data, "error"));
  assert_null(strstr(bytes.data, "Hello"));
  assert_non_null(strstr(bytes.data, "\"text\":\"H\""));
  api_hub_close(&h.hub, s);
  buf_free(&bytes);
  hub_stop(&h);
}

// ---- echo and continuous usage --------------------------------------------------------------

// Two prompts x n = 1 with echo: each choice's text starts with its own prompt's text.
static void test_echo_prefixes_each_prompt(void **state) {
  (void)state;
  Hub h;
  hub_start(&h);
  Buf bytes = {0};
  ApiRequest r;
  ApiError err;
  assert_true(
      parse(false, "{\"prompt\":[\"Say:\",\"Bye\"],\"echo\":true,\"max_tokens\":2}", &r, &err));
  assert_true(r.echo);
  EngineRequestParams params[2] = {api_request_choice(&r, 0), api_request_choice(&r, 1)};
  ApiOutputInfo info = {.model = "m", .t = &tokenizer, .echo_ids = r.prompt.data};
  ApiStream *s = api_hub_submit(&h.hub, params, 2, 1, info, NULL, &err);
  assert_non_null(s);
  api_request_free(&r);
  wait_finished(&h, s, &bytes);
  api_hub_close(&h.hub, s);
  cJSON *body = cJSON_Parse(bytes.data);
  assert_string_equal(get(body, "choices", "0", "text", NULL)->valuestring, "Say:Hello world");
  assert_string_equal(get(body, "choices", "1", "text", NULL)->valuestring, "ByeHello world");
  cJSON_Delete(body);
  buf_free(&bytes);
  hub_stop(&h);
}

// continuous_usage_stats (with include_usage): every chunk carries the tokens so far.
static void test_continuous_usage(void **state) {
  (void)state;
  ApiRequest r;
  ApiError err;
  assert_true(parse(false,
                    "{\"prompt\":\"x\",\"stream\":true,\"stream_options\":{\"include_usage\":"
                    "true,\"continuous_usage_stats\":true}}",
                    &r, &err));
  assert_true(r.continuous_usage);
  api_request_free(&r);
  assert_true(parse(false,
                    "{\"prompt\":\"x\",\"stream\":true,\"stream_options\":{"
                    "\"continuous_usage_stats\":true}}",
                    &r, &err));
  assert_false(r.continuous_usage);  // vLLM needs include_usage too
  api_request_free(&r);
  ApiOutputInfo info = {.stream = true,
                        .include_usage = true,
                        .continuous_usage = true,
                        .request_id = 1,
                        .model = "m",
                        .t = &tokenizer};
  ApiOutput o;
  api_output_init(&o, &info);
  Buf out = {0};
  TokenEvent ev = {.request_id = 1,
                   .has_token = true,
                   .token_id = id_of("Hello"),
                   .num_prompt_tokens = 4,
                   .num_output_tokens = 1};
  api_output_event(&o, &ev, &out);
  *strstr(out.data, "\n\n") = '\0';
  cJSON *chunk = cJSON_Parse(out.data + strlen("data: "));
  assert_non_null(chunk);
  assert_int_equal(get(chunk, "usage", "prompt_tokens", NULL)->valueint, 4);
  assert_int_equal(get(chunk, "usage", "completion_tokens", NULL)->valueint, 1);
  assert_int_equal(get(chunk, "usage", "total_tokens", NULL)->valueint, 5);
  cJSON_Delete(chunk);
  buf_free(&out);
  api_output_free(&o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sampling_fields_reach_the_engine),
      cmocka_unit_test(test_sampling_field_errors),
      cmocka_unit_test(test_unsupported_fields_are_refused),
      cmocka_unit_test(test_completions_logprobs_shape),
      cmocka_unit_test(test_chat_logprobs_shape),
      cmocka_unit_test(test_streamed_logprobs),
      cmocka_unit_test(test_choices_of_prompts),
      cmocka_unit_test(test_n_choices_fan_in),
      cmocka_unit_test(test_streamed_prompts_fan_in),
      cmocka_unit_test(test_abort_reaches_every_choice),
      cmocka_unit_test(test_stop_strings_hold_back_and_cut),
      cmocka_unit_test(test_stop_string_ends_the_choice),
      cmocka_unit_test(test_stop_string_aborts_the_request),
      cmocka_unit_test(test_echo_prefixes_each_prompt),
      cmocka_unit_test(test_continuous_usage),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
