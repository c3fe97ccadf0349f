// dataset.c: ShareGPT loading (Jansson) and the random dataset (see dataset.h). Owns the prompt
// strings it hands out; does not send, time or print anything.
#include "bench/dataset.h"
#include "bench/dataset_internal.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/rng.h"
#include "common/buf.h"
#include "common/check.h"
#include "text/harmony.h"
#include "text/stream_decoder.h"
#include "text/utf8.h"

static const char SHAREGPT_FORMAT[] =
    "a ShareGPT file is a JSON list of {\"id\": ..., \"conversations\": [{\"from\": \"human\", "
    "\"value\": \"...\"}, {\"from\": \"gpt\", \"value\": \"...\"}, ...]}";

uint32_t dataset_count_tokens(const Tokenizer *tok, const char *text, size_t len, TokenIds *ids) {
  ids->len = 0;
  tok_encode(tok, text, len, true, ids);
  return (uint32_t)ids->len;
}

void dataset_set_text_without_nul(Buf *out, const char *s, size_t n) {
  buf_clear(out);
  buf_append(out, "", 0);
  const char *end = s + n, *nul;
  while ((nul = memchr(s, '\0', (size_t)(end - s))) != NULL) {
    buf_append(out, s, (size_t)(nul - s));
    buf_append_str(out, UTF8_REPLACEMENT);
    s = nul + 1;
  }
  buf_append(out, s, (size_t)(end - s));
}

static bool is_valid_pair(uint32_t prompt_len, uint32_t output_len, bool fixed_output_len) {
  return prompt_len >= DATASET_MIN_LEN && (fixed_output_len || output_len >= DATASET_MIN_LEN) &&
         prompt_len <= DATASET_MAX_PROMPT_LEN &&
         (uint64_t)prompt_len + output_len <= DATASET_MAX_TOTAL_LEN;
}

// The text of turn k of a conversation; NULL with a message when it is not {"value": string}.
static const char *turn_value(const json_t *turns, size_t k, size_t entry, const char *path,
                              size_t *len, char *err, size_t err_size) {
  const json_t *value = json_object_get(json_array_get(turns, k), "value");
  if (!json_is_string(value)) {
    snprintf(err, err_size, "%s: entry %zu, turn %zu has no string \"value\"; %s", path, entry, k,
             SHAREGPT_FORMAT);
    return NULL;
  }
  *len = json_string_length(value);
  return json_string_value(value);
}

// Indices of the entries with at least two turns, in file order.
static bool usable_entries(const json_t *root, const char *path, size_t **out, size_t *num_out,
                           char *err, size_t err_size) {
  size_t *indices = xmalloc((json_array_size(root) + 1) * sizeof *indices), num = 0, i;
  const json_t *entry;
  json_array_foreach(root, i, entry) {
    const json_t *turns = json_object_get(entry, "conversations");
    if (!json_is_object(entry) || (turns && !json_is_array(turns))) {
      snprintf(err, err_size, "%s: entry %zu is not an object with a \"conversations\" list; %s",
               path, i, SHAREGPT_FORMAT);
      free(indices);
      return false;
    }
    if (json_array_size(turns) >= 2) indices[num++] = i;
  }
  *out = indices;
  *num_out = num;
  return true;
}

static bool has_synth_id(const json_t *entry) {
  const char *id = json_string_value(json_object_get(entry, "id"));
  return id && strncmp(id, DATASET_SYNTH_ID_PREFIX, strlen(DATASET_SYNTH_ID_PREFIX)) == 0;
}

// Walks the shuffled entries, keeping valid pairs until num_requests are kept or none are left.
static bool sample_pairs(const ShareGptParams *p, const Tokenizer *tok, const json_t *root,
                         const size_t *order, size_t num_entries, Dataset *out, bool *all_synth,
                         char *err, size_t err_size) {
  bool fixed_output_len = p->output_len >= 0;
  TokenIds ids = {0};
  Buf text = {0};
  bool ok = true;
  *all_synth = true;
  for (size_t k = 0; k < num_entries && out->num_requests < p->num_requests; k++) {
    const json_t *entry = json_array_get(root, order[k]);
    const json_t *turns = json_object_get(entry, "conversations");
    size_t prompt_size, answer_size;
    const char *prompt = turn_value(turns, 0, order[k], p->path, &prompt_size, err, err_size);
    const char *answer =
        prompt ? turn_value(turns, 1, order[k], p->path, &answer_size, err, err_size) : NULL;
    if (!answer) {
      ok = false;
      break;
    }
    uint32_t output_len = fixed_output_len ? (uint32_t)p->output_len
                                           : dataset_count_tokens(tok, answer, answer_size, &ids);
    dataset_set_text_without_nul(&text, prompt, prompt_size);
    uint32_t prompt_len = dataset_count_tokens(tok, text.data, text.len, &ids);
    if (!is_valid_pair(prompt_len, output_len, fixed_output_len)) continue;
    out->requests[out->num_requests++] = (BenchRequest){
        .prompt = xstrdup(text.data), .prompt_len = prompt_len, .expected_output_len = output_len};
    *all_synth = *all_synth && has_synth_id(entry);
  }
  token_ids_free(&ids);
  buf_free(&text);
  return ok;
}

void dataset_oversample(Dataset *d, size_t num_requests, Rng *rng) {
  size_t num_kept = d->num_requests;
  while (d->num_requests < num_requests) {
    const BenchRequest *src = &d->requests[rng_below(rng, num_kept)];
    d->requests[d->num_requests] = *src;
    d->requests[d->num_requests++].prompt = xstrdup(src->prompt);
  }
  d->num_oversampled = num_requests - num_kept;
}

static json_t *load_json(const char *path, char *err, size_t err_size) {
  json_error_t jerr;
  json_t *root = json_load_file(path, JSON_ALLOW_NUL, &jerr);
  if (!root && jerr.line < 1)
    snprintf(err, err_size, "cannot read ShareGPT file %s: %s (pass an existing file to "
             "--dataset-path; datasets/README.md says where to get one)", path, jerr.text);
  else if (!root)
    snprintf(err, err_size, "%s:%d:%d: %s (the file is not valid JSON; %s)", path, jerr.line,
             jerr.column, jerr.text, SHAREGPT_FORMAT);
  else if (!json_is_array(root)) {
    snprintf(err, err_size, "%s: the top level is not a list; %s", path, SHAREGPT_FORMAT);
    json_decref(root);
    root = NULL;
  }
  return root;
}

bool dataset_load_sharegpt(const ShareGptParams *p, const Tokenizer *tok, Dataset *out, char *err,
                           size_t err_size) {
  *out = (Dataset){.name = "sharegpt"};
  json_t *root = load_json(p->path, err, err_size);
  if (!root) return false;
  size_t *order = NULL, num_entries = 0;
  bool ok = usable_entries(root, p->path, &order, &num_entries, err, err_size);
  bool all_synth = false;
  if (ok) {
    Rng rng;
    rng_seed(&rng, p->seed);
    rng_shuffle(&rng, order, num_entries, sizeof *order);
    out->requests = xcalloc(p->num_requests ? p->num_requests : 1, sizeof *out->requests);
    ok = sample_pairs(p, tok, root, order, num_entries, out, &all_synth, err, err_size);
    if (ok && out->num_requests < p->num_requests && (out->num_requests == 0 || p->no_oversample)) {
      snprintf(err, err_size,
               "%s: only %zu usable conversations found (of %zu entries; usable means two turns, "
               "a prompt of %d..%d tokens, an answer of at least %d, and at most %d together), "
               "but --num-prompts is %zu; use a larger ShareGPT file or lower --num-prompts%s",
               p->path, out->num_requests, json_array_size(root), DATASET_MIN_LEN,
               DATASET_MAX_PROMPT_LEN, DATASET_MIN_LEN, DATASET_MAX_TOTAL_LEN, p->num_requests,
               out->num_requests ? ", or drop --no-oversample to repeat conversations" : "");
      ok = false;
    }
    if (ok) dataset_oversample(out, p->num_requests, &rng);
  }
  if (ok && all_synth && out->num_requests > 0) out->name = "sharegpt-synth";
  free(order);
  json_decref(root);
  if (!ok) dataset_free(out);
  return ok;
}

bool dataset_random_bounds(const RandomParams *p, RandomBounds *out, char *err, size_t err_size) {
  if (!(p->range_ratio >= 0 && p->range_ratio < 1)) {
    snprintf(err, err_size, "--random-range-ratio %g is outside [0, 1): lengths are drawn from "
             "[len*(1-ratio), len*(1+ratio)]", p->range_ratio);
    return false;
  }
  if (p->output_len < 1) {
    snprintf(err, err_size, "--random-output-len must be at least 1");
    return false;
  }
  double r = p->range_ratio;
  out->input_lo = (uint32_t)floor(p->input_len * (1 - r));
  out->input_hi = (uint32_t)ceil(p->input_len * (1 + r));
  out->output_lo = (uint32_t)floor(p->output_len * (1 - r));
  if (out->output_lo < 1) out->output_lo = 1;
  out->output_hi = (uint32_t)ceil(p->output_len * (1 + r));
  return true;
}

void dataset_decode_utf8(const Tokenizer *tok, const uint32_t *ids, size_t n, Buf *out) {
  Buf raw = {0};
  stream_decoder_decode_all(tok, ids, n, &raw);
  dataset_set_text_without_nul(out, raw.data, raw.len);
  buf_free(&raw);
}

// One random prompt: decode seq, re-encode, cut to target tokens, decode again.
static BenchRequest random_request(const Tokenizer *tok, const TokenIds *seq, size_t target,
                                   uint32_t output_len, Buf *text, TokenIds *re) {
  dataset_decode_utf8(tok, seq->data, seq->len, text);
  dataset_count_tokens(tok, text->data, text->len, re);
  if (re->len > target) re->len = target;
  dataset_decode_utf8(tok, re->data, re->len, text);
  return (BenchRequest){.prompt = xstrdup(text->data),
                        .prompt_len = (uint32_t)re->len,
                        .expected_output_len = output_len};
}

bool dataset_make_random(const RandomParams *p, const Tokenizer *tok, Dataset *out, char *err,
                         size_t err_size) {
  *out = (Dataset){.name = "random"};
  RandomBounds b;
  if (!dataset_random_bounds(p, &b, err, err_size)) return false;
  size_t n = p->num_requests;
  uint32_t *input_lens = xmalloc((n + 1) * sizeof *input_lens);
  uint32_t *output_lens = xmalloc((n + 1) * sizeof *output_lens);
  uint32_t *offsets = xmalloc((n + 1) * sizeof *offsets);
  Rng rng;
  rng_seed(&rng, p->seed);
  for (size_t i = 0; i < n; i++) input_lens[i] = (uint32_t)rng_range(&rng, b.input_lo, b.input_hi);
  for (size_t i = 0; i < n; i++)
    output_lens[i] = (uint32_t)rng_range(&rng, b.output_lo, b.output_hi);
  for (size_t i = 0; i < n; i++) offsets[i] = (uint32_t)rng_below(&rng, DATASET_RANDOM_VOCAB_SIZE);
  TokenIds seq = {0}, re = {0};
  for (uint32_t j = 0; j < p->prefix_len; j++)
    token_ids_push(&seq, (uint32_t)rng_below(&rng, DATASET_RANDOM_VOCAB_SIZE));

  out->requests = xcalloc(n + 1, sizeof *out->requests);
  Buf text = {0};
  for (size_t i = 0; i < n; i++) {
    seq.len = p->prefix_len;
    for (uint32_t j = 0; j < input_lens[i]; j++)
      token_ids_push(&seq, (uint32_t)((offsets[i] + i + j) % DATASET_RANDOM_VOCAB_SIZE));
    out->requests[i] = random_request(tok, &seq, p->prefix_len + (size_t)input_lens[i],
                                      output_lens[i], &text, &re);
  }
  out->num_requests = n;
  buf_free(&text);
  token_ids_free(&seq);
  token_ids_free(&re);
  free(input_lens);
  free(output_lens);
  free(offsets);
  return true;
}

void dataset_free(Dataset *d) {
  for (size_t i = 0; i < d->num_requests; i++) free(d->requests[i].prompt);
  free(d->requests);
  *d = (Dataset){0};
}

void dataset_chat_template(const Tokenizer *tok, const char *user, Buf *out) {
  TokenIds ids = {0};
  harmony_render_prompt(tok, &(HarmonyMessage){.role = "user", .content = user}, 1, NULL, &ids);
  buf_clear(out);
  buf_append(out, "", 0);
  tok_decode(tok, ids.data, ids.len, out);
  token_ids_free(&ids);
}
