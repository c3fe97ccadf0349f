// sharegpt_synth.c: draws each conversation's shape and token lengths, then cuts prose of about
// that many tokens from the corpus (see sharegpt_synth.h). No file I/O.
#include "bench/sharegpt_synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/dataset.h"
#include "bench/rng.h"
#include "common/check.h"

// The length model, in o200k_harmony tokens. Prompts and answers are log-normal (heavy-tailed
// like real chats: many short questions, a few pasted pages); the parameters were tuned by
// generating the dataset and measuring it (datasets/README.md). Draws are capped at max_len: the
// filter drops anything that long anyway, and the cap keeps the file small.
typedef struct {
  double single_turn_fraction;  // only the human turn: dropped by the two-turn rule
  double extra_pair_fraction;   // a follow-up question and answer: ignored (first two turns only)
  double extra_pair_scale;      // follow-up lengths are this fraction of a fresh draw
  double prompt_log_mean, prompt_log_sd;
  double answer_log_mean, answer_log_sd;
  uint32_t max_len;
} LengthModel;

static const LengthModel MODEL = {
    .single_turn_fraction = 0.03,
    .extra_pair_fraction = 0.15,
    .extra_pair_scale = 0.25,
    .prompt_log_mean = 5.039,
    .prompt_log_sd = 1.05,
    .answer_log_mean = 4.928,
    .answer_log_sd = 0.85,
    .max_len = 1400,
};

// A sentence end within this fraction of the target is preferred to a word end at the target.
#define SENTENCE_SLACK 0.15

static uint32_t log_normal_len(double z, double log_mean, double log_sd, double scale) {
  double len = scale * exp(log_mean + log_sd * z);
  if (len < 1) return 1;
  return len > MODEL.max_len ? MODEL.max_len : (uint32_t)lround(len);
}

// z with P(Z < z) = p for a standard normal Z (bisection on erfc; p = 0 gives -40).
static double normal_quantile(double p) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 100; i++) {
    double mid = 0.5 * (lo + hi);
    if (0.5 * erfc(-mid / M_SQRT2) < p) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

// n standard normal draws, stratified: one from each of n equally likely slices, in random
// order. Their spread follows the model closely even over a thousand draws, so a dataset's
// totals depend little on its seed.
static double *stratified_normals(Rng *rng, size_t n) {
  double *z = xmalloc((n + 1) * sizeof *z);
  for (size_t k = 0; k < n; k++) z[k] = normal_quantile(((double)k + rng_double(rng)) / (double)n);
  rng_shuffle(rng, z, n, sizeof *z);
  return z;
}

static bool is_sentence_start(const char *text, size_t i) {
  return i == 0 || text[i - 1] == '\n' ||
         (i >= 2 && text[i - 1] == ' ' && text[i - 2] && strchr(".?!", text[i - 2]));
}

// True when the token starts with a space or newline: cutting just before it ends a word.
static bool starts_word(const Tokenizer *tok, uint32_t id) {
  size_t len;
  const uint8_t *bytes = tok_id_bytes(tok, id, &len);
  return bytes && len > 0 && (bytes[0] == ' ' || bytes[0] == '\n');
}

// Number of tokens of ids (the tokens of window) to keep: the sentence end nearest to target
// within the slack, else the last word end at or before target, else target itself.
static size_t choose_cut(const Tokenizer *tok, const TokenIds *ids, const char *window,
                         uint32_t target) {
  if (ids->len <= target) return ids->len;
  size_t slack = (size_t)(target * SENTENCE_SLACK), best_sentence = 0, best_word = 0;
  size_t limit = target + slack < ids->len ? target + slack : ids->len - 1, offset = 0;
  for (size_t k = 1; k <= limit; k++) {
    size_t len;
    tok_id_bytes(tok, ids->data[k - 1], &len);
    offset += len;
    if (!starts_word(tok, ids->data[k])) continue;
    if (k <= target) best_word = k;
    bool sentence = strchr(".?!", window[offset - 1]) || window[offset] == '\n';
    size_t dist = k > target ? k - target : target - k;
    size_t best_dist = best_sentence > target ? best_sentence - target : target - best_sentence;
    if (sentence && dist <= slack && (!best_sentence || dist < best_dist)) best_sentence = k;
  }
  return best_sentence ? best_sentence : best_word ? best_word : target;
}

// Sets out to about target tokens of prose, starting at a sentence start.
static void cut_prose(const ProseCorpus *c, const Tokenizer *tok, Rng *rng, uint32_t target,
                      TokenIds *ids, Buf *out) {
  const char *text = c->text.data;
  size_t n = c->text.len, window = (size_t)target * 12 + 256;  // ~4.5 bytes a token in prose
  if (window > n) window = n;
  size_t start = (size_t)rng_below(rng, n - window + 1);
  while (start < n && !is_sentence_start(text, start)) start++;
  while (start < n && (text[start] == ' ' || text[start] == '\n')) start++;
  if (start == n) start = 0;
  if (window > n - start) window = n - start;
  ids->len = 0;
  tok_encode(tok, text + start, window, false, ids);
  size_t keep = choose_cut(tok, ids, text + start, target), bytes = 0;
  for (size_t k = 0; k < keep; k++) {
    size_t len;
    tok_id_bytes(tok, ids->data[k], &len);
    bytes += len;
  }
  while (bytes > 0 && (text[start + bytes] & 0xC0) == 0x80) bytes--;  // whole characters only
  while (bytes > 0 && (text[start + bytes - 1] == ' ' || text[start + bytes - 1] == '\n')) bytes--;
  buf_clear(out);
  buf_append(out, text + start, bytes);
}

static void add_turn(json_t *turns, const char *from, const ProseCorpus *c, const Tokenizer *tok,
                     Rng *rng, uint32_t target, TokenIds *ids, Buf *text) {
  cut_prose(c, tok, rng, target, ids, text);
  json_t *turn = json_pack("{s:s, s:s%}", "from", from, "value", text->data, text->len);
  CHECK(turn != NULL);  // the corpus is valid UTF-8 and cuts fall between characters
  json_array_append_new(turns, turn);
}

json_t *synth_sharegpt(const SynthParams *p, const ProseCorpus *corpus, const Tokenizer *tok) {
  CHECK(corpus->text.len > 0);
  Rng rng;
  rng_seed(&rng, p->seed);
  json_t *list = json_array();
  size_t n = p->num_conversations;
  double *prompt_z = stratified_normals(&rng, n), *answer_z = stratified_normals(&rng, n);
  TokenIds ids = {0};
  Buf text = {0};
  for (size_t i = 0; i < n; i++) {
    double shape = rng_double(&rng);
    size_t num_pairs = shape < MODEL.single_turn_fraction ? 0
                       : shape < MODEL.single_turn_fraction + MODEL.extra_pair_fraction ? 2
                                                                                         : 1;
    json_t *turns = json_array();
    for (size_t pair = 0; pair < (num_pairs ? num_pairs : 1); pair++) {
      double scale = pair == 0 ? 1.0 : MODEL.extra_pair_scale;
      double zp = pair == 0 ? prompt_z[i] : rng_normal(&rng);
      double za = pair == 0 ? answer_z[i] : rng_normal(&rng);
      uint32_t prompt_len = log_normal_len(zp, MODEL.prompt_log_mean, MODEL.prompt_log_sd, scale);
      uint32_t answer_len = log_normal_len(za, MODEL.answer_log_mean, MODEL.answer_log_sd, scale);
      add_turn(turns, "human", corpus, tok, &rng, prompt_len, &ids, &text);
      if (num_pairs) add_turn(turns, "gpt", corpus, tok, &rng, answer_len, &ids, &text);
    }
    char id[32];
    snprintf(id, sizeof id, DATASET_SYNTH_ID_PREFIX "%05zu", i);
    json_array_append_new(list, json_pack("{s:s, s:o}", "id", id, "conversations", turns));
  }
  free(prompt_z);
  free(answer_z);
  token_ids_free(&ids);
  buf_free(&text);
  return list;
}
