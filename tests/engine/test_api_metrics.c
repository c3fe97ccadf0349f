// test_api_metrics.c: /metrics' text against vLLM's exposition (vllm/v1/metrics/loggers.py and
// prometheus_client's format): float formatting of bucket bounds, vLLM's 1-2-5 buckets, the
// inclusive le of each bucket, the request histograms fed event by event with hand-computed
// bins, counts and sums, request_success by finish reason, the prefix-cache counters, and a rule
// check of the whole text (every sample under its own # TYPE, buckets cumulative and ending in
// +Inf == _count).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_latency.h"
#include "api/api_metrics.h"

static void test_float_format(void **state) {
  (void)state;
  // prometheus_client's floatToGoString: Python's repr, Go's exponent from 1e6.
  const struct {
    double v;
    const char *want;
  } cases[] = {{0.001, "0.001"},          {0.3, "0.3"},         {1, "1.0"},
               {2560, "2560.0"},          {100000, "100000.0"}, {1e6, "1e+06"},
               {1234567, "1.234567e+06"}, {2e7, "2e+07"},       {1e-5, "1e-05"},
               {0.0001, "0.0001"},        {0, "0.0"},           {INFINITY, "+Inf"},
               {1.6384, "1.6384"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char got[32];
    api_metrics_float(cases[i].v, got);
    assert_string_equal(got, cases[i].want);
  }
}

static void test_buckets_125(void **state) {
  (void)state;
  ApiHistogram h;
  api_histogram_init_125(&h, 100);  // vLLM's docstring: [1, 2, 5, 10, 20, 50, 100]
  const double want[] = {1, 2, 5, 10, 20, 50, 100};
  assert_int_equal(h.num_bounds, 7);
  for (int i = 0; i < 7; i++) assert_true(h.bounds[i] == want[i]);
  api_histogram_init_125(&h, 4096);  // ..., 1000, 2000 (5000 > 4096)
  assert_int_equal(h.num_bounds, 11);
  assert_true(h.bounds[10] == 2000);
}

static void test_observe_inclusive(void **state) {
  (void)state;
  const double bounds[] = {1, 2, 5};
  ApiHistogram h;
  api_histogram_init(&h, bounds, 3);
  api_histogram_observe(&h, 1);    // le="1" holds 1 itself
  api_histogram_observe(&h, 1.5);  // (1, 2]
  api_histogram_observe(&h, 2);    // (1, 2]
  api_histogram_observe(&h, 9);    // above every bound: +Inf only
  assert_int_equal(h.bins[0], 1);
  assert_int_equal(h.bins[1], 2);
  assert_int_equal(h.bins[2], 0);
  assert_int_equal(h.bins[3], 1);
  assert_int_equal(h.count, 4);
  assert_true(h.sum == 13.5);
}

static const int64_t MS = 1000000;

static TokenEvent token(uint32_t num_out, FinishReason finish) {
  return (TokenEvent){.request_id = 1,
                      .has_token = true,
                      .finish = finish,
                      .num_prompt_tokens = 7,
                      .num_output_tokens = num_out};
}

// Two finished requests and an aborted one, at hand-picked times (off every bucket bound).
static void feed(ApiLatency *l) {
  ApiLatencyTrack a, b, c;
  api_latency_submitted(&a, 16, 1000 * MS);
  api_latency_event(l, &a, &(TokenEvent){.request_id = 1, .has_token = false}, 1010 * MS);
  TokenEvent t = token(1, FINISH_NONE);
  api_latency_event(l, &a, &t, 1050 * MS);  // TTFT 0.05 s
  t = token(2, FINISH_NONE);
  api_latency_event(l, &a, &t, 1070 * MS);  // ITL 0.02 s
  t = token(3, FINISH_STOP);
  api_latency_event(l, &a, &t, 1130 * MS);  // ITL 0.06 s; e2e 0.13 s, decode 0.08 s
  api_latency_submitted(&b, 1, 2000 * MS);
  t = token(1, FINISH_LENGTH);
  api_latency_event(l, &b, &t, 3200 * MS);  // TTFT 1.2 s; e2e 1.2 s, decode 0
  api_latency_submitted(&c, 50, 5000 * MS);
  api_latency_event(l, &c, &(TokenEvent){.request_id = 3, .finish = FINISH_ABORT}, 5100 * MS);
}

static void test_request_histograms(void **state) {
  (void)state;
  ApiLatency l;
  api_latency_init(&l, 100);
  feed(&l);
  ApiLatencyStats st;
  api_latency_read(&l, &st);
  api_latency_free(&l);
  const ApiHistogram *h = st.hist;
  // TTFT bounds 0.04, 0.06, ..., 1.0, 2.5: 0.05 in le=0.06 (index 5), 1.2 in le=2.5 (index 12).
  assert_int_equal(h[API_LAT_TTFT].count, 2);
  assert_int_equal(h[API_LAT_TTFT].bins[5], 1);
  assert_int_equal(h[API_LAT_TTFT].bins[12], 1);
  assert_true(fabs(h[API_LAT_TTFT].sum - 1.25) < 1e-12);
  // ITL bounds 0.01, 0.025, 0.05, 0.075: 0.02 in le=0.025, 0.06 in le=0.075.
  assert_int_equal(h[API_LAT_ITL].count, 2);
  assert_int_equal(h[API_LAT_ITL].bins[1], 1);
  assert_int_equal(h[API_LAT_ITL].bins[3], 1);
  // e2e bounds 0.3, 0.5, 0.8, 1.0, 1.5: 0.13 in le=0.3, 1.2 in le=1.5; the abort is not timed.
  assert_int_equal(h[API_LAT_E2E].count, 2);
  assert_int_equal(h[API_LAT_E2E].bins[0], 1);
  assert_int_equal(h[API_LAT_E2E].bins[4], 1);
  assert_true(fabs(h[API_LAT_E2E].sum - 1.33) < 1e-12);
  assert_int_equal(h[API_LAT_DECODE].bins[0], 2);  // 0.08 s and 0 s
  assert_true(fabs(h[API_LAT_DECODE].sum - 0.08) < 1e-12);
  // Token counts over 1, 2, 5, 10, ...: prompts 7 and 7 in le=10; outputs 3 (le=5) and 1 (le=1);
  // max_tokens 16 (le=20) and 1 (le=1).
  assert_int_equal(h[API_LAT_PROMPT_TOKENS].bins[3], 2);
  assert_int_equal(h[API_LAT_GENERATION_TOKENS].bins[2], 1);
  assert_int_equal(h[API_LAT_GENERATION_TOKENS].bins[0], 1);
  assert_true(h[API_LAT_GENERATION_TOKENS].sum == 4);
  assert_int_equal(h[API_LAT_MAX_TOKENS].bins[4], 1);
  assert_int_equal(h[API_LAT_MAX_TOKENS].bins[0], 1);
  assert_int_equal(st.num_finished[0], 1);  // stop
  assert_int_equal(st.num_finished[1], 1);  // length
  assert_int_equal(st.num_finished[2], 1);  // abort
}

// Rules of the text format the metrics must keep: a # TYPE before every family's samples, no
// family twice, names of [a-zA-Z_:][a-zA-Z0-9_:]*, histogram buckets non-decreasing and ending
// in le="+Inf" equal to _count.
static void check_text_rules(const char *text) {
  char family[128] = "", type[32] = "";
  char seen[4096] = " ";
  unsigned long long last_bucket = 0;
  bool in_buckets = false;
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    assert_non_null(end);
    char l[512];
    snprintf(l, sizeof l, "%.*s", (int)(end - line), line);
    line = end + 1;
    if (strncmp(l, "# HELP ", 7) == 0) continue;
    if (strncmp(l, "# TYPE ", 7) == 0) {
      assert_int_equal(sscanf(l + 7, "%127s %31s", family, type), 2);
      char key[140];
      snprintf(key, sizeof key, " %s ", family);
      if (strstr(seen, key)) fail_msg("family %s twice", family);
      strcat(seen, key + 1);
      in_buckets = false;
      continue;
    }
    size_t name_len = strcspn(l, "{ ");
    for (size_t i = 0; i < name_len; i++)
      assert_true(l[i] == '_' || l[i] == ':' || (l[i] >= 'a' && l[i] <= 'z') ||
                  (l[i] >= 'A' && l[i] <= 'Z') || (i > 0 && l[i] >= '0' && l[i] <= '9'));
    if (strncmp(l, family, strlen(family)) != 0) fail_msg("%s outside its # TYPE", l);
    const char *suffix = l + strlen(family);
    if (strcmp(type, "histogram") != 0) {
      assert_true(*suffix == '{');
      continue;
    }
    unsigned long long v = strtoull(strrchr(l, ' ') + 1, NULL, 10);
    if (strncmp(suffix, "_bucket{", 8) == 0) {
      if (in_buckets && v < last_bucket) fail_msg("buckets decrease at %s", l);
      in_buckets = true;
      last_bucket = v;
      if (strstr(l, "le=\"+Inf\"")) in_buckets = false;
    } else if (strncmp(suffix, "_count{", 7) == 0) {
      if (v != last_bucket) fail_msg("%s is not the +Inf bucket (%llu)", l, last_bucket);
    } else {
      assert_int_equal(strncmp(suffix, "_sum{", 5), 0);
    }
  }
}

static void test_text(void **state) {
  (void)state;
  ApiLatency l;
  api_latency_init(&l, 100);
  feed(&l);
  ApiLatencyStats lat;
  api_latency_read(&l, &lat);
  api_latency_free(&l);
  EngineStats st = {.num_running = 1,
                    .num_kv_blocks_used = 1,
                    .num_kv_blocks = 8,
                    .prefix_cache_queries = 96,
                    .prefix_cache_hits = 64};
  ApiHttpStats http = {0};
  Buf out = {0};
  api_metrics_text(&st, &lat, &http, "m\"x", &out);
  const char *want[] = {
      "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
      "# TYPE vllm:kv_cache_usage_perc gauge\n"
      "vllm:kv_cache_usage_perc{model_name=\"m\\\"x\",engine=\"0\"} 0.125\n",
      "vllm:gpu_cache_usage_perc{model_name=\"m\\\"x\",engine=\"0\"} 0.125\n",
      "# TYPE vllm:prefix_cache_queries_total counter\n"
      "vllm:prefix_cache_queries_total{model_name=\"m\\\"x\",engine=\"0\"} 96\n",
      "vllm:prefix_cache_hits_total{model_name=\"m\\\"x\",engine=\"0\"} 64\n",
      "vllm:request_success_total{model_name=\"m\\\"x\",engine=\"0\",finished_reason=\"stop\"} 1\n"
      "vllm:request_success_total{model_name=\"m\\\"x\",engine=\"0\",finished_reason=\"length\"} "
      "1\n"
      "vllm:request_success_total{model_name=\"m\\\"x\",engine=\"0\",finished_reason=\"abort\"} "
      "1\n",
      "# TYPE vllm:time_to_first_token_seconds histogram\n"
      "vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"x\",engine=\"0\",le=\"0.001\"} "
      "0\n",
      "vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"x\",engine=\"0\",le=\"0.04\"} 0\n"
      "vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"x\",engine=\"0\",le=\"0.06\"} 1\n",
      "vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"x\",engine=\"0\",le=\"1.0\"} 1\n"
      "vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"x\",engine=\"0\",le=\"2.5\"} 2\n",
      "vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"x\",engine=\"0\",le=\"2560.0\"} "
      "2\n"
      "vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"x\",engine=\"0\",le=\"+Inf\"} 2\n"
      "vllm:time_to_first_token_seconds_count{model_name=\"m\\\"x\",engine=\"0\"} 2\n"
      "vllm:time_to_first_token_seconds_sum{model_name=\"m\\\"x\",engine=\"0\"} 1.25\n",
      "# TYPE vllm:inter_token_latency_seconds histogram\n",
      "vllm:inter_token_latency_seconds_bucket{model_name=\"m\\\"x\",engine=\"0\",le=\"0.075\"} "
      "2\n",
      "vllm:time_per_output_token_seconds_count{model_name=\"m\\\"x\",engine=\"0\"} 2\n",
      "vllm:e2e_request_latency_seconds_bucket{model_name=\"m\\\"x\",engine=\"0\",le=\"7680.0\"} "
      "2\n",
      "vllm:request_prompt_tokens_bucket{model_name=\"m\\\"x\",engine=\"0\",le=\"5.0\"} 0\n"
      "vllm:request_prompt_tokens_bucket{model_name=\"m\\\"x\",engine=\"0\",le=\"10.0\"} 2\n",
      "vllm:request_params_max_tokens_bucket{model_name=\"m\\\"x\",engine=\"0\",le=\"100.0\"} 2\n"
      "vllm:request_params_max_tokens_bucket{model_name=\"m\\\"x\",engine=\"0\",le=\"+Inf\"} 2\n",
      "# TYPE vllm:request_decode_time_seconds histogram\n",
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    if (!strstr(out.data, want[i])) fail_msg("no text\n%s\nin:\n%s", want[i], out.data);
  check_text_rules(out.data);
  buf_free(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_float_format),
      cmocka_unit_test(test_buckets_125),
      cmocka_unit_test(test_observe_inclusive),
      cmocka_unit_test(test_request_histograms),
      cmocka_unit_test(test_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
