// api_logprobs.c: writes logprobs JSON by hand into Bufs (no cJSON tree per token); whole
// answers keep each array's items as JSON text and join them at the end.
#include "api/api_logprobs.h"

#include <string.h>

#include "api/api_json.h"
#include "text/utf8.h"

enum { CHAT_CONTENT = 0, CMPL_OFFSETS = 0, CMPL_LOGPROBS = 1, CMPL_TOKENS = 2, CMPL_TOP = 3 };

void api_logprobs_init(ApiLogprobs *l, bool chat, int num_top, const Tokenizer *t) {
  *l = (ApiLogprobs){.chat = chat, .num_top = num_top, .t = t};
}

void api_logprobs_free(ApiLogprobs *l) {
  for (int i = 0; i < 4; i++) buf_free(&l->items[i]);
  buf_free(&l->text);
  buf_free(&l->scratch);
}

// id's text into l->text (replaced invalid UTF-8); returns its length in code points.
static size_t token_text(ApiLogprobs *l, uint32_t id) {
  buf_clear(&l->text);
  size_t n = 0, code_points = 0;
  const uint8_t *s = tok_id_bytes(l->t, id, &n);
  for (size_t i = 0; s && i < n; code_points++) {
    int k = utf8_next(s + i, n - i);  // 0: an unfinished character, which ends the token
    if (k > 0)
      buf_append(&l->text, (const char *)s + i, (size_t)k);
    else
      buf_append_str(&l->text, UTF8_REPLACEMENT);
    i += k > 0 ? (size_t)k : k < 0 ? (size_t)-k : n - i;
  }
  return code_points;
}

// {"token": text, "logprob": x, "bytes": [...]} without the closing brace.
static void chat_token(ApiLogprobs *l, Buf *out, uint32_t id, float logprob) {
  token_text(l, id);
  buf_append_str(out, "{\"token\":");
  api_json_string(out, l->text.data, l->text.len);
  buf_append_str(out, ",\"logprob\":");
  api_json_logprob(out, logprob);
  buf_append_str(out, ",\"bytes\":[");
  for (size_t i = 0; i < l->text.len; i++)
    buf_printf(out, "%s%u", i ? "," : "", (unsigned)(uint8_t)l->text.data[i]);
  buf_append_str(out, "]");
}

static void chat_entry(ApiLogprobs *l, const TokenEvent *ev, Buf *out) {
  const PickLogprobs *lp = &ev->logprobs;
  chat_token(l, out, ev->token_id, lp->logprob);
  buf_append_str(out, ",\"top_logprobs\":[");
  for (int k = 0; k < lp->num_top && k < l->num_top; k++) {
    if (k) buf_append_byte(out, ',');
    chat_token(l, out, lp->top_ids[k], lp->top_logprobs[k]);
    buf_append_byte(out, '}');
  }
  buf_append_str(out, "]}");
}

// One {token: logprob} pair of a completions top_logprobs dict; false when a key with the same
// text is already in it (JSON objects hold each key once; the first stays).
static bool cmpl_pair(ApiLogprobs *l, Buf *dict, size_t dict_start, uint32_t id, float logprob) {
  token_text(l, id);
  buf_clear(&l->scratch);
  api_json_string(&l->scratch, l->text.data, l->text.len);
  buf_append_byte(&l->scratch, ':');
  size_t key_len = l->scratch.len;
  const char *body = dict->data ? dict->data + dict_start : "";
  size_t body_len = dict->len - dict_start;
  for (size_t i = 0; i + key_len <= body_len; i++)  // keys follow '{' or ','
    if ((i == 0 || body[i - 1] == ',' || body[i - 1] == '{') &&
        memcmp(body + i, l->scratch.data, key_len) == 0)
      return false;
  if (dict->len > dict_start + 1) buf_append_byte(dict, ',');
  buf_append(dict, l->scratch.data, l->scratch.len);
  api_json_logprob(dict, logprob);
  return true;
}

// A completions token's four items, each appended to its own Buf.
static void cmpl_items(ApiLogprobs *l, const TokenEvent *ev, Buf *items[4]) {
  const PickLogprobs *lp = &ev->logprobs;
  buf_printf(items[CMPL_OFFSETS], "%zu", l->text_offset);
  api_json_logprob(items[CMPL_LOGPROBS], lp->logprob);
  size_t code_points = token_text(l, ev->token_id);
  api_json_string(items[CMPL_TOKENS], l->text.data, l->text.len);
  l->text_offset += code_points;
  Buf *dict = items[CMPL_TOP];
  size_t start = dict->len;
  buf_append_byte(dict, '{');
  bool sampled_in_top = false;
  for (int k = 0; k < lp->num_top && k < l->num_top; k++)
    sampled_in_top |= lp->top_ids[k] == ev->token_id;
  if (!sampled_in_top) cmpl_pair(l, dict, start, ev->token_id, lp->logprob);
  for (int k = 0; k < lp->num_top && k < l->num_top; k++)
    cmpl_pair(l, dict, start, lp->top_ids[k], lp->top_logprobs[k]);
  buf_append_byte(dict, '}');
}

static const char *const CMPL_NAMES[4] = {"text_offset", "token_logprobs", "tokens",
                                          "top_logprobs"};

void api_logprobs_chunk(ApiLogprobs *l, const TokenEvent *ev, Buf *out) {
  if (!ev->has_token || !ev->has_logprobs) {
    buf_append_str(out, "null");
    return;
  }
  if (l->chat) {
    buf_append_str(out, "{\"content\":[");
    chat_entry(l, ev, out);
    buf_append_str(out, "]}");
    return;
  }
  for (int i = 0; i < 4; i++) buf_clear(&l->items[i]);
  Buf *items[4] = {&l->items[0], &l->items[1], &l->items[2], &l->items[3]};
  cmpl_items(l, ev, items);
  for (int i = 0; i < 4; i++) {
    buf_printf(out, "%s\"%s\":[", i ? "," : "{", CMPL_NAMES[i]);
    buf_append(out, l->items[i].data, l->items[i].len);
    buf_append_byte(out, ']');
  }
  buf_append_byte(out, '}');
}

void api_logprobs_add(ApiLogprobs *l, const TokenEvent *ev) {
  if (!ev->has_token || !ev->has_logprobs) return;
  int num_arrays = l->chat ? 1 : 4;
  for (int i = 0; i < num_arrays && l->num_tokens; i++) buf_append_byte(&l->items[i], ',');
  if (l->chat)
    chat_entry(l, ev, &l->items[CHAT_CONTENT]);
  else
    cmpl_items(l, ev, (Buf *[4]){&l->items[0], &l->items[1], &l->items[2], &l->items[3]});
  l->num_tokens++;
}

void api_logprobs_whole(const ApiLogprobs *l, Buf *out) {
  if (l->chat) {
    buf_append_str(out, "{\"content\":[");
    buf_append(out, l->items[CHAT_CONTENT].data, l->items[CHAT_CONTENT].len);
    buf_append_str(out, "]}");
    return;
  }
  for (int i = 0; i < 4; i++) {
    buf_printf(out, "%s\"%s\":[", i ? "," : "{", CMPL_NAMES[i]);
    buf_append(out, l->items[i].data, l->items[i].len);
    buf_append_byte(out, ']');
  }
  buf_append_byte(out, '}');
}
