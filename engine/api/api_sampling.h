// api_sampling.h: parses the penalty, logit_bias, min_tokens, stop_token_ids and logprobs fields
// of a chat or completions request into its ApiRequest.
#ifndef GE_API_API_SAMPLING_H
#define GE_API_API_SAMPLING_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "api/api_request.h"

// Fills r->params (sampling penalties, min_tokens, logit_bias, stop_token_ids, logprobs) and the
// arrays r owns; r->chat must be set. False with err (400 naming the field).
bool api_sampling_parse(const cJSON *req, const Tokenizer *t, ApiRequest *r, ApiError *err);

#endif
