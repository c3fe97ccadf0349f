// api_chat.h: OpenAI chat messages -> the harmony prompt GPT-OSS expects, as vLLM builds it
// (api_conversation.h: system message with the date and reasoning effort, a developer message
// with the instructions and function tools). The mapping (vLLM's
// parse_chat_inputs_to_harmony_messages): a leading "system" or "developer" message becomes the
// developer message's "# Instructions"; a later one a developer message of its own; "user" stays
// user; an assistant's "reasoning" (or "reasoning_content") goes on the analysis channel, its
// content on final, or, with "tool_calls", on commentary followed by one call message per tool
// call (to=functions.NAME, content type json, ended by <|call|>); a "tool" message is the output
// of the call its tool_call_id names (functions.NAME to=assistant on commentary). Content is a
// string or a list of {"type": "text"} parts, always encoded as plain text: "<|start|>" typed
// by a user is never a control token.
#ifndef GE_API_API_CHAT_H
#define GE_API_API_CHAT_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "api/api_error.h"
#include "api/api_tools.h"
#include "text/token_ids.h"
#include "text/tokenizer.h"

typedef struct {
  const char *reasoning_effort;  // "low", "medium", "high" or NULL (medium)
  const char *current_date;      // "YYYY-MM-DD" for the system message; NULL: today's
  const ApiTools *tools;         // the function tools to render (NULL: none)
} ApiChatOptions;

// Appends the prompt ids for messages (the request's "messages" value) to out. False with err
// (400) for a malformed message, an unknown role, a bad effort or a tool message whose
// tool_call_id names no earlier tool call.
bool api_chat_render(const cJSON *messages, const ApiChatOptions *o, const Tokenizer *t,
                     TokenIds *out, ApiError *err);

#endif
