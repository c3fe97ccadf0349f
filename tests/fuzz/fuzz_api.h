// fuzz_api.h: the check both request-body targets (fuzz_api_completions.c, fuzz_api_chat.c)
// run: a body through api_request_parse as the engine's HTTP thread does, then what must hold of
// any answer: an error is a 400/404 with a message; a request has ids inside the vocabulary,
// sane sampling values, and a prompt whose special tokens are only those the renderer adds
// (client text never becomes a control token: the same request with its texts neutralised has
// as many). Included by those two files only.
#ifndef GB_TESTS_FUZZ_API_H
#define GB_TESTS_FUZZ_API_H

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_request.h"
#include "fuzz_util.h"

// Special ids in ids[0..n).
static size_t fuzz_api_num_specials(const Tokenizer *t, const uint32_t *ids, size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < n; i++) count += tok_is_special(t, ids[i]);
  return count;
}

// Every text a client writes (message content and text parts, reasoning, tool-call arguments,
// tool descriptions) replaced by "x", in place.
static void fuzz_api_neutralise(cJSON *v) {
  static const char *const texts[] = {"content", "text", "reasoning", "reasoning_content",
                                      "arguments", "description"};
  cJSON *item;
  cJSON_ArrayForEach(item, v) {
    for (size_t i = 0; cJSON_IsString(item) && item->string && i < sizeof texts / sizeof *texts;
         i++)
      if (strcmp(item->string, texts[i]) == 0) cJSON_SetValuestring(item, "x");
    fuzz_api_neutralise(item);
  }
}

// How many specials the prompt may hold: a chat prompt exactly as many as the same request with
// every client text replaced by "x" (so no text ever becomes a control token, whatever the
// renderer adds); a text completion prompt none; token ids may be anything. -1: no expectation.
static long fuzz_api_expected_specials(const cJSON *req, bool chat, const ApiRequestContext *ctx) {
  if (chat) {
    cJSON *neutral = cJSON_Duplicate(req, true);
    fuzz_api_neutralise(neutral);
    char *body = cJSON_PrintUnformatted(neutral);
    cJSON_Delete(neutral);
    ApiRequest r;
    ApiError err = {0};
    long expected = -1;
    if (body && api_request_parse(&r, ctx, true, body, strlen(body), &err)) {
      expected = (long)fuzz_api_num_specials(ctx->t, r.params.prompt_ids, r.params.num_prompt_ids);
      api_request_free(&r);
    }
    free(body);
    return expected;
  }
  const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(req, "prompt");
  if (cJSON_IsArray(prompt)) prompt = prompt->child;
  return cJSON_IsString(prompt) ? 0 : -1;
}

static void fuzz_api_body(const uint8_t *data, size_t size, bool chat) {
  const Tokenizer *t = fuzz_tokenizer();
  ApiRequestContext ctx = {.model = "gpt-oss", .t = t, .max_model_len = 4096, .default_seed = 7};
  ApiRequest r;
  ApiError err = {0};
  if (!api_request_parse(&r, &ctx, chat, (const char *)data, size, &err)) {
    fuzz_require(err.status == 400 || err.status == 404, "an error is a 400 or a 404");
    fuzz_require(err.message[0] != '\0', "an error has a message");
    return;
  }
  const EngineRequestParams *p = &r.params;
  fuzz_require(p->prompt_ids == r.prompt.data && p->num_prompt_ids == r.prompt.len,
               "params point at the prompt");
  for (size_t i = 0; i < p->num_prompt_ids; i++)
    fuzz_require(p->prompt_ids[i] < t->vocab_size, "prompt ids are inside the vocabulary");
  fuzz_require(p->max_tokens >= 1, "max_tokens >= 1");
  fuzz_require(p->sampling.temperature >= 0 && p->sampling.top_p > 0 && p->sampling.top_p <= 1 &&
                   p->sampling.top_k >= -1,
               "sampling values in range");
  fuzz_require(r.stream || !r.include_usage, "include_usage only with stream");
  cJSON *req = cJSON_ParseWithLength((const char *)data, size);
  long expected = fuzz_api_expected_specials(req, chat, &ctx);
  cJSON_Delete(req);
  if (expected >= 0)
    fuzz_require(fuzz_api_num_specials(t, p->prompt_ids, p->num_prompt_ids) == (size_t)expected,
                 "only the renderer's special tokens are in the prompt");
  if (chat)
    fuzz_require(p->num_prompt_ids >= 2 && p->prompt_ids[p->num_prompt_ids - 2] == TOK_START,
                 "a chat prompt ends with <|start|>assistant");
  api_request_free(&r);
}

#endif
