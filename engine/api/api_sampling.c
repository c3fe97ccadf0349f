// api_sampling.c: the request fields that shape sampling beyond temperature / top-p / top-k,
// checked as vLLM's SamplingParams and protocol.py check them: presence_penalty and
// frequency_penalty in [-2, 2], repetition_penalty > 0, min_tokens >= 0, logit_bias (token id
// strings -> bias, clamped to [-100, 100], ids inside the vocabulary), stop_token_ids, and the
// logprobs fields (chat: logprobs + top_logprobs; completions: logprobs N), at most 20 as vLLM's
// default max_logprobs. Writes into ApiRequest only; never talks to the engine.
#include "api/api_sampling.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

// A number field: absent or null leaves *out; otherwise it must be a number.
static bool number_field(const cJSON *req, const char *name, double *out, ApiError *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, name);
  if (!v || cJSON_IsNull(v)) return true;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
    return api_error(err, 400, name, "%s must be a number", name);
  *out = v->valuedouble;
  return true;
}

static bool whole_field(const cJSON *req, const char *name, double *out, ApiError *err) {
  if (!number_field(req, name, out, err)) return false;
  if (*out != floor(*out)) return api_error(err, 400, name, "%s must be an integer", name);
  return true;
}

static bool parse_penalties(const cJSON *req, SamplingParams *p, ApiError *err) {
  double presence = 0, frequency = 0, repetition = 1, min_tokens = 0;
  if (!number_field(req, "presence_penalty", &presence, err) ||
      !number_field(req, "frequency_penalty", &frequency, err) ||
      !number_field(req, "repetition_penalty", &repetition, err) ||
      !whole_field(req, "min_tokens", &min_tokens, err))
    return false;
  if (!(presence >= -2 && presence <= 2))
    return api_error(err, 400, "presence_penalty", "presence_penalty must be in [-2, 2], got %g.",
                     presence);
  if (!(frequency >= -2 && frequency <= 2))
    return api_error(err, 400, "frequency_penalty", "frequency_penalty must be in [-2, 2], got %g.",
                     frequency);
  if (!(repetition > 0))
    return api_error(err, 400, "repetition_penalty",
                     "repetition_penalty must be greater than zero, got %g.", repetition);
  if (min_tokens < 0 || min_tokens > INT32_MAX)
    return api_error(err, 400, "min_tokens",
                     "min_tokens must be greater than or equal to 0, got %g.", min_tokens);
  p->presence_penalty = (float)presence;
  p->frequency_penalty = (float)frequency;
  p->repetition_penalty = (float)repetition;
  p->min_tokens = (int)min_tokens;
  return true;
}

// A token id key of logit_bias ("123"), as Python's int() reads it; false when it is none.
static bool parse_id_key(const char *key, long long *out) {
  errno = 0;
  char *end;
  long long v = strtoll(key, &end, 10);
  while (*end == ' ') end++;
  if (end == key || *end || errno) return false;
  *out = v;
  return true;
}

static bool parse_logit_bias(const cJSON *req, const Tokenizer *t, ApiRequest *r, ApiError *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, "logit_bias");
  if (!v || cJSON_IsNull(v)) return true;
  if (!cJSON_IsObject(v))
    return api_error(err, 400, "logit_bias", "logit_bias must be an object of token id -> bias");
  size_t n = (size_t)cJSON_GetArraySize(v);
  r->logit_bias = n ? xcalloc(n, sizeof *r->logit_bias) : NULL;
  const cJSON *item;
  cJSON_ArrayForEach(item, v) {
    long long id;
    if (!parse_id_key(item->string, &id))
      return api_error(err, 400, "logit_bias",
                       "logit_bias contains key(s) that cannot be converted to integer token "
                       "IDs: ['%.40s']",
                       item->string);
    if (id < 0 || id >= t->vocab_size)
      return api_error(err, 400, "logit_bias",
                       "token_id(s) [%lld] in logit_bias contain out-of-vocab token ids. "
                       "Vocabulary size: %u",
                       id, t->vocab_size);
    if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble))
      return api_error(err, 400, "logit_bias", "logit_bias[\"%.40s\"] must be a number",
                       item->string);
    double bias = fmin(100, fmax(-100, item->valuedouble));
    r->logit_bias[r->num_logit_bias++] = (SamplerBias){(uint32_t)id, (float)bias};
  }
  return true;
}

static bool parse_stop_token_ids(const cJSON *req, const Tokenizer *t, ApiRequest *r,
                                 ApiError *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, "stop_token_ids");
  if (!v || cJSON_IsNull(v)) return true;
  if (!cJSON_IsArray(v))
    return api_error(err, 400, "stop_token_ids", "stop_token_ids must be a list of token ids");
  const cJSON *id;
  cJSON_ArrayForEach(id, v) {
    if (!cJSON_IsNumber(id) || id->valuedouble != floor(id->valuedouble))
      return api_error(err, 400, "stop_token_ids", "stop_token_ids must contain only integers");
    if (id->valuedouble < 0 || id->valuedouble >= t->vocab_size)
      return api_error(err, 400, "stop_token_ids",
                       "stop_token_ids holds %g, outside the vocabulary [0, %u)", id->valuedouble,
                       t->vocab_size);
    token_ids_push(&r->stop_token_ids, (uint32_t)id->valuedouble);
  }
  return true;
}

// chat: "logprobs": bool and "top_logprobs": 0..20 (only with logprobs true); completions:
// "logprobs": 0..20, the number of top logprobs besides the sampled token's.
static bool parse_logprobs(const cJSON *req, bool chat, EngineRequestParams *p, ApiError *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, "logprobs");
  double top = 0;
  if (chat) {
    if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v))
      return api_error(err, 400, "logprobs", "logprobs must be true or false");
    p->logprobs = cJSON_IsTrue(v);
    if (!whole_field(req, "top_logprobs", &top, err)) return false;
    if (top < 0)
      return api_error(err, 400, "top_logprobs", "`top_logprobs` must be a positive value.");
    if (top > 0 && !p->logprobs)
      return api_error(err, 400, "top_logprobs",
                       "when using `top_logprobs`, `logprobs` must be set to true.");
  } else if (v && !cJSON_IsNull(v)) {
    if (!whole_field(req, "logprobs", &top, err)) return false;
    if (top < 0) return api_error(err, 400, "logprobs", "`logprobs` must be a positive value.");
    p->logprobs = true;
  }
  const char *name = chat ? "top_logprobs" : "logprobs";
  if (top > PICK_MAX_LOGPROBS)
    return api_error(err, 400, name,
                     "%s: Requested sample logprobs of %g, which is greater than max allowed: %d",
                     name, top, PICK_MAX_LOGPROBS);
  p->num_top_logprobs = (int)top;
  return true;
}

bool api_sampling_parse(const cJSON *req, const Tokenizer *t, ApiRequest *r, ApiError *err) {
  if (!parse_penalties(req, &r->params.sampling, err) || !parse_logit_bias(req, t, r, err) ||
      !parse_stop_token_ids(req, t, r, err) || !parse_logprobs(req, r->chat, &r->params, err))
    return false;
  r->params.logit_bias = r->logit_bias;
  r->params.num_logit_bias = r->num_logit_bias;
  r->params.stop_token_ids = r->stop_token_ids.data;
  r->params.num_stop_token_ids = r->stop_token_ids.len;
  return true;
}
