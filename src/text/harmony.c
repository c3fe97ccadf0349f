// harmony.c: harmony rendering and incremental parsing. Text between two special tokens is
// encoded as one piece, exactly as harmony does; message content is never scanned for special
// tokens, so a user cannot inject "<|end|>".
#include "text/harmony.h"

#include <stdio.h>
#include <string.h>

// ---------------------------------------------------------------------------------------------
// rendering: a pending text run, flushed through the encoder whenever a special token is added

typedef struct {
  const Tokenizer *t;
  TokenIds *out;
  Buf text;
} Renderer;

static void render_text(Renderer *r, const char *s) { buf_append_str(&r->text, s); }

static void render_special(Renderer *r, uint32_t id) {
  tok_encode(r->t, r->text.data, r->text.len, false, r->out);
  buf_clear(&r->text);
  token_ids_push(r->out, id);
}

static void render_flush(Renderer *r) {
  tok_encode(r->t, r->text.data, r->text.len, false, r->out);
  buf_free(&r->text);
}

void harmony_system_content(const HarmonySystemOptions *opts, Buf *out) {
  HarmonySystemOptions o = opts ? *opts : (HarmonySystemOptions){0};
  buf_append_str(out, o.model_identity ? o.model_identity
                                       : "You are ChatGPT, a large language model trained by OpenAI.");
  buf_printf(out, "\nKnowledge cutoff: %s", o.knowledge_cutoff ? o.knowledge_cutoff : "2024-06");
  if (o.current_date) buf_printf(out, "\nCurrent date: %s", o.current_date);
  buf_printf(out, "\n\nReasoning: %s", o.reasoning_effort ? o.reasoning_effort : "medium");
  buf_printf(out,
             "\n\n# Valid channels: analysis, %sfinal. Channel must be included for every "
             "message.",
             o.without_commentary ? "" : "commentary, ");
  if (o.has_function_tools)
    buf_append_str(out, "\nCalls to these tools must go to the commentary channel: 'functions'.");
}

static void render_message(Renderer *r, const HarmonyMessage *m) {
  render_special(r, TOK_START);
  render_text(r, m->role);
  if (m->recipient) {
    render_text(r, " to=");
    render_text(r, m->recipient);
  }
  if (m->channel) {
    render_special(r, TOK_CHANNEL);
    render_text(r, m->channel);
  }
  if (m->content_type) {
    const char *constrain = "<|constrain|>";
    render_text(r, " ");
    const char *type = m->content_type;
    if (strncmp(type, constrain, strlen(constrain)) == 0) {
      render_special(r, TOK_CONSTRAIN);
      type += strlen(constrain);
    }
    render_text(r, type);
  }
  render_special(r, TOK_MESSAGE);
  render_text(r, m->content ? m->content : "");
  bool is_call = m->recipient && strcmp(m->role, "assistant") == 0;
  render_special(r, is_call ? TOK_CALL : TOK_END);
}

void harmony_render_message(const Tokenizer *t, const HarmonyMessage *m, TokenIds *out) {
  Renderer r = {.t = t, .out = out};
  render_message(&r, m);
  render_flush(&r);
}

void harmony_render_prompt(const Tokenizer *t, const HarmonyMessage *messages, size_t num_messages,
                           const HarmonySystemOptions *opts, TokenIds *out) {
  Renderer r = {.t = t, .out = out};
  if (num_messages == 0 || strcmp(messages[0].role, "system") != 0) {
    Buf system = {0};
    harmony_system_content(opts, &system);
    render_message(&r, &(HarmonyMessage){.role = "system", .content = system.data});
    buf_free(&system);
  }
  for (size_t i = 0; i < num_messages; i++) render_message(&r, &messages[i]);
  render_special(&r, TOK_START);
  render_text(&r, "assistant");
  render_flush(&r);
}

bool harmony_is_stop_token(uint32_t id) {
  return id == TOK_RETURN || id == TOK_CALL || id == TOK_ENDOFTEXT;
}

// ---------------------------------------------------------------------------------------------
// parsing

void harmony_parser_init(HarmonyParser *p) { *p = (HarmonyParser){0}; }

void harmony_parser_free(HarmonyParser *p) { buf_free(&p->header); }

// Copies the word after key in header (up to a space or a special token) into out.
static void header_field(const char *header, const char *key, char *out, size_t out_size) {
  out[0] = '\0';
  const char *at = strstr(header, key);
  if (!at) return;
  at += strlen(key);
  size_t n = strcspn(at, " <");
  snprintf(out, out_size, "%.*s", (int)n, at);
}

HarmonyEventKind harmony_parser_push(HarmonyParser *p, const Tokenizer *t, uint32_t id,
                                     Buf *content) {
  if (p->in_content) {
    if (id == TOK_END || id == TOK_RETURN || id == TOK_CALL) {
      stream_decoder_flush(&p->decoder, content);
      p->in_content = false;
      buf_clear(&p->header);
      return id == TOK_END ? HARMONY_EVENT_MESSAGE_END : HARMONY_EVENT_STOP;
    }
    size_t before = content->len;
    stream_decoder_push(&p->decoder, t, id, content);
    return content->len > before ? HARMONY_EVENT_CONTENT : HARMONY_EVENT_NONE;
  }
  if (id == TOK_RETURN || id == TOK_CALL) return HARMONY_EVENT_STOP;
  if (id == TOK_START) {  // a new message: its header follows
    buf_clear(&p->header);
    return HARMONY_EVENT_NONE;
  }
  if (id == TOK_MESSAGE) {
    if (!p->header.data) buf_append(&p->header, "", 0);
    header_field(p->header.data, "<|channel|>", p->channel, sizeof p->channel);
    header_field(p->header.data, " to=", p->recipient, sizeof p->recipient);
    p->in_content = true;
    p->decoder = (StreamDecoder){0};
    return HARMONY_EVENT_NONE;
  }
  size_t len;
  const uint8_t *bytes = tok_id_bytes(t, id, &len);
  if (bytes) buf_append(&p->header, bytes, len);
  return HARMONY_EVENT_NONE;
}
