// api_chat.h: OpenAI chat messages -> the harmony prompt GPT-OSS expects. The mapping (as the
// gpt-oss chat template does it): harmony's default system message first (no date, so prompts
// are reproducible); each "system" or "developer" message becomes a developer message
// "# Instructions\n\n<text>"; "user" stays user; "assistant" content goes on the final channel
// (earlier reasoning is dropped, as the template does); then "<|start|>assistant". Tool calls and
// tool messages are not supported (400). Content is a string or a list of {"type": "text"} parts,
// always encoded as plain text: "<|start|>" typed by a user is never a control token.
#ifndef GE_API_API_CHAT_H
#define GE_API_API_CHAT_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "api/api_error.h"
#include "text/token_ids.h"
#include "text/tokenizer.h"

// Appends the prompt ids for messages (the request's "messages" value) to out.
// reasoning_effort: "low", "medium", "high" or NULL (medium). False with err (400).
bool api_chat_render(const cJSON *messages, const char *reasoning_effort, const Tokenizer *t,
                     TokenIds *out, ApiError *err);

#endif
