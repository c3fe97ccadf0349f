// api_conversation.h: a harmony conversation as vLLM builds it for gpt-oss, shared by chat and
// /v1/responses: its system message (model identity, knowledge cutoff, the current date,
// "Reasoning: <effort>", the valid channels: "analysis, final", plus "commentary" and the
// "Calls to these tools ..." line only when function tools are given), a developer message
// when there are instructions or tools (api_tools.h), the request's messages, then
// "<|start|>assistant". Analysis messages before the last assistant final message are dropped
// (vLLM's auto_drop_analysis_messages). Owns copies of every string; renders tokens only.
#ifndef GE_API_API_CONVERSATION_H
#define GE_API_API_CONVERSATION_H

#include "api/api_tools.h"
#include "text/harmony.h"
#include "text/token_ids.h"
#include "text/tokenizer.h"

typedef struct {
  HarmonyMessage *items;  // [len]; every string owned (freed by api_conv_free)
  size_t len, cap;
} ApiConversation;

typedef struct {
  const char *current_date;      // "YYYY-MM-DD"; NULL: today's local date (as vLLM)
  const char *reasoning_effort;  // "low", "medium", "high" or NULL (medium)
  const char *instructions;      // NULL: none
  const ApiTools *tools;         // NULL or empty: none
} ApiPreamble;

// Appends a message; NULL fields stay NULL, the others are copied.
void api_conv_add(ApiConversation *c, const char *role, const char *channel, const char *recipient,
                  const char *content_type, const char *content);

// Appends the whole prompt: preamble, the conversation, "<|start|>assistant".
void api_conv_render(const ApiConversation *c, const ApiPreamble *p, const Tokenizer *t,
                     TokenIds *out);

void api_conv_free(ApiConversation *c);

#endif
