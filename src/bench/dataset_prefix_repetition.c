// dataset_prefix_repetition.c: vLLM's prefix_repetition dataset (see dataset.h): a few random
// prefixes, each shared by many prompts with random suffixes, for prefix-cache benchmarks. Builds
// prompts; sends and prints nothing.
#include <stdio.h>
#include <stdlib.h>

#include "bench/dataset.h"
#include "bench/dataset_internal.h"
#include "common/check.h"

// Appends n tokens that decode and re-encode to themselves (vLLM's _generate_exact_length_tokens,
// its recursion on a short re-encoding written as a loop: same draws, same result).
static void exact_length_tokens(const Tokenizer *tok, Rng *rng, uint32_t n, TokenIds *out,
                                TokenIds *draw, TokenIds *re, Buf *text) {
  while (n > 0) {
    draw->len = 0;
    for (uint32_t j = 0; j < n; j++)
      token_ids_push(draw, (uint32_t)rng_below(rng, DATASET_RANDOM_VOCAB_SIZE));
    dataset_decode_utf8(tok, draw->data, draw->len, text);
    re->len = 0;
    tok_encode(tok, text->data, text->len, true, re);
    size_t take = re->len < n ? re->len : n;
    for (size_t j = 0; j < take; j++) token_ids_push(out, re->data[j]);
    n -= (uint32_t)take;
  }
}

bool dataset_make_prefix_repetition(const PrefixRepetitionParams *p, const Tokenizer *tok,
                                    Dataset *out, char *err, size_t err_size) {
  *out = (Dataset){.name = "prefix_repetition"};
  size_t per_prefix = p->num_requests / p->num_prefixes;
  if (per_prefix == 0) {
    snprintf(err, err_size, "--num-prompts (%zu) must be greater than or equal to "
             "--prefix-repetition-num-prefixes (%u)", p->num_requests, p->num_prefixes);
    return false;
  }
  Rng rng;
  rng_seed(&rng, p->seed);
  size_t n = per_prefix * p->num_prefixes;
  out->requests = xcalloc(n + 1, sizeof *out->requests);
  TokenIds seq = {0}, draw = {0}, re = {0};
  Buf text = {0};
  for (uint32_t k = 0; k < p->num_prefixes; k++) {
    seq.len = 0;
    exact_length_tokens(tok, &rng, p->prefix_len, &seq, &draw, &re, &text);
    for (size_t s = 0; s < per_prefix; s++) {
      seq.len = p->prefix_len;
      exact_length_tokens(tok, &rng, p->suffix_len, &seq, &draw, &re, &text);
      dataset_decode_utf8(tok, seq.data, seq.len, &text);
      out->requests[out->num_requests++] =
          (BenchRequest){.prompt = xstrdup(text.data),
                         .prompt_len = p->prefix_len + p->suffix_len,
                         .expected_output_len = p->output_len};
    }
  }
  rng_shuffle(&rng, out->requests, out->num_requests, sizeof *out->requests);
  token_ids_free(&seq);
  token_ids_free(&draw);
  token_ids_free(&re);
  buf_free(&text);
  return true;
}
