// test_dataset_kinds.c: vLLM's sonnet, burstgpt, custom and prefix_repetition datasets against
// hand-counted fixtures in tests/fixtures/bench/ (o200k_harmony counts worked out by hand: each
// line of sonnet-small.txt is 10 tokens, "one" ... " nine" and "\n"; the sonnet instruction is
// 12, "Pick" " as" ... " lines" ":\n"), the GPT-OSS chat template's exact text, and which
// dataset names and flags are accepted or refused, with the flag named.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_options.h"
#include "bench/dataset.h"
#include "bench/dataset_internal.h"
#include "bench/dataset_select.h"
#include "text/tokenizer.h"
#include "harmony_fixture.h"

#define FIXTURES "tests/fixtures/bench/"

// The harmony rendering of one user message, as HF's GPT-OSS template gives it (less its date line).
#define SYSTEM_PART                                                                            \
  "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"    \
  "Knowledge cutoff: 2024-06\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, " \
  "final. Channel must be included for every message.<|end|>"
#define TEMPLATED(user) SYSTEM_PART "<|start|>user<|message|>" user "<|end|><|start|>assistant"

static uint32_t count(const Tokenizer *t, const char *s) {
  TokenIds ids = {0};
  uint32_t n = dataset_count_tokens(t, s, strlen(s), &ids);
  token_ids_free(&ids);
  return n;
}

static void test_chat_template_text(void **state) {
  Buf b = {0};
  dataset_chat_template(*state, "hi", &b);
  assert_string_equal(b.data, TEMPLATED("hi"));
  buf_free(&b);
}

// Tokens of the template around an empty message; the sonnet's base_offset is this plus 12.
static uint32_t template_overhead(const Tokenizer *t) { return count(t, TEMPLATED("")); }

static SonnetParams sonnet_params(uint32_t over, uint32_t input_extra, uint32_t prefix_extra) {
  return (SonnetParams){.path = FIXTURES "sonnet-small.txt", .num_requests = 6,
                        .input_len = over + 12 + input_extra, .output_len = 150,
                        .prefix_len = over + 12 + prefix_extra, .formatted = false, .seed = 3};
}

static void test_sonnet_layout_rounds_halves_to_even(void **state) {
  const Tokenizer *t = *state;
  uint32_t over = template_overhead(t);
  // input: (45 / 10) = 4.5 -> 4 lines; prefix: (10 / 10) = 1 line; so 3 drawn per prompt
  SonnetParams p = sonnet_params(over, 45, 10);
  Dataset d;
  SonnetLayout lay;
  char err[1024] = "";
  assert_true(dataset_make_sonnet(&p, t, &d, &lay, err, sizeof err));
  assert_true(lay.mean_line_len == 10.0);
  assert_int_equal(lay.base_offset, over + 12);
  assert_int_equal(lay.num_input_lines, 4);
  assert_int_equal(lay.num_prefix_lines, 1);
  assert_int_equal(d.num_requests, 6);
  assert_string_equal(d.name, "sonnet");
  const char *start = "Pick as many lines as you can from these poem lines:\n"
                      "one two three four five six seven eight nine\n";
  for (size_t i = 0; i < d.num_requests; i++) {
    const BenchRequest *r = &d.requests[i];
    assert_int_equal(r->prompt_len, over + 12 + 40);  // templated: instruction + 4 lines
    assert_int_equal(r->expected_output_len, 150);
    assert_memory_equal(r->prompt, start, strlen(start));  // plain text (openai-chat)
    assert_int_equal(count(t, r->prompt), 12 + 40);
  }
  dataset_free(&d);
  // 2.5 -> 2 lines (even), prefix 1.5 -> 2: both lines are the file's first two, nothing drawn
  p = sonnet_params(over, 25, 15);
  p.formatted = true;
  assert_true(dataset_make_sonnet(&p, t, &d, &lay, err, sizeof err));
  assert_int_equal(lay.num_input_lines, 2);
  assert_int_equal(lay.num_prefix_lines, 2);
  assert_string_equal(d.requests[5].prompt,
                      TEMPLATED("Pick as many lines as you can from these poem lines:\n"
                                "one two three four five six seven eight nine\n"
                                "ten two three four five six seven eight nine\n"));
  assert_int_equal(d.requests[5].prompt_len, over + 12 + 20);
  dataset_free(&d);
}

static void test_sonnet_errors_name_the_flag(void **state) {
  const Tokenizer *t = *state;
  uint32_t over = template_overhead(t);
  Dataset d;
  SonnetLayout lay;
  char err[1024] = "";
  SonnetParams p = sonnet_params(over, 0, 0);  // input_len == base_offset
  assert_false(dataset_make_sonnet(&p, t, &d, &lay, err, sizeof err));
  assert_non_null(strstr(err, "--sonnet-input-len"));
  assert_non_null(strstr(err, "must be higher than the base prompt length"));
  // 3.5 -> 4 lines of 10 tokens never fit in 35: vLLM would redraw forever, we stop and say so
  p = sonnet_params(over, 35, 0);
  assert_false(dataset_make_sonnet(&p, t, &d, &lay, err, sizeof err));
  assert_non_null(strstr(err, "raise --sonnet-input-len"));
  p.path = FIXTURES "no-such-sonnet.txt";
  assert_false(dataset_make_sonnet(&p, t, &d, &lay, err, sizeof err));
  assert_non_null(strstr(err, "no-such-sonnet.txt"));
}

static void test_shipped_sonnet_file_defaults(void **state) {
  SonnetParams p = {.num_requests = 50, .input_len = 550, .output_len = 150, .prefix_len = 200,
                    .formatted = true, .seed = 0};
  Dataset d;
  SonnetLayout lay;
  char err[1024] = "";
  assert_true(dataset_make_sonnet(&p, *state, &d, &lay, err, sizeof err));
  assert_int_equal(d.num_requests, 50);
  for (size_t i = 0; i < d.num_requests; i++) assert_true(d.requests[i].prompt_len <= 550);
  assert_memory_equal(d.requests[0].prompt, "<|start|>system", 15);
  dataset_free(&d);
}

static bool burst(const Tokenizer *t, const char *path, size_t n, Dataset *d, char *err) {
  BurstGptParams p = {.path = path, .num_requests = n, .seed = 1};
  return dataset_load_burstgpt(&p, t, d, err, 1024);
}

// burstgpt-small.csv keeps two rows: GPT-4 1087/230 and GPT-4 20/7 (ChatGPT rows and the GPT-4
// row with 0 response tokens are dropped).
static void test_burstgpt_keeps_gpt4_rows_with_responses(void **state) {
  Dataset d;
  char err[1024] = "";
  assert_true(burst(*state, FIXTURES "burstgpt-small.csv", 2, &d, err));
  assert_string_equal(d.name, "burstgpt");
  assert_int_equal(d.num_requests, 2);
  uint32_t sum_in = 0, sum_out = 0;
  for (size_t i = 0; i < 2; i++) {
    const BenchRequest *r = &d.requests[i];
    sum_in += r->prompt_len;
    sum_out += r->expected_output_len;
    assert_true((r->prompt_len == 1087 && r->expected_output_len == 230) ||
                (r->prompt_len == 20 && r->expected_output_len == 7));
    // ids (i + j): ranks 0.. are the bytes '!' '"' '#' ...; request i starts at '!' + i
    assert_int_equal((unsigned char)r->prompt[0], '!' + i);
    if (r->prompt_len == 20) assert_int_equal(strlen(r->prompt), 20);
  }
  assert_int_equal(sum_in, 1107);  // without replacement: each row once
  assert_int_equal(sum_out, 237);
  dataset_free(&d);
  assert_true(burst(*state, FIXTURES "burstgpt-small.csv", 5, &d, err));  // with replacement
  assert_int_equal(d.num_requests, 5);
  dataset_free(&d);
}

static void test_burstgpt_bad_files(void **state) {
  Dataset d;
  char err[1024] = "";
  assert_false(burst(*state, FIXTURES "burstgpt-bad-count.csv", 1, &d, err));
  assert_non_null(strstr(err, "burstgpt-bad-count.csv:2:"));
  assert_false(burst(*state, FIXTURES "custom-small.jsonl", 1, &d, err));  // no header columns
  assert_non_null(strstr(err, ":1: the header lacks"));
}

static bool custom(const Tokenizer *t, size_t n, bool skip, bool no_over, const char *path,
                   Dataset *d, char *err) {
  CustomParams p = {.path = path, .num_requests = n, .output_len = 256,
                    .skip_chat_template = skip, .no_oversample = no_over, .seed = 0};
  return dataset_load_custom(&p, t, d, err, 1024);
}

// custom-small.jsonl: "Tell me a story." (5 tokens), "What is 2+2?" (7: What, " is", " ", 2, +,
// 2, ?), "Name three colours." (4), and a blank line.
static uint32_t hand_count(const char *prompt) {
  return strstr(prompt, "story") ? 5 : strstr(prompt, "2+2") ? 7 : strstr(prompt, "colours") ? 4 : 0;
}

static void test_custom_prompts_with_and_without_template(void **state) {
  const Tokenizer *t = *state;
  Dataset d;
  char err[1024] = "";
  assert_true(custom(t, 3, true, true, FIXTURES "custom-small.jsonl", &d, err));
  assert_string_equal(d.name, "custom");
  uint32_t total = 0;
  for (size_t i = 0; i < 3; i++) {
    assert_int_equal(d.requests[i].prompt_len, hand_count(d.requests[i].prompt));
    assert_int_equal(d.requests[i].expected_output_len, 256);
    total += d.requests[i].prompt_len;
  }
  assert_int_equal(total, 16);  // each prompt once
  dataset_free(&d);
  uint32_t over = template_overhead(t);
  assert_true(custom(t, 5, false, false, FIXTURES "custom-small.jsonl", &d, err));
  assert_int_equal(d.num_requests, 5);
  assert_int_equal(d.num_oversampled, 2);
  for (size_t i = 0; i < 5; i++) {
    assert_memory_equal(d.requests[i].prompt, SYSTEM_PART, strlen(SYSTEM_PART));
    assert_int_equal(d.requests[i].prompt_len, over + hand_count(d.requests[i].prompt));
  }
  dataset_free(&d);
}

static void test_custom_errors(void **state) {
  const Tokenizer *t = *state;
  Dataset d;
  char err[1024] = "";
  assert_false(custom(t, 5, true, true, FIXTURES "custom-small.jsonl", &d, err));
  assert_non_null(strstr(err, "3 prompts found but --num-prompts is 5"));
  assert_false(custom(t, 1, true, true, FIXTURES "sonnet-small.txt", &d, err));
  assert_non_null(strstr(err, "Only JSONL format is supported"));
  assert_false(custom(t, 1, true, true, FIXTURES "custom-no-prompt.jsonl", &d, err));
  assert_non_null(strstr(err, "custom-no-prompt.jsonl:2: no string \"prompt\""));
}

static void test_prefix_repetition_groups(void **state) {
  const Tokenizer *t = *state;
  // 7 prompts over 3 prefixes: 7 // 3 = 2 each, so 6 requests (vLLM makes as few)
  PrefixRepetitionParams p = {.num_requests = 7, .prefix_len = 8, .suffix_len = 0,
                              .num_prefixes = 3, .output_len = 128, .seed = 5};
  Dataset d;
  char err[1024] = "";
  assert_true(dataset_make_prefix_repetition(&p, t, &d, err, sizeof err));
  assert_string_equal(d.name, "prefix_repetition");
  assert_int_equal(d.num_requests, 6);
  for (size_t i = 0; i < 6; i++) {
    size_t same = 0;
    for (size_t j = 0; j < 6; j++) same += strcmp(d.requests[i].prompt, d.requests[j].prompt) == 0;
    assert_int_equal(same, 2);  // with no suffix, each prefix's two prompts are the same text
    assert_int_equal(d.requests[i].prompt_len, 8);
    assert_int_equal(d.requests[i].expected_output_len, 128);
    assert_int_equal(count(t, d.requests[i].prompt), 8);  // the piece re-encodes to its length
  }
  dataset_free(&d);
  p = (PrefixRepetitionParams){.num_requests = 4, .prefix_len = 16, .suffix_len = 8,
                               .num_prefixes = 2, .output_len = 9, .seed = 5};
  assert_true(dataset_make_prefix_repetition(&p, t, &d, err, sizeof err));
  assert_int_equal(d.num_requests, 4);
  for (size_t i = 0; i < 4; i++) assert_int_equal(d.requests[i].prompt_len, 24);
  dataset_free(&d);
  p.num_requests = 1;
  assert_false(dataset_make_prefix_repetition(&p, t, &d, err, sizeof err));
  assert_string_equal(err, "--num-prompts (1) must be greater than or equal to "
                           "--prefix-repetition-num-prefixes (2)");
}

// Parses `bench` flags; returns whether they were accepted, with the message in err.
static bool parse(char *err, size_t err_size, BenchOptions *o, int argc, char **argv) {
  bool ok = bench_options_parse(o, argc, argv, err, err_size);
  bench_options_free(o);
  return ok;
}
#define PARSE(o, ...)                                                                         \
  parse(err, sizeof err, o, (int)(sizeof((char *[]){"bench", __VA_ARGS__}) / sizeof(char *)), \
        (char *[]){"bench", __VA_ARGS__})

static void test_options_defaults_and_refusals(void **state) {
  (void)state;
  BenchOptions o;
  char err[1024] = "";
  assert_true(PARSE(&o, "--dataset-name", "sonnet"));
  assert_int_equal(o.sonnet_input_len, 550);
  assert_int_equal(o.sonnet_output_len, 150);
  assert_int_equal(o.sonnet_prefix_len, 200);
  assert_int_equal(o.custom_output_len, 256);
  assert_false(o.custom_skip_chat_template);
  assert_int_equal(o.prefix_repetition_prefix_len, 256);
  assert_int_equal(o.prefix_repetition_suffix_len, 256);
  assert_int_equal(o.prefix_repetition_num_prefixes, 10);
  assert_int_equal(o.prefix_repetition_output_len, 128);
  assert_int_equal(o.random_batch_size, 1);
  assert_true(PARSE(&o, "--dataset-name", "custom", "--dataset-path", "x.jsonl",
                    "--custom_skip_chat_template", "--custom-output-len", "7"));
  assert_true(o.custom_skip_chat_template);
  assert_int_equal(o.custom_output_len, 7);
  assert_true(PARSE(&o, "--dataset-name", "prefix_repetition", "--random-batch-size", "1"));
  static const char *const refused[][3] = {
      {"--dataset-name", "hf", "hub downloads are not supported"},
      {"--dataset-name", "random-mm", "multimodal"},
      {"--dataset-name", "spec_bench", "not implemented"},
      {"--dataset-name", "burstgpt", "--dataset-name burstgpt needs --dataset-path"},
      {"--dataset-name", "custom", "--dataset-name custom needs --dataset-path"},
      {"--dataset-name", "nope", "use random, sharegpt, sonnet"},
      {"--random-batch-size", "4", "--random-batch-size 4 is not supported: vLLM batches"},
      {"--hf-split", "train", "--hf-split is not supported: it belongs to --dataset-name hf"},
      {"--hf-output-len", "5", "--hf-output-len is not supported"},
      {"--hf-subset", "x", "--hf-subset is not supported"},
      {"--hf-name", "x", "--hf-name is not supported"},
      {"--random-mm-bucket-config", "{}", "--random-mm-bucket-config is not supported"},
      {"--spec-bench-category", "qa", "--spec-bench-category is not supported"},
      {"--blazedit-max-distance", "0.5", "--blazedit-max-distance is not supported"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    err[0] = '\0';
    assert_false(PARSE(&o, (char *)refused[i][0], (char *)refused[i][1]));
    if (!strstr(err, refused[i][2])) fail_msg("%s %s: %s", refused[i][0], refused[i][1], err);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chat_template_text),
      cmocka_unit_test(test_sonnet_layout_rounds_halves_to_even),
      cmocka_unit_test(test_sonnet_errors_name_the_flag),
      cmocka_unit_test(test_shipped_sonnet_file_defaults),
      cmocka_unit_test(test_burstgpt_keeps_gpt4_rows_with_responses),
      cmocka_unit_test(test_burstgpt_bad_files),
      cmocka_unit_test(test_custom_prompts_with_and_without_template),
      cmocka_unit_test(test_custom_errors),
      cmocka_unit_test(test_prefix_repetition_groups),
      cmocka_unit_test(test_options_defaults_and_refusals),
  };
  return cmocka_run_group_tests(tests, harmony_setup, harmony_teardown);
}
