// api_request.h: one completions or chat request body, parsed and validated: the engine's
// EngineRequestParams (prompt ids rendered or encoded here) and how the answer must be written
// (stream or whole, usage chunk). Every fault a client can make becomes an ApiError (400, or 404
// for an unknown model); nothing here talks to the engine or the network.
#ifndef GE_API_API_REQUEST_H
#define GE_API_API_REQUEST_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/api_error.h"
#include "api/api_output.h"
#include "core/engine.h"
#include "text/token_ids.h"
#include "text/tokenizer.h"

typedef struct {
  const char *model;      // the served model name; a request may omit "model" or must name it
  const Tokenizer *t;     // o200k_harmony
  int max_model_len;      // for the default max_tokens
  uint64_t default_seed;  // used when the request has no seed
  const char *current_date;  // the system message's date; NULL: today's (as vLLM)
} ApiRequestContext;

typedef struct {
  bool chat;              // /v1/chat/completions (else /v1/completions)
  bool stream;            // answer as SSE chunks
  bool include_usage;     // stream_options.include_usage: a usage chunk before [DONE]
  bool continuous_usage;  // stream_options.continuous_usage_stats (with include_usage)
  bool echo;              // completions: the text starts with the prompt's
  bool return_token_ids;  // vLLM's extension: each choice also carries its "token_ids"
  TokenIds prompt;        // owned; params.prompt_ids points into it: the (first) prompt
  TokenIds *more_prompts;  // owned [num_prompts - 1]: completions' list of prompts, the others
  size_t num_prompts;     // >= 1
  int n;                  // choices per prompt (>= 1); the answer has num_prompts * n choices
  int max_tokens_given;   // 0: each prompt gets what max_model_len leaves it
  int max_model_len;
  char **stop;            // owned [num_stop]: stop strings, none empty
  size_t num_stop;
  bool include_stop_str_in_output;
  SamplerBias *logit_bias;  // owned [num_logit_bias]; params.logit_bias points to it
  size_t num_logit_bias;
  TokenIds stop_token_ids;  // owned; params.stop_token_ids points into it
  EngineRequestParams params;
} ApiRequest;

// Parses body[len]. Fields: model, max_tokens (chat: max_completion_tokens first), temperature,
// top_p, top_k, seed, stream, stream_options.include_usage, ignore_eos, return_token_ids, the
// penalties, min_tokens, logit_bias, stop_token_ids and logprobs (api_sampling.c); n; stop
// (strings, applied by api_output) and include_stop_str_in_output; chat: messages,
// reasoning_effort, tools, tool_choice ("auto" or "none"; others refused), parallel_tool_calls
// (a boolean; harmony ends the turn at the first call either way); completions: prompt (text,
// token ids, or a list of those). Every field api_refuse.c lists is refused; fields that do not
// change the output are ignored. False with err.
bool api_request_parse(ApiRequest *r, const ApiRequestContext *c, bool chat, const char *body,
                       size_t len, ApiError *err);
void api_request_free(ApiRequest *r);

// The pieces other request bodies share (/v1/responses, /tokenize, /detokenize):
// body[len] as one JSON object (no NUL, nothing after it); NULL with err (400) otherwise.
cJSON *api_request_object(const char *body, size_t len, ApiError *err);
// "model" absent, null or the served name; else err (400 not a string, 404 unknown).
bool api_request_check_model(const cJSON *req, const char *served, ApiError *err);
// obj[name] absent or null (*out stays), or a bool; else err (400).
bool api_request_get_bool(const cJSON *obj, const char *name, bool *out, ApiError *err);

// Stop strings in one request at most.
enum { API_MAX_STOP = 64 };

// The engine request of choice index c (prompt c / n, as vLLM indexes completions choices): r's
// params with that prompt and its max_tokens, and, as vLLM's parallel sampling seeds children,
// seed + c % n.
EngineRequestParams api_request_choice(const ApiRequest *r, size_t c);

#endif
