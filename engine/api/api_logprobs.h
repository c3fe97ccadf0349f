// api_logprobs.h: the "logprobs" of a choice, in OpenAI's shapes as vLLM writes them from the
// engine's raw logprobs. Chat: {"content": [{token, logprob, bytes, top_logprobs: [{token,
// logprob, bytes}]}]}, one entry per generated token, the top list sorted, most probable first.
// Completions: {text_offset, token_logprobs, tokens, top_logprobs: [{token: logprob}]}, the
// top_logprobs dict holding the sampled token and the N most probable. A token's text is its
// bytes with invalid UTF-8 replaced by U+FFFD (as vLLM decodes one token), special tokens by
// their names; bytes are that text's UTF-8. Streams write one chunk's worth per event, whole
// answers collect them. Knows nothing of the rest of the answer.
#ifndef GE_API_API_LOGPROBS_H
#define GE_API_API_LOGPROBS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "core/engine.h"
#include "text/tokenizer.h"

typedef struct {
  bool chat;
  int num_top;  // chat: top_logprobs; completions: logprobs
  const Tokenizer *t;
  size_t text_offset;  // completions: code points of the token texts so far
  size_t num_tokens;   // whole answers: tokens collected
  Buf items[4];        // whole answers: chat's content entries; completions' four arrays
  Buf text, scratch;
} ApiLogprobs;

void api_logprobs_init(ApiLogprobs *l, bool chat, int num_top, const Tokenizer *t);
void api_logprobs_free(ApiLogprobs *l);

// A stream chunk's "logprobs" value for ev (its one token), or null when ev carries none.
void api_logprobs_chunk(ApiLogprobs *l, const TokenEvent *ev, Buf *out);

// Whole answers: collects ev's token (nothing when it carries no logprobs).
void api_logprobs_add(ApiLogprobs *l, const TokenEvent *ev);

// Whole answers: the "logprobs" value of everything collected.
void api_logprobs_whole(const ApiLogprobs *l, Buf *out);

#endif
