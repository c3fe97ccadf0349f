// api_request.c: request JSON (cJSON) -> ApiRequest, with OpenAI/vLLM defaults (temperature 1,
// top_p 1, max_tokens = what max_model_len leaves each prompt), and the engine request of each
// choice (n per prompt; lists of prompts on completions). Each field is checked for its type and
// range and named in the error; the sampling extras are api_sampling.c's, the refusals
// api_refuse.c's. Must not keep pointers into the parsed JSON.
#include "api/api_request.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_chat.h"
#include "api/api_refuse.h"
#include "api/api_sampling.h"
#include "common/check.h"

// A field absent or null: the default stays.
static bool absent(const cJSON *v) { return !v || cJSON_IsNull(v); }

// A number field within [lo, hi] (a whole number when whole); false with err otherwise.
// *out is left alone when the field is absent.
static bool get_number(const cJSON *req, const char *name, double lo, double hi, bool whole,
                       double *out, ApiError *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, name);
  if (absent(v)) return true;
  if (!cJSON_IsNumber(v) || (whole && v->valuedouble != floor(v->valuedouble)))
    return api_error(err, 400, name, "%s must be %s", name, whole ? "an integer" : "a number");
  if (!(v->valuedouble >= lo && v->valuedouble <= hi))
    return api_error(err, 400, name, "%s must be in [%g, %g], got %g", name, lo, hi,
                     v->valuedouble);
  *out = v->valuedouble;
  return true;
}

bool api_request_get_bool(const cJSON *obj, const char *name, bool *out, ApiError *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
  if (absent(v)) return true;
  if (!cJSON_IsBool(v)) return api_error(err, 400, name, "%s must be true or false", name);
  *out = cJSON_IsTrue(v);
  return true;
}

bool api_request_check_model(const cJSON *req, const char *served, ApiError *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, "model");
  if (absent(v)) return true;
  if (!cJSON_IsString(v)) return api_error(err, 400, "model", "model must be a string");
  if (strcmp(v->valuestring, served) != 0)
    return api_error_model_not_found(err, "model", v->valuestring);
  return true;
}

// stop: a string or a list of strings (an empty string or list: none), owned copies in r.
static bool parse_stop(const cJSON *req, ApiRequest *r, ApiError *err) {
  const cJSON *stop = cJSON_GetObjectItemCaseSensitive(req, "stop");
  if (absent(stop)) return true;
  bool one = cJSON_IsString(stop);
  if (!one && !cJSON_IsArray(stop))
    return api_error(err, 400, "stop", "stop must be a string or a list of strings");
  size_t n = one ? 1 : (size_t)cJSON_GetArraySize(stop);
  if (n > API_MAX_STOP)
    return api_error(err, 400, "stop", "stop holds %zu strings; at most %d are supported", n,
                     API_MAX_STOP);
  r->stop = n ? xcalloc(n, sizeof *r->stop) : NULL;
  for (const cJSON *s = one ? stop : stop->child; s; s = one ? NULL : s->next) {
    if (!cJSON_IsString(s)) return api_error(err, 400, "stop", "stop must hold strings only");
    if (!s->valuestring[0]) {
      if (one) break;  // "stop": "" means none
      return api_error(err, 400, "stop", "stop cannot contain an empty string.");
    }
    r->stop[r->num_stop++] = xstrdup(s->valuestring);
  }
  return api_request_get_bool(req, "include_stop_str_in_output", &r->include_stop_str_in_output,
                              err);
}

static bool parse_sampling(const cJSON *req, bool chat, const ApiRequestContext *c, ApiRequest *r,
                           double *max_tokens, ApiError *err) {
  double temperature = 1, top_p = 1, top_k = -1, seed = 0;
  *max_tokens = 0;
  const char *limit =
      chat && !absent(cJSON_GetObjectItemCaseSensitive(req, "max_completion_tokens"))
          ? "max_completion_tokens"
          : "max_tokens";
  const cJSON *given_seed = cJSON_GetObjectItemCaseSensitive(req, "seed");
  if (!get_number(req, limit, -INFINITY, INFINITY, true, max_tokens, err)) return false;
  if (!absent(cJSON_GetObjectItemCaseSensitive(req, limit)) && *max_tokens < 1)
    return api_error(err, 400, limit, "%s must be at least 1, got %g", limit, *max_tokens);
  if (*max_tokens > INT_MAX)
    return api_error(err, 400, limit, "%s must be at most %d", limit, INT_MAX);
  if (!get_number(req, "temperature", 0, 1e6, false, &temperature, err) ||
      !get_number(req, "top_p", 0, 1, false, &top_p, err) ||
      !get_number(req, "top_k", -1, INT_MAX, true, &top_k, err) ||
      !get_number(req, "seed", -9.2e18, 1.8e19, true, &seed, err))
    return false;
  if (top_p <= 0) return api_error(err, 400, "top_p", "top_p must be in (0, 1], got 0");
  r->params.sampling = (SamplingParams){
      .temperature = (float)temperature, .top_p = (float)top_p, .top_k = (int)top_k};
  r->params.seed = absent(given_seed) ? c->default_seed
                   : seed < 0         ? (uint64_t)(int64_t)seed
                                      : (uint64_t)seed;
  return api_request_get_bool(req, "ignore_eos", &r->params.ignore_eos, err) &&
         api_request_get_bool(req, "return_token_ids", &r->return_token_ids, err);
}

static bool parse_stream(const cJSON *req, ApiRequest *r, ApiError *err) {
  if (!api_request_get_bool(req, "stream", &r->stream, err)) return false;
  const cJSON *options = cJSON_GetObjectItemCaseSensitive(req, "stream_options");
  if (absent(options)) return true;
  if (!cJSON_IsObject(options))
    return api_error(err, 400, "stream_options", "stream_options must be an object");
  if (!r->stream)
    return api_error(err, 400, "stream_options",
                     "stream_options can only be given when stream is true");
  bool continuous = false;
  if (!api_request_get_bool(options, "include_usage", &r->include_usage, err) ||
      !api_request_get_bool(options, "continuous_usage_stats", &continuous, err))
    return false;
  r->continuous_usage = continuous && r->include_usage;  // vLLM needs both
  return true;
}

// completions' echo; with logprobs it would need the prompt's logprobs, which are not computed.
static bool parse_echo(const cJSON *req, ApiRequest *r, ApiError *err) {
  if (r->chat) return true;  // chat's echo is refused (api_refuse.c)
  if (!api_request_get_bool(req, "echo", &r->echo, err)) return false;
  if (r->echo && r->params.logprobs)
    return api_error(err, 400, "echo",
                     "echo with logprobs needs the prompt's logprobs, which are not supported");
  return true;
}

// Token ids: whole numbers inside the vocabulary.
static bool token_id_prompt(const cJSON *ids, const Tokenizer *t, TokenIds *out, ApiError *err) {
  size_t i = 0;
  const cJSON *id;
  cJSON_ArrayForEach(id, ids) {
    if (!cJSON_IsNumber(id) || id->valuedouble != floor(id->valuedouble) || id->valuedouble < 0 ||
        id->valuedouble >= t->vocab_size)
      return api_error(err, 400, "prompt", "prompt[%zu] is not a token id in [0, %u)", i,
                       t->vocab_size);
    token_ids_push(out, (uint32_t)id->valuedouble);
    i++;
  }
  return true;
}

// Text (encoded without special tokens), or token ids.
static bool one_prompt(const cJSON *prompt, const Tokenizer *t, TokenIds *out, ApiError *err) {
  if (cJSON_IsString(prompt)) {
    tok_encode(t, prompt->valuestring, strlen(prompt->valuestring), false, out);
    return true;
  }
  if (!cJSON_IsArray(prompt) || !prompt->child || !cJSON_IsNumber(prompt->child))
    return api_error(err, 400, "prompt",
                     "prompt must be a string, a list of token ids, or a list of those");
  return token_id_prompt(prompt, t, out, err);
}

// tool_choice: "auto" (the default) renders the tools, "none" leaves them out of the prompt (as
// vLLM does); "required" and a named function need constrained decoding: 400.
static bool parse_tool_choice(const cJSON *req, bool *include_tools, ApiError *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, "tool_choice");
  bool pc = true;
  if (!api_request_get_bool(req, "parallel_tool_calls", &pc, err)) return false;
  *include_tools = true;
  if (absent(v) || (cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0)) return true;
  if (cJSON_IsString(v) && strcmp(v->valuestring, "none") == 0) {
    *include_tools = false;
    return true;
  }
  return api_error(err, 400, "tool_choice",
                   "tool_choice %s%.40s%s is not supported (it needs constrained decoding); use "
                   "\"auto\" or \"none\"",
                   cJSON_IsString(v) ? "\"" : "", cJSON_IsString(v) ? v->valuestring : "object",
                   cJSON_IsString(v) ? "\"" : "");
}

// One prompt, or a list of prompts (strings or lists of token ids): each its own choices.
static bool completion_prompts(const cJSON *prompt, const Tokenizer *t, ApiRequest *r,
                               ApiError *err) {
  bool list = cJSON_IsArray(prompt) && prompt->child &&
              (cJSON_IsString(prompt->child) || cJSON_IsArray(prompt->child));
  if (cJSON_IsArray(prompt) && !prompt->child)
    return api_error(err, 400, "prompt", "prompt must not be empty");
  r->num_prompts = list ? (size_t)cJSON_GetArraySize(prompt) : 1;
  if (r->num_prompts > API_MAX_CHOICES)
    return api_error(err, 400, "prompt", "prompt holds %zu prompts; at most %d are served at once",
                     r->num_prompts, API_MAX_CHOICES);
  if (!list) return one_prompt(prompt, t, &r->prompt, err);
  r->more_prompts = xcalloc(r->num_prompts, sizeof *r->more_prompts);
  size_t i = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, prompt) {
    if (!one_prompt(item, t, i ? &r->more_prompts[i - 1] : &r->prompt, err)) return false;
    i++;
  }
  return true;
}

static bool parse_prompt(const cJSON *req, bool chat, const ApiRequestContext *c, ApiRequest *r,
                         ApiError *err) {
  const char *name = chat ? "messages" : "prompt";
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, name);
  if (absent(v)) return api_error(err, 400, name, "%s is required", name);
  if (!chat) return completion_prompts(v, c->t, r, err);
  const cJSON *effort = cJSON_GetObjectItemCaseSensitive(req, "reasoning_effort");
  if (!absent(effort) && !cJSON_IsString(effort))
    return api_error(err, 400, "reasoning_effort", "reasoning_effort must be a string");
  r->num_prompts = 1;
  ApiTools tools;
  bool include_tools;
  if (!parse_tool_choice(req, &include_tools, err) ||
      !api_tools_parse(cJSON_GetObjectItemCaseSensitive(req, "tools"), true, &tools, err))
    return false;
  ApiChatOptions o = {.reasoning_effort = absent(effort) ? NULL : effort->valuestring,
                      .current_date = c->current_date,
                      .tools = include_tools ? &tools : NULL};
  bool ok = api_chat_render(v, &o, c->t, &r->prompt, err);
  api_tools_free(&tools);
  return ok;
}

static bool parse_object(ApiRequest *r, const cJSON *req, const ApiRequestContext *c,
                         ApiError *err) {
  double max_tokens;
  if (!api_request_check_model(req, c->model, err) || !parse_stop(req, r, err) ||
      !api_refuse_unsupported(req, r->chat ? API_REFUSE_CHAT : API_REFUSE_COMPLETIONS, err) ||
      !parse_sampling(req, r->chat, c, r, &max_tokens, err) ||
      !api_sampling_parse(req, c->t, r, err) || !parse_stream(req, r, err) ||
      !parse_echo(req, r, err) || !parse_prompt(req, r->chat, c, r, err))
    return false;
  double n = 1;
  if (!get_number(req, "n", 1, API_MAX_CHOICES, true, &n, err)) return false;
  r->n = (int)n;
  if ((size_t)r->n * r->num_prompts > API_MAX_CHOICES)
    return api_error(err, 400, "n", "n = %d for %zu prompts makes more than %d choices", r->n,
                     r->num_prompts, API_MAX_CHOICES);
  r->max_tokens_given = max_tokens >= 1 ? (int)max_tokens : 0;
  r->max_model_len = c->max_model_len;
  r->params = api_request_choice(r, 0);
  return true;
}

EngineRequestParams api_request_choice(const ApiRequest *r, size_t c) {
  size_t k = c / (size_t)r->n;
  const TokenIds *prompt = k ? &r->more_prompts[k - 1] : &r->prompt;
  EngineRequestParams p = r->params;
  long room = (long)r->max_model_len - (long)prompt->len;
  p.max_tokens = r->max_tokens_given ? r->max_tokens_given : room > 1 ? (int)room : 1;
  p.prompt_ids = prompt->data;
  p.num_prompt_ids = prompt->len;
  p.seed = r->params.seed + c % (size_t)r->n;
  return p;
}

// body[0..len) as one JSON value with nothing but whitespace after it; NULL otherwise.
static cJSON *parse_json(const char *body, size_t len) {
  const char *end = NULL;
  cJSON *v = cJSON_ParseWithLengthOpts(body ? body : "", len, &end, false);
  for (const char *p = end; v && p < body + len; p++)
    if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
      cJSON_Delete(v);
      return NULL;
    }
  return v;
}

// cJSON ends its strings at a NUL, so a NUL in one (the raw byte, or "\u0000") would cut a prompt
// or a model name short without a word; such bodies are refused instead.
static bool has_nul(const char *body, size_t len) {
  if (len && memchr(body, 0, len)) return true;
  for (const char *p = body; len && (p = memmem(p, (size_t)(body + len - p), "\\u0000", 6));
       p += 6) {
    size_t backslashes = 0;  // before this one: an even number leaves it an escape
    while (p - backslashes > body && p[-1 - (long)backslashes] == '\\') backslashes++;
    if (backslashes % 2 == 0) return true;
  }
  return false;
}

cJSON *api_request_object(const char *body, size_t len, ApiError *err) {
  if (has_nul(body, len)) {
    api_error(err, 400, NULL, "the request holds a NUL character, which is not supported");
    return NULL;
  }
  cJSON *req = parse_json(body, len);
  if (cJSON_IsObject(req)) return req;
  api_error(err, 400, NULL, "the request body is not a JSON object%s",
            req ? "" : " (malformed JSON)");
  cJSON_Delete(req);
  return NULL;
}

bool api_request_parse(ApiRequest *r, const ApiRequestContext *c, bool chat, const char *body,
                       size_t len, ApiError *err) {
  *r = (ApiRequest){.chat = chat};
  cJSON *req = api_request_object(body, len, err);
  bool ok = req && parse_object(r, req, c, err);
  cJSON_Delete(req);
  if (!ok) api_request_free(r);
  return ok;
}

void api_request_free(ApiRequest *r) {
  token_ids_free(&r->prompt);
  for (size_t i = 0; r->more_prompts && i + 1 < r->num_prompts; i++)
    token_ids_free(&r->more_prompts[i]);
  free(r->more_prompts);
  r->more_prompts = NULL;
  for (size_t i = 0; i < r->num_stop; i++) free(r->stop[i]);
  free(r->stop);
  r->stop = NULL;
  r->num_stop = 0;
  token_ids_free(&r->stop_token_ids);
  free(r->logit_bias);
  r->logit_bias = NULL;
  r->num_logit_bias = 0;
  r->params.logit_bias = NULL;
  r->params.stop_token_ids = NULL;
  r->params.prompt_ids = NULL;
  r->params.num_prompt_ids = 0;
}
