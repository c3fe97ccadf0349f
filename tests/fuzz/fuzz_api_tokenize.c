// fuzz_api_tokenize.c: libFuzzer target for the /tokenize and /detokenize bodies
// (api_tokenize_answer; the first byte picks the route, the rest is the body). What must hold:
// an error is a 400/404 with a message; a /tokenize answer's count is its number of tokens,
// each inside the vocabulary, with one valid UTF-8 token string each when asked for; a
// /detokenize answer is valid UTF-8.
#include <cjson/cJSON.h>
#include <string.h>

#include "api/api_tokenize.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const Tokenizer *t = fuzz_tokenizer();
  ApiRequestContext ctx = {.model = "gpt-oss", .t = t, .max_model_len = 4096};
  ApiTextRoute route = data[0] & 1 ? API_TEXT_DETOKENIZE : API_TEXT_TOKENIZE;
  ApiError err = {0};
  cJSON *a = api_tokenize_answer(route, &ctx, (const char *)data + 1, size - 1, &err);
  if (!a) {
    fuzz_require(err.status == 400 || err.status == 404, "an error is a 400 or a 404");
    fuzz_require(err.message[0] != '\0', "an error has a message");
    return 0;
  }
  if (route == API_TEXT_DETOKENIZE) {
    const cJSON *prompt = cJSON_GetObjectItem(a, "prompt");
    fuzz_require(
        cJSON_IsString(prompt) && fuzz_valid_utf8(prompt->valuestring, strlen(prompt->valuestring)),
        "the text is valid UTF-8");
    cJSON_Delete(a);
    return 0;
  }
  const cJSON *tokens = cJSON_GetObjectItem(a, "tokens"),
              *strs = cJSON_GetObjectItem(a, "token_strs");
  int n = cJSON_GetArraySize(tokens);
  fuzz_require(cJSON_GetObjectItem(a, "count")->valueint == n, "count is the number of tokens");
  const cJSON *id;
  cJSON_ArrayForEach(id, tokens)
      fuzz_require(id->valuedouble < t->vocab_size, "ids in the vocabulary");
  fuzz_require(cJSON_IsNull(strs) || cJSON_GetArraySize(strs) == n, "one token string per token");
  const cJSON *s;
  cJSON_ArrayForEach(s, strs) fuzz_require(fuzz_valid_utf8(s->valuestring, strlen(s->valuestring)),
                                           "token strings are UTF-8");
  cJSON_Delete(a);
  return 0;
}
