// test_bench_options.c: `bench` flags: vLLM's defaults, --x_y spelling, --flag=value, nargs
// lists, errors that name the flag, and --extra-body (inline or @FILE, an object or refused).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench/bench_options.h"

#define PARSE(o, err, ...)                                                                    \
  bench_options_parse(o, (int)(sizeof((char *[]){"bench", __VA_ARGS__}) / sizeof(char *)), \
                      (char *[]){"bench", __VA_ARGS__}, err, sizeof err)

static void test_defaults_are_vllms(void **state) {
  (void)state;
  BenchOptions o;
  char err[256];
  assert_true(bench_options_parse(&o, 1, (char *[]){"bench"}, err, sizeof err));
  assert_string_equal(o.host, "127.0.0.1");
  assert_int_equal(o.port, 8000);
  assert_string_equal(o.endpoint, "/v1/completions");
  assert_string_equal(o.endpoint_type, "openai");
  assert_string_equal(o.backend, "vllm");
  assert_string_equal(o.dataset_name, "random");
  assert_int_equal(o.num_prompts, 1000);
  assert_int_equal(o.random_input_len, 1024);
  assert_int_equal(o.random_output_len, 128);
  assert_true(isinf(o.request_rate));
  assert_true(o.burstiness == 1.0);
  assert_int_equal(o.max_concurrency, 0);
  assert_string_equal(o.percentile_metrics, "ttft,tpot,itl");
  assert_string_equal(o.metric_percentiles, "99");
  assert_int_equal(o.ready_check_timeout_sec, 600);
  assert_true(isnan(o.temperature));
}

static void test_spellings_and_lists(void **state) {
  (void)state;
  BenchOptions o;
  char err[256];
  assert_true(PARSE(&o, err, "--num_prompts", "50", "--request-rate=2.5", "--goodput", "ttft:500",
                    "tpot:50", "--metadata", "gpu=H200", "tp=1", "--ignore-eos", "--seed", "7",
                    "--max-concurrency", "16"));
  assert_int_equal(o.num_prompts, 50);
  assert_true(o.request_rate == 2.5);
  assert_int_equal(o.num_goodput, 2);
  assert_string_equal(o.goodput[1], "tpot:50");
  assert_int_equal(o.num_metadata, 2);
  assert_string_equal(o.metadata[0], "gpu=H200");
  assert_true(o.ignore_eos);
  assert_int_equal(o.seed, 7);
  assert_int_equal(o.max_concurrency, 16);
  bench_options_free(&o);
}

static void assert_refused(BenchOptions *o, bool ok, const char *err, const char *expected) {
  (void)o;
  assert_false(ok);
  if (!strstr(err, expected)) fail_msg("error \"%s\" does not contain \"%s\"", err, expected);
}

static void test_errors_name_the_flag(void **state) {
  (void)state;
  BenchOptions o;
  char err[256];
  assert_refused(&o, PARSE(&o, err, "--num-promts", "5"), err, "'--num-promts'");
  assert_refused(&o, PARSE(&o, err, "--num-prompts", "five"), err, "--num-prompts: 'five'");
  assert_refused(&o, PARSE(&o, err, "--num-prompts", "2.5"), err, "--num-prompts");
  assert_refused(&o, PARSE(&o, err, "--num-prompts", "0"), err, "--num-prompts 0 is out of range");
  assert_refused(&o, PARSE(&o, err, "--random-range-ratio", "1.0"), err, "--random-range-ratio");
  assert_refused(&o, PARSE(&o, err, "--request-rate", "-1"), err, "--request-rate");
  assert_refused(&o, PARSE(&o, err, "--seed", "-3"), err, "--seed");
  assert_refused(&o, PARSE(&o, err, "--port"), err, "--port needs a value");
  assert_refused(&o, PARSE(&o, err, "--endpoint-type", "grpc"), err, "--endpoint-type 'grpc'");
  assert_refused(&o, PARSE(&o, err, "--dataset-name", "sharegpt"), err, "--dataset-path");
  assert_refused(&o, PARSE(&o, err, "--dataset-name", "sonet"), err, "'sonet'");
  assert_refused(&o, PARSE(&o, err, "--ignore-eos=1"), err, "--ignore-eos takes no value");
  assert_refused(&o, PARSE(&o, err, "--goodput"), err, "--goodput needs at least one value");
  assert_refused(&o, PARSE(&o, err, "stray"), err, "'stray'");
}

// vLLM v0.10.2's ramp-up checks (its messages), later vLLM's --header, flags accepted with no
// effect as in vLLM, and the ones refused with a reason.
static void test_ramp_up_and_other_vllm_flags(void **state) {
  (void)state;
  BenchOptions o;
  char err[512];
  assert_true(PARSE(&o, err, "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "2",
                    "--ramp-up-end-rps", "20", "--header", "X-A=1", " X-B = c=d ", "--logprobs", "5",
                    "--no-stream", "--use-beam-search", "--trust-remote-code", "--tokenizer-mode",
                    "auto"));
  assert_string_equal(o.ramp_up_strategy, "linear");
  assert_int_equal(o.ramp_up_start_rps, 2);
  assert_int_equal(o.ramp_up_end_rps, 20);
  assert_int_equal(o.num_header, 2);
  assert_string_equal(o.header_lines[0], "X-A: 1");
  assert_string_equal(o.header_lines[1], "X-B: c=d");
  assert_int_equal(o.logprobs, 5);
  bench_options_free(&o);
  assert_true(PARSE(&o, err, "--num-prompts", "3"));
  assert_int_equal(o.logprobs, -1);  // not given: "logprobs": null
  assert_null(o.ramp_up_strategy);
  bench_options_free(&o);
  static const struct {
    const char *args[7], *error;
  } cases[] = {
      {{"--ramp-up-strategy", "sine", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "2"},
       "--ramp-up-strategy 'sine' is not supported: use linear or exponential"},
      {{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1"},
       "both --ramp-up-start-rps and --ramp-up-end-rps must be specified"},
      {{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "2",
        "--request-rate=4"},
       "When using ramp-up, do not specify --request-rate."},
      {{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "3", "--ramp-up-end-rps", "2"},
       "Ramp-up start RPS must be less than end RPS"},
      {{"--ramp-up-strategy", "exponential", "--ramp-up-start-rps", "0", "--ramp-up-end-rps", "2"},
       "For exponential ramp-up, the start RPS cannot be 0."},
      {{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "0", "--ramp-up-end-rps", "2"},
       "--ramp-up-start-rps 0: request 0 would be paced at 0 requests/s"},
      {{"--ramp-up-end-rps", "2"}, "go with --ramp-up-strategy"},
      {{"--ramp-up-start-rps", "-1"}, "--ramp-up-start-rps -1 is out of range"},
      {{"--header", "novalue"}, "--header 'novalue': use KEY=VALUE"},
      {{"--header", "a b=c"}, "--header 'a b=c': use KEY=VALUE"},
      {{"--tokenizer-mode", "mistral"}, "--tokenizer-mode mistral is not supported"},
      {{"--profile"}, "--profile is not supported: it starts and stops vLLM's torch profiler"},
      {{"--lora_modules", "a", "b"}, "--lora-modules is not supported: LoRA adapters"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *argv[9] = {"bench"};
    int argc = 1;
    for (; argc < 8 && cases[i].args[argc - 1]; argc++) argv[argc] = (char *)cases[i].args[argc - 1];
    bool ok = bench_options_parse(&o, argc, argv, err, sizeof err);
    assert_refused(&o, ok, err, cases[i].error);
    bench_options_free(&o);
  }
}

// --backend picks the request format (the study's `--backend openai-chat --endpoint
// /v1/chat/completions` must send chat bodies); --endpoint-type, its older name, must agree.
static void test_backend_picks_the_format(void **state) {
  (void)state;
  BenchOptions o;
  char err[256];
  assert_true(PARSE(&o, err, "--backend", "openai-chat", "--endpoint", "/v1/chat/completions"));
  assert_string_equal(o.endpoint_type, "openai-chat");
  assert_true(PARSE(&o, err, "--backend", "openai"));
  assert_string_equal(o.endpoint_type, "openai");
  assert_true(PARSE(&o, err, "--backend", "vllm"));
  assert_string_equal(o.endpoint_type, "openai");
  assert_true(PARSE(&o, err, "--endpoint-type", "openai-chat"));
  assert_string_equal(o.endpoint_type, "openai-chat");
  assert_string_equal(o.backend, "openai-chat");
  assert_true(PARSE(&o, err, "--backend", "vllm", "--endpoint-type", "openai"));  // both prompt
  assert_string_equal(o.endpoint_type, "openai");
  assert_true(PARSE(&o, err, "--backend", "openai-chat", "--endpoint-type", "openai-chat"));
  assert_refused(&o, PARSE(&o, err, "--backend", "openai-chat", "--endpoint-type", "openai"), err,
                 "--backend openai-chat and --endpoint-type openai ask for different request");
  assert_refused(&o, PARSE(&o, err, "--backend", "tgi"), err,
                 "--backend 'tgi' is not supported: gptoss-bench speaks the OpenAI-compatible");
}

static void assert_extra_body(const BenchOptions *o, const char *expected) {
  char *text = cJSON_PrintUnformatted(o->extra_body);
  assert_string_equal(text, expected);
  cJSON_free(text);
}

static void test_extra_body(void **state) {
  (void)state;
  BenchOptions o;
  char err[512], path[] = "/tmp/test_bench_options_XXXXXX";
  assert_true(PARSE(&o, err, "--extra-body", "{\"top_k\": 1}"));
  assert_extra_body(&o, "{\"top_k\":1}");
  bench_options_free(&o);
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "{\"logit_bias\": {}}", 18), 18);
  close(fd);
  char arg[64];
  snprintf(arg, sizeof arg, "@%s", path);
  assert_true(PARSE(&o, err, "--extra-body", arg));
  assert_extra_body(&o, "{\"logit_bias\":{}}");
  bench_options_free(&o);
  unlink(path);
  assert_false(PARSE(&o, err, "--extra-body", "[1, 2]"));
  assert_non_null(strstr(err, "--extra-body [1, 2]: not a JSON object"));
  bench_options_free(&o);
  assert_false(PARSE(&o, err, "--extra-body", arg));  // the file is gone
  assert_non_null(strstr(err, path));
  bench_options_free(&o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults_are_vllms),
      cmocka_unit_test(test_spellings_and_lists),
      cmocka_unit_test(test_errors_name_the_flag),
      cmocka_unit_test(test_backend_picks_the_format),
      cmocka_unit_test(test_ramp_up_and_other_vllm_flags),
      cmocka_unit_test(test_extra_body),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
