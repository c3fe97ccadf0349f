// api_refuse.c: the request fields of vLLM's ChatCompletionRequest / CompletionRequest that
// change the output and that this engine does not implement. Each is refused with a 400 naming
// it, unless it holds its default (absent, null, or the value that means "off"), so that a
// client never gets an answer that silently ignored what it asked for. Fields that do not change
// the output (user, metadata, store, service_tier, ...) are not listed: they are accepted. Must
// not parse the fields this engine does implement (api_request.c does).
#include "api/api_refuse.h"

#include <string.h>

typedef enum {
  OFF_FALSE,  // absent, null or false
  OFF_EMPTY,  // absent, null, "", [], {}
  OFF_ZERO,   // absent, null or 0
  OFF_ONE,    // absent, null or 1
  OFF_TRUE,   // absent, null or true
} OffValue;

typedef struct {
  const char *name;
  OffValue off;
  unsigned routes;  // API_REFUSE_CHAT, API_REFUSE_COMPLETIONS
  const char *why;
} Refusal;

enum { CHAT = API_REFUSE_CHAT, CMPL = API_REFUSE_COMPLETIONS, BOTH = CHAT | CMPL };

static const Refusal REFUSALS[] = {
    {"best_of", OFF_ONE, BOTH, "vLLM V1 does not support best_of"},
    {"use_beam_search", OFF_FALSE, BOTH, "beam search is not implemented"},
    {"length_penalty", OFF_ONE, BOTH, "it applies to beam search, which is not implemented"},
    {"min_p", OFF_ZERO, BOTH, "min_p sampling is not implemented"},
    {"allowed_token_ids", OFF_EMPTY, BOTH, "not implemented in this engine"},
    {"bad_words", OFF_EMPTY, BOTH, "not implemented in this engine"},
    {"logits_processors", OFF_EMPTY, BOTH, "not implemented in this engine"},
    {"prompt_logprobs", OFF_EMPTY, BOTH, "not implemented in this engine"},
    {"skip_special_tokens", OFF_TRUE, BOTH, "special tokens are always skipped in the text"},
    {"truncate_prompt_tokens", OFF_EMPTY, BOTH, "not implemented in this engine"},
    {"return_tokens_as_token_ids", OFF_FALSE, BOTH, "not implemented in this engine"},
    {"priority", OFF_ZERO, BOTH, "priority scheduling is not enabled"},
    {"response_format", OFF_EMPTY, BOTH, NULL},  // see response_format_refused
    {"guided_json", OFF_EMPTY, BOTH, "constrained decoding is not implemented"},
    {"guided_regex", OFF_EMPTY, BOTH, "constrained decoding is not implemented"},
    {"guided_choice", OFF_EMPTY, BOTH, "constrained decoding is not implemented"},
    {"guided_grammar", OFF_EMPTY, BOTH, "constrained decoding is not implemented"},
    {"structural_tag", OFF_EMPTY, BOTH, "constrained decoding is not implemented"},
    {"structured_outputs", OFF_EMPTY, BOTH, "constrained decoding is not implemented"},
    {"logits_processor_pattern", OFF_EMPTY, BOTH, "not implemented in this engine"},
    {"prediction", OFF_EMPTY, CHAT, "predicted outputs are not implemented"},
    {"audio", OFF_EMPTY, CHAT, "only text output is implemented"},
    {"web_search_options", OFF_EMPTY, CHAT, "web search is not implemented"},
    {"echo", OFF_FALSE, CHAT, "echoing the last message is not implemented"},
    {"add_generation_prompt", OFF_TRUE, CHAT,
     "the harmony prompt always ends with the generation prompt"},
    {"continue_final_message", OFF_FALSE, CHAT, "not implemented in this engine"},
    {"chat_template", OFF_EMPTY, CHAT, "the harmony chat template is fixed"},
    {"chat_template_kwargs", OFF_EMPTY, CHAT, "the harmony chat template is fixed"},
    {"documents", OFF_EMPTY, CHAT, "the harmony template takes no documents"},
    {"mm_processor_kwargs", OFF_EMPTY, CHAT, "multimodal inputs are not implemented"},
    {"suffix", OFF_EMPTY, CMPL, "suffix is not currently supported (as in vLLM)"},
    {"prompt_embeds", OFF_EMPTY, CMPL, "not implemented in this engine"},
};

static bool holds_off_value(const cJSON *v, OffValue off) {
  if (!v || cJSON_IsNull(v)) return true;
  switch (off) {
    case OFF_FALSE: return cJSON_IsFalse(v);
    case OFF_TRUE: return cJSON_IsTrue(v);
    case OFF_ZERO: return cJSON_IsNumber(v) && v->valuedouble == 0;
    case OFF_ONE: return cJSON_IsNumber(v) && v->valuedouble == 1;
    case OFF_EMPTY:
      return (cJSON_IsString(v) && v->valuestring[0] == '\0') ||
             ((cJSON_IsArray(v) || cJSON_IsObject(v)) && !v->child);
  }
  return false;
}

// response_format {"type": "text"} is plain output; json_object, json_schema and structural_tag
// need constrained decoding.
static bool response_format_refused(const cJSON *v, ApiError *err) {
  const cJSON *type = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "type") : NULL;
  if (!cJSON_IsString(type))
    return api_error(err, 400, "response_format",
                     "response_format must be an object with a string \"type\"");
  if (strcmp(type->valuestring, "text") == 0) return true;
  return api_error(err, 400, "response_format",
                   "response_format type \"%.40s\" is not supported: constrained decoding is "
                   "not implemented",
                   type->valuestring);
}

bool api_refuse_unsupported(const cJSON *req, unsigned route, ApiError *err) {
  for (size_t i = 0; i < sizeof REFUSALS / sizeof *REFUSALS; i++) {
    const Refusal *f = &REFUSALS[i];
    if (!(f->routes & route)) continue;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, f->name);
    if (!f->why) {
      if (v && !cJSON_IsNull(v) && !response_format_refused(v, err)) return false;
      continue;
    }
    if (!holds_off_value(v, f->off))
      return api_error(err, 400, f->name, "%s is not supported: %s", f->name, f->why);
  }
  return true;
}
