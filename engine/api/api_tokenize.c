// api_tokenize.c: the /tokenize and /detokenize bodies (vLLM's TokenizeCompletionRequest,
// TokenizeChatRequest and DetokenizeRequest) and their answers. Fields vLLM takes that this
// server cannot honour (tools, a chat template, continue_final_message, multimodal kwargs) are
// refused with a 400 naming them; add_special_tokens is accepted and changes nothing, as in
// vLLM: the gpt-oss tokenizer adds no BOS or EOS. Must not touch the engine.
#include "api/api_tokenize.h"

#include <math.h>
#include <string.h>

#include "api/api_chat.h"
#include "text/stream_decoder.h"

ApiTextRoute api_tokenize_route(const char *url) {
  return strcmp(url, "/tokenize") == 0     ? API_TEXT_TOKENIZE
         : strcmp(url, "/detokenize") == 0 ? API_TEXT_DETOKENIZE
                                           : API_TEXT_NONE;
}

static const cJSON *field(const cJSON *req, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, name);
  return v && !cJSON_IsNull(v) ? v : NULL;
}

bool api_tokenize_token_str(const Tokenizer *t, uint32_t id, Buf *out) {
  size_t len = 0;
  const uint8_t *bytes = tok_id_bytes(t, id, &len);
  if (!bytes) return false;
  if (tok_is_special(t, id)) {
    buf_append(out, bytes, len);
    return true;
  }
  for (size_t i = 0; i < len; i++) {
    // GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 for
    // U+0100 onwards in byte order.
    unsigned b = bytes[i], cp = b;
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    if (!printable) {
      cp = 256;
      for (unsigned c = 0; c < b; c++)
        cp += !((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE);
    }
    if (cp < 0x80) {
      buf_append_byte(out, (uint8_t)cp);
    } else {
      buf_append_byte(out, (uint8_t)(0xC0 | cp >> 6));
      buf_append_byte(out, (uint8_t)(0x80 | (cp & 0x3F)));
    }
  }
  return true;
}

// The chat fields: a reasoning effort from chat_template_kwargs (the only key honoured), the
// rendered messages, then without the trailing "<|start|>assistant" when add_generation_prompt
// is false.
static bool chat_ids(const cJSON *req, const ApiRequestContext *c, TokenIds *ids, ApiError *err) {
  const Tokenizer *t = c->t;
  static const char *const refused[] = {"tools", "chat_template", "mm_processor_kwargs",
                                        "media_io_kwargs"};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
    if (field(req, refused[i]))
      return api_error(err, 400, refused[i], "%s is not supported by /tokenize", refused[i]);
  bool generation_prompt = true, continue_final = false;
  if (!api_request_get_bool(req, "add_generation_prompt", &generation_prompt, err) ||
      !api_request_get_bool(req, "continue_final_message", &continue_final, err))
    return false;
  if (continue_final && generation_prompt)
    return api_error(err, 400, "continue_final_message",
                     "Cannot set both `continue_final_message` and `add_generation_prompt` to "
                     "True.");
  if (continue_final)
    return api_error(err, 400, "continue_final_message", "continue_final_message is not supported");
  const cJSON *kwargs = field(req, "chat_template_kwargs"), *effort = NULL;
  if (kwargs) {
    effort = field(kwargs, "reasoning_effort");
    if (!cJSON_IsObject(kwargs) || cJSON_GetArraySize(kwargs) != (effort ? 1 : 0) ||
        (effort && !cJSON_IsString(effort)))
      return api_error(err, 400, "chat_template_kwargs",
                       "chat_template_kwargs may only hold a reasoning_effort string");
  }
  ApiChatOptions o = {.reasoning_effort = effort ? effort->valuestring : NULL,
                      .current_date = c->current_date};
  if (!api_chat_render(field(req, "messages"), &o, t, ids, err)) return false;
  if (generation_prompt) return true;
  TokenIds tail = {0};
  token_ids_push(&tail, (uint32_t)tok_special_id(t, "<|start|>", 9));
  tok_encode(t, "assistant", 9, false, &tail);
  if (ids->len >= tail.len &&
      memcmp(ids->data + ids->len - tail.len, tail.data, tail.len * sizeof *tail.data) == 0)
    ids->len -= tail.len;
  token_ids_free(&tail);
  return true;
}

static cJSON *tokenize(const cJSON *req, const ApiRequestContext *c, ApiError *err) {
  bool chat = field(req, "messages") != NULL, add_special = !chat, strs = false;
  if (!api_request_get_bool(req, "add_special_tokens", &add_special, err) ||
      !api_request_get_bool(req, "return_token_strs", &strs, err))
    return NULL;
  TokenIds ids = {0};
  const cJSON *prompt = field(req, "prompt");
  if (chat) {
    if (!chat_ids(req, c, &ids, err)) {
      token_ids_free(&ids);
      return NULL;
    }
  } else if (cJSON_IsString(prompt)) {
    tok_encode(c->t, prompt->valuestring, strlen(prompt->valuestring), false, &ids);
  } else {
    api_error(err, 400, prompt ? "prompt" : NULL,
              prompt ? "prompt must be a string" : "prompt or messages is required");
    return NULL;
  }
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "count", (double)ids.len);
  cJSON_AddNumberToObject(root, "max_model_len", c->max_model_len);
  cJSON *tokens = cJSON_AddArrayToObject(root, "tokens");
  cJSON *token_strs = strs ? cJSON_AddArrayToObject(root, "token_strs") : NULL;
  if (!strs) cJSON_AddNullToObject(root, "token_strs");
  Buf text = {0};
  for (size_t i = 0; i < ids.len; i++) {
    cJSON_AddItemToArray(tokens, cJSON_CreateNumber(ids.data[i]));
    if (!strs) continue;
    buf_clear(&text);
    api_tokenize_token_str(c->t, ids.data[i], &text);
    buf_append_byte(&text, '\0');
    cJSON_AddItemToArray(token_strs, cJSON_CreateString(text.data));
  }
  buf_free(&text);
  token_ids_free(&ids);
  return root;
}

static cJSON *detokenize(const cJSON *req, const ApiRequestContext *c, ApiError *err) {
  const cJSON *tokens = field(req, "tokens");
  if (!cJSON_IsArray(tokens)) {
    api_error(err, 400, "tokens", "tokens must be a list of token ids");
    return NULL;
  }
  TokenIds ids = {0};
  size_t i = 0;
  const cJSON *id;
  cJSON_ArrayForEach(id, tokens) {
    size_t len;
    double v = cJSON_IsNumber(id) ? id->valuedouble : -1;
    if (v != floor(v) || v < 0 || v >= c->t->vocab_size || !tok_id_bytes(c->t, (uint32_t)v, &len)) {
      api_error(err, 400, "tokens", "tokens[%zu] is not a token id of the vocabulary", i);
      token_ids_free(&ids);
      return NULL;
    }
    token_ids_push(&ids, (uint32_t)v);
    i++;
  }
  Buf text = {0};
  stream_decoder_decode_all(c->t, ids.data, ids.len, &text);
  token_ids_free(&ids);
  cJSON *root = NULL;
  if (text.len && memchr(text.data, '\0', text.len))
    api_error(err, 400, "tokens", "the text holds a NUL character, which is not supported");
  else
    root = cJSON_CreateObject();
  buf_append_byte(&text, '\0');
  if (root) cJSON_AddStringToObject(root, "prompt", text.data);
  buf_free(&text);
  return root;
}

cJSON *api_tokenize_answer(ApiTextRoute route, const ApiRequestContext *c, const char *body,
                           size_t len, ApiError *err) {
  cJSON *req = api_request_object(body, len, err);
  cJSON *answer = NULL;
  if (req && api_request_check_model(req, c->model, err))
    answer = route == API_TEXT_TOKENIZE ? tokenize(req, c, err) : detokenize(req, c, err);
  cJSON_Delete(req);
  return answer;
}
