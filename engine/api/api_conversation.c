// api_conversation.c: the conversation list, vLLM's preamble and its analysis dropping. Must not
// read request JSON (api_chat.c and api_responses_request.c map requests onto it).
#include "api/api_conversation.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/check.h"

static char *dup_or_null(const char *s) { return s ? xstrdup(s) : NULL; }

void api_conv_add(ApiConversation *c, const char *role, const char *channel, const char *recipient,
                  const char *content_type, const char *content) {
  if (c->len == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 8;
    c->items = xrealloc(c->items, c->cap * sizeof *c->items);
  }
  c->items[c->len++] = (HarmonyMessage){.role = xstrdup(role),
                                        .channel = dup_or_null(channel),
                                        .recipient = dup_or_null(recipient),
                                        .content_type = dup_or_null(content_type),
                                        .content = xstrdup(content ? content : "")};
}

void api_conv_free(ApiConversation *c) {
  for (size_t i = 0; i < c->len; i++) {
    HarmonyMessage *m = &c->items[i];
    free((char *)m->role);
    free((char *)m->channel);
    free((char *)m->recipient);
    free((char *)m->content_type);
    free((char *)m->content);
  }
  free(c->items);
  *c = (ApiConversation){0};
}

static bool is_channel(const HarmonyMessage *m, const char *channel) {
  return m->channel && strcmp(m->channel, channel) == 0;
}

// Today's local date as "YYYY-MM-DD" (what vLLM puts in the system message).
static void today(char out[11]) {
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(out, 11, "%Y-%m-%d", &tm);
}

void api_conv_render(const ApiConversation *c, const ApiPreamble *p, const Tokenizer *t,
                     TokenIds *out) {
  bool tools = p->tools && p->tools->num_items > 0;
  char date[11];
  if (!p->current_date) today(date);
  HarmonySystemOptions sys = {.current_date = p->current_date ? p->current_date : date,
                              .reasoning_effort = p->reasoning_effort,
                              .without_commentary = !tools,
                              .has_function_tools = tools};
  Buf system = {0}, developer = {0};
  harmony_system_content(&sys, &system);
  api_tools_developer_text(p->instructions, p->tools, &developer);
  HarmonyMessage *msgs = xcalloc(c->len + 2, sizeof *msgs);
  size_t n = 0;
  msgs[n++] = (HarmonyMessage){.role = "system", .content = system.data};
  if (developer.len) msgs[n++] = (HarmonyMessage){.role = "developer", .content = developer.data};
  size_t last_final = 0;  // index + 1 of the last assistant final message, 0: none
  for (size_t i = 0; i < c->len; i++)
    if (strcmp(c->items[i].role, "assistant") == 0 && is_channel(&c->items[i], "final"))
      last_final = i + 1;
  for (size_t i = 0; i < c->len; i++)
    if (!(i + 1 < last_final && is_channel(&c->items[i], "analysis"))) msgs[n++] = c->items[i];
  harmony_render_prompt(t, msgs, n, NULL, out);
  free(msgs);
  buf_free(&system);
  buf_free(&developer);
}
