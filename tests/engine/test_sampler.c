// test_sampler.c: greedy, temperature, top-k and top-p sampling: argmax ties, determinism per
// seed, a draw taken before the logits (as a device sampler is handed it), empirical frequencies
// against hand-computed probabilities, vLLM's top-k-then-top-p order, and the bucketed kept set
// against a full sort on a 201,088-token vocabulary; logits processing (repetition, frequency and
// presence penalties, logit bias, the min_tokens mask, in vLLM's order) and raw top logprobs
// against hand-computed values.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/pick.h"
#include "core/sampler.h"

#define NUM_DRAWS 40000

// Frequencies of each id over NUM_DRAWS draws.
static void frequencies(const float *logits, int n, SamplingParams p, double *freq) {
  SamplerRng rng;
  sampler_rng_seed(&rng, 1234);
  SamplerScratch s = {0};
  memset(freq, 0, (size_t)n * sizeof *freq);
  for (int i = 0; i < NUM_DRAWS; i++)
    freq[sampler_sample(logits, n, &p, &rng, &s)] += 1.0 / NUM_DRAWS;
  sampler_scratch_free(&s);
}

// logits whose softmax at temperature 1 is probs
static void logits_of(const double *probs, int n, float *logits) {
  for (int i = 0; i < n; i++) logits[i] = (float)log(probs[i]);
}

static void assert_freq(const double *freq, const double *expected, int n) {
  for (int i = 0; i < n; i++)
    if (fabs(freq[i] - expected[i]) > 0.01)
      fail_msg("id %d: frequency %.4f, expected %.4f", i, freq[i], expected[i]);
}

static void test_greedy_is_argmax_with_lowest_id_on_ties(void **state) {
  (void)state;
  float logits[] = {1, 5, 3, 5, -2};
  SamplingParams p = {.temperature = 0, .top_p = 1};
  SamplerRng rng;
  sampler_rng_seed(&rng, 0);
  SamplerScratch s = {0};
  assert_int_equal(sampler_sample(logits, 5, &p, &rng, &s), 1);
  p = (SamplingParams){.temperature = 1, .top_p = 1, .top_k = 1};  // top-1 is greedy too
  assert_int_equal(sampler_sample(logits, 5, &p, &rng, &s), 1);
  sampler_scratch_free(&s);
}

// Greedy over lengths around the sampler's blocks of 16: the maximum first, last, in the tail,
// tied across lanes (the lowest id wins), next to NaNs (which never win unless at index 0).
static void test_greedy_at_every_position_and_length(void **state) {
  (void)state;
  SamplingParams p = {.temperature = 0, .top_p = 1};
  SamplerRng rng;
  sampler_rng_seed(&rng, 0);
  SamplerScratch s = {0};
  float x[70];
  for (int n = 1; n <= 70; n++) {
    for (int at = 0; at < n; at++) {
      for (int i = 0; i < n; i++) x[i] = (float)((i * 7) % 5) - 10.0f;
      x[at] = 3.0f;
      if (at + 17 < n) x[at + 17] = 3.0f;  // a tie in another lane, later
      if (at + 1 < n) x[at + 1] = NAN;
      assert_int_equal(sampler_sample(x, n, &p, &rng, &s), at);
    }
  }
  for (int i = 0; i < 40; i++) x[i] = (float)i;
  x[0] = NAN;
  assert_int_equal(sampler_sample(x, 40, &p, &rng, &s), 0);
  sampler_scratch_free(&s);
}

static void test_temperature_follows_the_softmax(void **state) {
  (void)state;
  double probs[] = {0.5, 0.3, 0.15, 0.05};
  float logits[4];
  double freq[4];
  logits_of(probs, 4, logits);
  frequencies(logits, 4, (SamplingParams){.temperature = 1, .top_p = 1}, freq);
  assert_freq(freq, probs, 4);
  // temperature 0.5 squares the probabilities before normalising: 25, 9, 2.25, 0.25 of 36.5
  frequencies(logits, 4, (SamplingParams){.temperature = 0.5f, .top_p = 1}, freq);
  assert_freq(freq, (double[]){25 / 36.5, 9 / 36.5, 2.25 / 36.5, 0.25 / 36.5}, 4);
}

static void test_top_k_and_top_p(void **state) {
  (void)state;
  double probs[] = {0.5, 0.3, 0.15, 0.05};
  float logits[4];
  double freq[4];
  logits_of(probs, 4, logits);
  frequencies(logits, 4, (SamplingParams){.temperature = 1, .top_p = 1, .top_k = 2}, freq);
  assert_freq(freq, (double[]){0.625, 0.375, 0, 0}, 4);
  // nucleus 0.7: 0.5 < 0.7, then 0.8 >= 0.7 -> {0, 1}
  frequencies(logits, 4, (SamplingParams){.temperature = 1, .top_p = 0.7f}, freq);
  assert_freq(freq, (double[]){0.625, 0.375, 0, 0}, 4);
  // nucleus 0.85: 0.95 >= 0.85 -> {0, 1, 2}
  frequencies(logits, 4, (SamplingParams){.temperature = 1, .top_p = 0.85f}, freq);
  assert_freq(freq, (double[]){0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0}, 4);
  // top-k 3 first (mass 0.95), then top-p 0.82 of that mass (0.779): 0.5, then 0.8 -> {0, 1}
  frequencies(logits, 4, (SamplingParams){.temperature = 1, .top_p = 0.82f, .top_k = 3}, freq);
  assert_freq(freq, (double[]){0.625, 0.375, 0, 0}, 4);
}

static void test_same_seed_same_tokens(void **state) {
  (void)state;
  float logits[64];
  for (int i = 0; i < 64; i++) logits[i] = (float)((i * 37) % 11) / 3.0f;
  SamplingParams p = {.temperature = 1, .top_p = 0.9f, .top_k = 40};
  SamplerScratch s = {0};
  SamplerRng a, b, c;
  sampler_rng_seed(&a, 7);
  sampler_rng_seed(&b, 7);
  sampler_rng_seed(&c, 8);
  int num_differ = 0;
  for (int i = 0; i < 200; i++) {
    uint32_t x = sampler_sample(logits, 64, &p, &a, &s);
    assert_int_equal(x, sampler_sample(logits, 64, &p, &b, &s));
    num_differ += x != sampler_sample(logits, 64, &p, &c, &s);
  }
  assert_true(num_differ > 50);
  sampler_scratch_free(&s);
}

// A draw taken before the logits exist (what a device sampler is handed): greedy takes none;
// otherwise sampling with the draw picks what sampling from the stream picks, and the pick is the
// id whose slice of the cumulative softmax holds the draw (hand-computed: probabilities 0.1, 0.2,
// 0.3, 0.4 from logits log(1), log(2), log(3), log(4)).
static void test_draw_before_the_logits(void **state) {
  (void)state;
  const float logits[4] = {0.0f, logf(2.0f), logf(3.0f), logf(4.0f)};
  SamplerScratch s = {0};
  SamplerRng rng, copy;
  sampler_rng_seed(&rng, 11);
  copy = rng;
  const SamplingParams greedy = {.temperature = 0, .top_p = 1};
  assert_true(sampler_draw(&greedy, &rng) == 0.0);
  assert_memory_equal(&rng, &copy, sizeof rng);  // no draw taken
  const SamplingParams p = {.temperature = 1, .top_p = 1};
  for (int i = 0; i < 100; i++) {
    const uint32_t from_stream = sampler_sample(logits, 4, &p, &copy, &s);
    assert_int_equal(sampler_sample_drawn(logits, 4, &p, sampler_draw(&p, &rng), &s), from_stream);
  }
  const double draws[] = {0.0, 0.05, 0.099, 0.101, 0.29, 0.31, 0.59, 0.61, 0.999};
  const uint32_t want[] = {0, 0, 0, 1, 1, 2, 2, 3, 3};
  for (size_t i = 0; i < sizeof draws / sizeof *draws; i++)
    assert_int_equal(sampler_sample_drawn(logits, 4, &p, draws[i], &s), want[i]);
  assert_true(pick_keeps_all(4, 0, 1.0f));
  assert_true(pick_keeps_all(4, 4, 1.0f));
  assert_false(pick_keeps_all(4, 3, 1.0f));
  assert_false(pick_keeps_all(4, 0, 0.9f));
  sampler_scratch_free(&s);
}

// Over a full vocabulary, the sampled ids always lie in the kept set a plain full sort gives.
static void test_kept_set_matches_a_full_sort(void **state) {
  (void)state;
  enum { VOCAB = 201088 };
  float *logits = malloc(VOCAB * sizeof *logits);
  double *probs = malloc(VOCAB * sizeof *probs);
  uint32_t *order = malloc(VOCAB * sizeof *order);
  bool *kept = malloc(VOCAB);
  srand(3);
  double max = -INFINITY, sum = 0;
  for (int i = 0; i < VOCAB; i++) {
    logits[i] = (float)(rand() % 20000) / 1000.0f;  // many exact ties, as real logits have few
    if (logits[i] > max) max = logits[i];
  }
  for (int i = 0; i < VOCAB; i++) sum += probs[i] = exp((logits[i] - max) / 0.7);
  for (int i = 0; i < VOCAB; i++) order[i] = (uint32_t)i;
  // selection sort of the 2,000 most probable is enough for these limits
  for (int i = 0; i < 2000; i++)
    for (int j = i + 1; j < VOCAB; j++)
      if (probs[order[j]] > probs[order[i]] ||
          (probs[order[j]] == probs[order[i]] && order[j] < order[i])) {  // lower id first
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
      }
  SamplingParams p = {.temperature = 0.7f, .top_p = 0.02f, .top_k = 1500};
  memset(kept, 0, VOCAB);
  double cumulative = 0, top_k_mass = 0;
  for (int i = 0; i < p.top_k; i++) top_k_mass += probs[order[i]] / sum;
  for (int i = 0; i < p.top_k; i++) {
    kept[order[i]] = true;
    cumulative += probs[order[i]] / sum;
    if (cumulative >= p.top_p * top_k_mass) break;
  }
  SamplerRng rng;
  sampler_rng_seed(&rng, 5);
  SamplerScratch s = {0};
  for (int i = 0; i < 300; i++) assert_true(kept[sampler_sample(logits, VOCAB, &p, &rng, &s)]);
  sampler_scratch_free(&s);
  free(logits);
  free(probs);
  free(order);
  free(kept);
}

// Top-p alone keeps the shortest run, most probable first, whose mass reaches top_p of the
// whole row's (a full sort in float64 says where it ends): a draw just below 1 takes its last
// element, a draw of 0 its first.
static void test_top_p_alone_reaches_top_p_of_the_row(void **state) {
  (void)state;
  enum { VOCAB = 1000 };
  static float logits[VOCAB];
  static double weights[VOCAB];
  static uint32_t order[VOCAB];
  srand(7);
  double max = -INFINITY, total = 0;
  for (int i = 0; i < VOCAB; i++) {
    logits[i] = (float)(rand() % 100000) / 10000.0f;
    if (logits[i] > max) max = logits[i];
  }
  for (int i = 0; i < VOCAB; i++) total += weights[i] = exp((logits[i] - max) / 1.3), order[i] = i;
  for (int i = 1; i < VOCAB; i++)  // insertion sort: weight descending, lower id first
    for (int j = i; j > 0; j--) {
      const uint32_t a = order[j - 1], b = order[j];
      if (weights[b] > weights[a] || (weights[b] == weights[a] && b < a))
        order[j - 1] = b, order[j] = a;
    }
  const float top_p[] = {0.3f, 0.8f, 0.95f};
  SamplerScratch s = {0};
  for (size_t t = 0; t < sizeof top_p / sizeof *top_p; t++) {
    int kept = 0;
    for (double run = 0; run < top_p[t] * total;) run += weights[order[kept++]];
    const SamplingParams p = {.temperature = 1.3f, .top_p = top_p[t]};
    assert_int_equal(sampler_sample_drawn(logits, VOCAB, &p, 1.0 - 0x1p-53, &s), order[kept - 1]);
    assert_int_equal(sampler_sample_drawn(logits, VOCAB, &p, 0.0, &s), order[0]);
  }
  sampler_scratch_free(&s);
}

static void assert_row(const float *got, const float *want, int n) {
  for (int i = 0; i < n; i++)
    if (!(got[i] == want[i] || fabsf(got[i] - want[i]) < 1e-6f))
      fail_msg("logit %d: %g, expected %g", i, got[i], want[i]);
}

// Repetition 2 over prompt {0} and output {1, 1}: positive logits halved, negative doubled, once
// per distinct token; the others untouched. Running it again on fresh logits gives the same
// (the scratch counts are left clean).
static void test_repetition_penalty(void **state) {
  (void)state;
  const uint32_t prompt[] = {0}, output[] = {1, 1};
  SamplingParams p = {.temperature = 0, .top_p = 1, .repetition_penalty = 2};
  SamplerInputs in = {
      .prompt_ids = prompt, .num_prompt_ids = 1, .output_ids = output, .num_generated = 2};
  SamplerScratch s = {0};
  assert_true(sampler_needs_processing(&p, &in));
  for (int round = 0; round < 2; round++) {
    float logits[] = {2, -1, 3, 0.5f};
    sampler_process(logits, 4, &p, &in, &s);
    assert_row(logits, (float[]){1, -2, 3, 0.5f}, 4);
  }
  sampler_scratch_free(&s);
}

// Output {2, 2, 3}, frequency 0.5, presence 0.25: id 2 loses 2 * 0.5 + 0.25, id 3 0.5 + 0.25.
static void test_frequency_and_presence_penalties(void **state) {
  (void)state;
  const uint32_t prompt[] = {0, 1}, output[] = {2, 2, 3};
  SamplingParams p = {
      .temperature = 0, .top_p = 1, .frequency_penalty = 0.5f, .presence_penalty = 0.25f};
  SamplerInputs in = {
      .prompt_ids = prompt, .num_prompt_ids = 2, .output_ids = output, .num_generated = 3};
  SamplerScratch s = {0};
  for (int round = 0; round < 2; round++) {
    float logits[] = {1, 1, 1, 1};
    sampler_process(logits, 4, &p, &in, &s);
    assert_row(logits, (float[]){1, 1, -0.25f, 0.25f}, 4);
  }
  // a negative presence penalty raises what was said
  p = (SamplingParams){.presence_penalty = -1};
  float logits[] = {0, 0, 0, 0};
  sampler_process(logits, 4, &p, &in, &s);
  assert_row(logits, (float[]){0, 0, 1, 1}, 4);
  sampler_scratch_free(&s);
}

// Bias first, then the penalties (vLLM's order): 1 + 1 = 2, halved by repetition 2 is 1 (the
// other order would give 1.5). A +100 bias makes greedy pick its token.
static void test_logit_bias_then_penalties(void **state) {
  (void)state;
  const uint32_t prompt[] = {0};
  SamplerBias bias[] = {{0, 1}, {2, -100}};
  SamplingParams p = {.temperature = 0, .top_p = 1, .repetition_penalty = 2};
  SamplerInputs in = {.prompt_ids = prompt, .num_prompt_ids = 1, .bias = bias, .num_bias = 2};
  SamplerScratch s = {0};
  float logits[] = {1, 5, 3};
  sampler_process(logits, 3, &p, &in, &s);
  assert_row(logits, (float[]){1, 5, -97}, 3);
  SamplerBias up = {2, 100};
  SamplingParams greedy = {.temperature = 0, .top_p = 1};
  SamplerInputs only_bias = {.bias = &up, .num_bias = 1};
  float row[] = {1, 5, 3};
  sampler_process(row, 3, &greedy, &only_bias, &s);
  SamplerRng rng;
  sampler_rng_seed(&rng, 0);
  assert_int_equal(sampler_sample(row, 3, &greedy, &rng, &s), 2);
  sampler_scratch_free(&s);
}

// Stop ids are -inf until min_tokens ids were generated, then left alone; no penalty, no bias
// and min_tokens reached need no processing at all.
static void test_min_tokens_masks_stop_ids(void **state) {
  (void)state;
  const uint32_t stops[] = {1, 3};
  SamplingParams p = {.temperature = 0, .top_p = 1, .min_tokens = 2};
  SamplerInputs in = {.stop_ids = stops, .num_stop_ids = 2, .num_generated = 1};
  SamplerScratch s = {0};
  assert_true(sampler_needs_processing(&p, &in));
  float logits[] = {0, 9, 1, 8};
  sampler_process(logits, 4, &p, &in, &s);
  assert_row(logits, (float[]){0, -INFINITY, 1, -INFINITY}, 4);
  SamplerRng rng;
  sampler_rng_seed(&rng, 0);
  assert_int_equal(sampler_sample(logits, 4, &p, &rng, &s), 2);
  in.num_generated = 2;
  assert_false(sampler_needs_processing(&p, &in));
  SamplingParams plain = {.temperature = 1, .top_p = 1};
  SamplerInputs none = {.stop_ids = stops, .num_stop_ids = 2};
  assert_false(sampler_needs_processing(&plain, &none));
  plain.repetition_penalty = 1;
  assert_false(sampler_needs_processing(&plain, &none));
  sampler_scratch_free(&s);
}

// A row whose probabilities hold NaNs (an overflowing or fully masked row of logits: inf - inf
// is x86's negative default NaN, 0xffc00000) writes nothing past its scratch (its bucket must
// not be read from the sign bit), and top-k keeps its one number first: NaNs are the least
// probable. (What a draw over NaN masses picks is not defined; it stays in range.)
static void test_top_with_nan_probabilities_stays_in_its_scratch(void **state) {
  (void)state;
  enum { N = 8, GUARD = 1 << 16 };
  float probs[N];
  const uint32_t negative_nan = 0xffc00000u;
  for (int i = 0; i < N; i++) memcpy(&probs[i], &negative_nan, sizeof probs[i]);
  probs[3] = 0.5f;
  const size_t bytes = pick_top_scratch_bytes(N);
  unsigned char *scratch = malloc(bytes + GUARD);
  memset(scratch + bytes, 0xa5, GUARD);
  assert_int_equal(pick_top(probs, N, 1, 1.0f, 0.5, scratch), 3);  // top-k 1: the number
  assert_true(pick_top(probs, N, 0, 0.5f, 0.5, scratch) < N);      // NaN masses: in range, no more
  assert_true(pick_top(probs, N, 4, 0.9f, 0.5, scratch) < N);
  for (size_t i = bytes; i < bytes + GUARD; i++) assert_int_equal(scratch[i], 0xa5);
  free(scratch);
}

// A stop id outside the model's vocabulary (the harmony stop ids 199999 .. 200012 on a model of
// a smaller vocabulary, as the test fixtures are) is not masked: nothing is written past the row.
static void test_min_tokens_skips_stop_ids_outside_the_vocabulary(void **state) {
  (void)state;
  const uint32_t stops[] = {200002, 2, 5};
  SamplingParams p = {.temperature = 0, .top_p = 1, .min_tokens = 2};
  SamplerInputs in = {.stop_ids = stops, .num_stop_ids = 3};
  SamplerScratch s = {0};
  const size_t size = 200003;  // the row, then what lies after it
  float *logits = malloc(size * sizeof *logits);
  for (size_t i = 0; i < size; i++) logits[i] = 7;
  sampler_process(logits, 4, &p, &in, &s);
  assert_row(logits, (float[]){7, 7, -INFINITY, 7}, 4);
  for (size_t i = 4; i < size; i++) assert_true(logits[i] == 7);
  free(logits);
  sampler_scratch_free(&s);
}

// logits ln 1, ln 2, ln 3, ln 4: the normaliser is ln 10, the top two ids 3 and 2 with ln 0.4
// and ln 0.3; equal logits keep the lower id first; 0 asked gives none.
static void test_top_logprobs(void **state) {
  (void)state;
  float logits[] = {0, logf(2), logf(3), logf(4)};
  PickLogprobs lp;
  assert_float_equal(pick_logprobs(logits, 4, 2, &lp), log(10), 1e-5);
  assert_int_equal(lp.num_top, 2);
  assert_int_equal(lp.top_ids[0], 3);
  assert_int_equal(lp.top_ids[1], 2);
  assert_float_equal(lp.top_logprobs[0], log(0.4), 1e-5);
  assert_float_equal(lp.top_logprobs[1], log(0.3), 1e-5);
  float ties[] = {1, 7, 7, 7, 2};
  pick_logprobs(ties, 5, 4, &lp);
  assert_int_equal(lp.num_top, 4);
  assert_int_equal(lp.top_ids[0], 1);
  assert_int_equal(lp.top_ids[1], 2);
  assert_int_equal(lp.top_ids[2], 3);
  assert_int_equal(lp.top_ids[3], 4);
  double norm = log(3 * exp(7.0) + exp(1.0) + exp(2.0));
  assert_float_equal(lp.top_logprobs[3], 2 - norm, 1e-5);
  pick_logprobs(ties, 5, 0, &lp);
  assert_int_equal(lp.num_top, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_greedy_is_argmax_with_lowest_id_on_ties),
      cmocka_unit_test(test_greedy_at_every_position_and_length),
      cmocka_unit_test(test_temperature_follows_the_softmax),
      cmocka_unit_test(test_top_k_and_top_p),
      cmocka_unit_test(test_same_seed_same_tokens),
      cmocka_unit_test(test_draw_before_the_logits),
      cmocka_unit_test(test_kept_set_matches_a_full_sort),
      cmocka_unit_test(test_top_p_alone_reaches_top_p_of_the_row),
      cmocka_unit_test(test_repetition_penalty),
      cmocka_unit_test(test_frequency_and_presence_penalties),
      cmocka_unit_test(test_logit_bias_then_penalties),
      cmocka_unit_test(test_min_tokens_masks_stop_ids),
      cmocka_unit_test(test_min_tokens_skips_stop_ids_outside_the_vocabulary),
      cmocka_unit_test(test_top_with_nan_probabilities_stays_in_its_scratch),
      cmocka_unit_test(test_top_logprobs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
