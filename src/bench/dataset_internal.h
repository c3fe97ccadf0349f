// dataset_internal.h: helpers the dataset loaders share (dataset*.c only): token counting as HF
// counts, NUL-free text, HF-like decoding, vLLM's oversampling and its chat template step.
#ifndef GB_BENCH_DATASET_INTERNAL_H
#define GB_BENCH_DATASET_INTERNAL_H

#include "bench/dataset.h"
#include "bench/rng.h"
#include "common/buf.h"

// Token count as the client's HF tokenizer gives it: special-token text counts as the special.
uint32_t dataset_count_tokens(const Tokenizer *tok, const char *text, size_t len, TokenIds *ids);

// Sets out to s[0..n) as a C string: a NUL byte (JSON's \u0000, or the token of byte 0) becomes
// U+FFFD, so the prompt sent is the text that was counted.
void dataset_set_text_without_nul(Buf *out, const char *s, size_t n);

// Text of ids as valid UTF-8, bytes that form no character becoming U+FFFD (HF's decode), and
// without NUL bytes.
void dataset_decode_utf8(const Tokenizer *tok, const uint32_t *ids, size_t n, Buf *out);

// vLLM's maybe_oversample_requests: fill d up to num_requests with copies of uniformly drawn
// kept requests (d->requests must have room for num_requests).
void dataset_oversample(Dataset *d, size_t num_requests, Rng *rng);

// HF's apply_chat_template([{"role": "user", "content": user}], add_generation_prompt=True,
// tokenize=False) for GPT-OSS, as text: the default harmony system message (without the
// "Current date:" line HF's template fills with today's date, so a seed gives the same prompts
// on every day), the user message, then "<|start|>assistant".
void dataset_chat_template(const Tokenizer *tok, const char *user, Buf *out);

#endif
