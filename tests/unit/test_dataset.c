// test_dataset.c: ShareGPT loading against a hand-counted fixture (tests/fixtures/bench/
// sharegpt-small.json; its long values are one word repeated, one token each, e.g. "word word
// ..." 1024 times = 1024 tokens), malformed-file and too-few errors, determinism, the shipped
// synthetic dataset's study totals, and the random dataset's lengths.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/dataset.h"
#include "text/tokenizer.h"
#include "harmony_fixture.h"

#define FIXTURES "tests/fixtures/bench/"
#define SMALL FIXTURES "sharegpt-small.json"


// The fixture's usable pairs, counted by hand: a prompt's first words, its tokens, its answer's.
typedef struct {
  const char *prompt_start;
  uint32_t prompt_len, output_len;
} Expected;

static const Expected USABLE[] = {
    {"What is the capital", 7, 7},   // capital
    {"Count to five", 4, 4},         // four-and-four: both at the 4-token minimum
    {"word word", 1024, 4},          // prompt-1024: the longest prompt allowed
    {"tick tick", 1000, 1048},       // total-2048: the longest pair allowed
    {"Summarize the plot", 11, 12},  // roles-swapped: "from" is not checked
    {"Tell me a joke", 7, 17},       // follow-up: only the first two of four turns count
};
// Dropped: single-turn, short-prompt (1 token), short-answer (3), prompt-1025, total-2049
// (1000 + 1049), no-conversations, empty-conversations.
enum { NUM_USABLE = sizeof USABLE / sizeof *USABLE, NUM_ENTRIES = 13 };

static const Expected *find_expected(const BenchRequest *r) {
  for (size_t i = 0; i < NUM_USABLE; i++)
    if (strncmp(r->prompt, USABLE[i].prompt_start, strlen(USABLE[i].prompt_start)) == 0)
      return &USABLE[i];
  return NULL;
}

static bool load(const Tokenizer *t, ShareGptParams p, Dataset *d, char *err, size_t err_size) {
  return dataset_load_sharegpt(&p, t, d, err, err_size);
}

static void test_sharegpt_filter_keeps_hand_counted_pairs(void **state) {
  Dataset d;
  char err[1024] = "";
  assert_true(load(*state, (ShareGptParams){SMALL, NUM_USABLE, 0, -1, true}, &d, err, sizeof err));
  assert_int_equal(d.num_requests, NUM_USABLE);
  assert_int_equal(d.num_oversampled, 0);
  assert_string_equal(d.name, "sharegpt");
  bool seen[NUM_USABLE] = {0};
  for (size_t i = 0; i < d.num_requests; i++) {
    const Expected *e = find_expected(&d.requests[i]);
    assert_non_null(e);
    assert_false(seen[e - USABLE]);
    seen[e - USABLE] = true;
    assert_int_equal(d.requests[i].prompt_len, e->prompt_len);
    assert_int_equal(d.requests[i].expected_output_len, e->output_len);
  }
  dataset_free(&d);
}

static void test_sharegpt_output_len_overrides_and_skips_min_check(void **state) {
  Dataset d;
  char err[1024] = "";
  // 10 output tokens: short-answer (6 + 10) and total-2049 (1000 + 10) now pass as well.
  assert_true(load(*state, (ShareGptParams){SMALL, 8, 1, 10, true}, &d, err, sizeof err));
  assert_int_equal(d.num_requests, 8);
  for (size_t i = 0; i < d.num_requests; i++)
    assert_int_equal(d.requests[i].expected_output_len, 10);
  dataset_free(&d);
  // 1100: every prompt over 948 tokens breaks the 2048 total; 5 are left.
  assert_false(load(*state, (ShareGptParams){SMALL, 6, 1, 1100, true}, &d, err, sizeof err));
  assert_non_null(strstr(err, "only 5 usable conversations found"));
}

static void test_sharegpt_too_few_says_how_many(void **state) {
  Dataset d;
  char err[1024] = "";
  assert_false(load(*state, (ShareGptParams){SMALL, 1000, 0, -1, true}, &d, err, sizeof err));
  assert_non_null(strstr(err, SMALL ": only 6 usable conversations found (of 13 entries"));
  assert_non_null(strstr(err, "--num-prompts is 1000"));
  assert_null(d.requests);
}

static void test_sharegpt_oversamples_like_vllm_by_default(void **state) {
  Dataset d;
  char err[1024] = "";
  assert_true(load(*state, (ShareGptParams){SMALL, 20, 0, -1, false}, &d, err, sizeof err));
  assert_int_equal(d.num_requests, 20);
  assert_int_equal(d.num_oversampled, 20 - NUM_USABLE);
  for (size_t i = 0; i < d.num_requests; i++) assert_non_null(find_expected(&d.requests[i]));
  dataset_free(&d);
}

static void test_sharegpt_same_seed_same_order(void **state) {
  Dataset a, b, c;
  char err[1024] = "";
  assert_true(load(*state, (ShareGptParams){SMALL, 3, 7, -1, true}, &a, err, sizeof err));
  assert_true(load(*state, (ShareGptParams){SMALL, 3, 7, -1, true}, &b, err, sizeof err));
  assert_true(load(*state, (ShareGptParams){SMALL, NUM_USABLE, 8, -1, true}, &c, err, sizeof err));
  bool same_as_other_seed = true;
  for (size_t i = 0; i < 3; i++) {
    assert_string_equal(a.requests[i].prompt, b.requests[i].prompt);
    same_as_other_seed &= strcmp(a.requests[i].prompt, c.requests[i].prompt) == 0;
  }
  assert_false(same_as_other_seed);
  dataset_free(&a);
  dataset_free(&b);
  dataset_free(&c);
}

static void test_sharegpt_malformed_file_gives_line_and_column(void **state) {
  Dataset d;
  char err[1024] = "";
  const char *path = FIXTURES "sharegpt-malformed.json";
  assert_false(load(*state, (ShareGptParams){path, 1, 0, -1, false}, &d, err, sizeof err));
  // The missing comma: the second turn's '{' on line 6, column 7.
  assert_non_null(strstr(err, FIXTURES "sharegpt-malformed.json:6:7: "));
  assert_non_null(strstr(err, "not valid JSON"));

  path = FIXTURES "sharegpt-not-a-list.json";
  assert_false(load(*state, (ShareGptParams){path, 1, 0, -1, false}, &d, err, sizeof err));
  assert_non_null(strstr(err, "the top level is not a list"));

  path = FIXTURES "no-such-file.json";
  assert_false(load(*state, (ShareGptParams){path, 1, 0, -1, false}, &d, err, sizeof err));
  assert_non_null(strstr(err, "cannot read ShareGPT file " FIXTURES "no-such-file.json"));
}

// JSON may carry \u0000; the prompt is a C string, so it becomes U+FFFD and is counted as sent.
static void test_sharegpt_nul_in_text_becomes_replacement(void **state) {
  Dataset d;
  char err[1024] = "";
  const char *path = FIXTURES "sharegpt-nul.json";
  assert_true(load(*state, (ShareGptParams){path, 1, 0, -1, true}, &d, err, sizeof err));
  assert_string_equal(d.requests[0].prompt, "Say\xEF\xBF\xBD hello to the world");
  TokenIds ids = {0};
  tok_encode(*state, d.requests[0].prompt, strlen(d.requests[0].prompt), true, &ids);
  assert_int_equal(d.requests[0].prompt_len, ids.len);
  token_ids_free(&ids);
  dataset_free(&d);
}

// The shipped stand-in: named as synthetic, and the study's workload numbers (datasets/README.md).
static void test_shipped_synthetic_dataset_matches_study(void **state) {
  Dataset d;
  char err[1024] = "";
  assert_true(load(*state, (ShareGptParams){"datasets/sharegpt-synth.json", 1000, 0, -1, true}, &d,
                   err, sizeof err));
  assert_string_equal(d.name, "sharegpt-synth");
  uint64_t input = 0, output = 0;
  for (size_t i = 0; i < d.num_requests; i++) {
    input += d.requests[i].prompt_len;
    output += d.requests[i].expected_output_len;
  }
  assert_in_range(input, 215312 * 98 / 100, 215312 * 102 / 100);
  assert_in_range(output, 196000 * 98 / 100, 196000 * 102 / 100);
  dataset_free(&d);
}

static void test_random_lengths_within_range_ratio(void **state) {
  const Tokenizer *t = *state;
  RandomParams p = {.num_requests = 200, .input_len = 100, .output_len = 20, .range_ratio = 0.5,
                    .seed = 3};
  RandomBounds b;
  char err[256];
  assert_true(dataset_random_bounds(&p, &b, err, sizeof err));
  assert_int_equal(b.input_lo, 50);
  assert_int_equal(b.input_hi, 150);
  assert_int_equal(b.output_lo, 10);
  assert_int_equal(b.output_hi, 30);
  Dataset d;
  assert_true(dataset_make_random(&p, t, &d, err, sizeof err));
  assert_int_equal(d.num_requests, 200);
  assert_string_equal(d.name, "random");
  uint32_t min_out = UINT32_MAX, max_out = 0, min_in = UINT32_MAX, max_in = 0;
  size_t num_exact = 0;
  TokenIds ids = {0};
  for (size_t i = 0; i < d.num_requests; i++) {
    const BenchRequest *r = &d.requests[i];
    min_out = r->expected_output_len < min_out ? r->expected_output_len : min_out;
    max_out = r->expected_output_len > max_out ? r->expected_output_len : max_out;
    min_in = r->prompt_len < min_in ? r->prompt_len : min_in;
    max_in = r->prompt_len > max_in ? r->prompt_len : max_in;
    // prompt_len is the cut of the re-encoded text; re-encoding the final prompt gives it back
    // unless the cut split a character (then U+FFFD can add or merge a token).
    ids.len = 0;
    tok_encode(t, r->prompt, strlen(r->prompt), true, &ids);
    assert_in_range(ids.len, r->prompt_len - 1, r->prompt_len + 1);
    num_exact += ids.len == r->prompt_len;
  }
  assert_in_range(min_out, 10, 30);
  assert_in_range(max_out, 10, 30);
  assert_true(max_out - min_out >= 15);  // the whole range is used
  assert_true(min_in < 75 && max_in > 125 && max_in <= 150);
  assert_true(num_exact >= 190);
  token_ids_free(&ids);
  dataset_free(&d);
}

static void test_random_is_deterministic_and_prefix_shared(void **state) {
  RandomParams p = {.num_requests = 20, .input_len = 64, .output_len = 8, .prefix_len = 16,
                    .seed = 42};
  Dataset a, b, c;
  char err[256];
  assert_true(dataset_make_random(&p, *state, &a, err, sizeof err));
  assert_true(dataset_make_random(&p, *state, &b, err, sizeof err));
  p.seed = 43;
  assert_true(dataset_make_random(&p, *state, &c, err, sizeof err));
  for (size_t i = 0; i < 20; i++) {
    assert_string_equal(a.requests[i].prompt, b.requests[i].prompt);
    assert_int_equal(a.requests[i].prompt_len, b.requests[i].prompt_len);
    assert_true(a.requests[i].prompt_len <= 16 + 64);
    assert_int_equal(a.requests[i].expected_output_len, 8);  // ratio 0: exactly the length
  }
  assert_string_not_equal(a.requests[0].prompt, c.requests[0].prompt);
  // The 16 prefix ids are the same for every request, so the texts start alike.
  assert_memory_equal(a.requests[0].prompt, a.requests[19].prompt, 8);
  dataset_free(&a);
  dataset_free(&b);
  dataset_free(&c);
}

static void test_random_rejects_bad_flags(void **state) {
  Dataset d;
  char err[256];
  RandomParams p = {.num_requests = 1, .input_len = 10, .output_len = 10, .range_ratio = 1.0};
  assert_false(dataset_make_random(&p, *state, &d, err, sizeof err));
  assert_non_null(strstr(err, "--random-range-ratio"));
  p.range_ratio = 0;
  p.output_len = 0;
  assert_false(dataset_make_random(&p, *state, &d, err, sizeof err));
  assert_non_null(strstr(err, "--random-output-len"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sharegpt_filter_keeps_hand_counted_pairs),
      cmocka_unit_test(test_sharegpt_output_len_overrides_and_skips_min_check),
      cmocka_unit_test(test_sharegpt_too_few_says_how_many),
      cmocka_unit_test(test_sharegpt_oversamples_like_vllm_by_default),
      cmocka_unit_test(test_sharegpt_same_seed_same_order),
      cmocka_unit_test(test_sharegpt_malformed_file_gives_line_and_column),
      cmocka_unit_test(test_sharegpt_nul_in_text_becomes_replacement),
      cmocka_unit_test(test_shipped_synthetic_dataset_matches_study),
      cmocka_unit_test(test_random_lengths_within_range_ratio),
      cmocka_unit_test(test_random_is_deterministic_and_prefix_shared),
      cmocka_unit_test(test_random_rejects_bad_flags),
  };
  return cmocka_run_group_tests(tests, harmony_setup, harmony_teardown);
}
