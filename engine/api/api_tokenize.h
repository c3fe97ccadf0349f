// api_tokenize.h: vLLM's POST /tokenize and POST /detokenize. /tokenize takes a completion
// prompt ({"prompt": text}) or chat messages ({"messages": [...]}, rendered as
// /v1/chat/completions renders them) and answers {"count", "max_model_len", "tokens",
// "token_strs"}; /detokenize takes {"tokens": [ids]} and answers {"prompt": text}. The ids are
// exactly those the completions and chat routes would give the engine. Parsing and answering
// only: no engine, no I/O.
#ifndef GE_API_API_TOKENIZE_H
#define GE_API_API_TOKENIZE_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "api/api_error.h"
#include "api/api_request.h"

typedef enum { API_TEXT_NONE, API_TEXT_TOKENIZE, API_TEXT_DETOKENIZE } ApiTextRoute;

// The route url names (API_TEXT_NONE for any other url).
ApiTextRoute api_tokenize_route(const char *url);

// The answer to body[len] on route (c: the served model, the tokenizer, max_model_len); NULL
// with err (400; 404 for an unknown model).
cJSON *api_tokenize_answer(ApiTextRoute route, const ApiRequestContext *c, const char *body,
                           size_t len, ApiError *err);

// Hugging Face's convert_ids_to_tokens for o200k_harmony (what vLLM's return_token_strs gives):
// a special token's name, else its bytes under GPT-2's byte-to-unicode map ("Ġ" for a space).
// Appended to out; false for an id outside the vocabulary.
bool api_tokenize_token_str(const Tokenizer *t, uint32_t id, Buf *out);

#endif
