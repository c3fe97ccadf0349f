// api_output.h: the answer to one request, written from its token events: streamed as OpenAI
// SSE chunks (a role chunk first for chat, then one chunk per generated token, the last with its
// finish_reason, the usage chunk when asked, "data: [DONE]"), or built whole once finished.
// Text is detokenized incrementally and UTF-8-safe; special tokens never show as text; for chat,
// a HarmonyParser splits the output: the analysis channel goes to reasoning_content, a message to
// functions.NAME becomes a tool call (api_tool_calls.h), every other channel goes to content (as
// vLLM does for GPT-OSS). /v1/responses answers are written by api_responses_output.h instead.
// Knows nothing of threads or sockets.
#ifndef GE_API_API_OUTPUT_H
#define GE_API_API_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "api/api_tool_calls.h"
#include "core/engine.h"
#include "text/harmony.h"
#include "text/stream_decoder.h"
#include "text/tokenizer.h"

typedef struct {
  bool chat;            // chat.completion(.chunk), else text_completion
  bool stream;          // SSE chunks, else one JSON body at the end
  bool include_usage;   // streams only: a usage chunk before [DONE]
  bool return_token_ids;  // each choice also lists its generated ids (vLLM's "token_ids")
  const struct ApiResponsesInfo *responses;  // non-NULL: a /v1/responses answer (copied)
  uint64_t request_id;  // names the answer: "chatcmpl-<id>" / "cmpl-<id>"
  int64_t created;      // unix seconds
  const char *model;    // the served model name
  const Tokenizer *t;
} ApiOutputInfo;

typedef struct {
  ApiOutputInfo info;
  Buf prefix;              // streams: every chunk's JSON up to and including "choices":
  HarmonyParser parser;    // chat
  StreamDecoder decoder;   // completions
  Buf delta;               // the text the current event adds
  Buf content, reasoning;  // whole answers: the text so far
  TokenIds output_ids;     // whole answers with return_token_ids: the ids so far
  bool sent_role;
  ApiToolCalls calls;                    // chat
  struct ApiResponsesOutput *responses;  // /v1/responses answers (api_responses_output.h)
} ApiOutput;

void api_output_init(ApiOutput *o, const ApiOutputInfo *info);
void api_output_free(ApiOutput *o);

// Appends what ev adds to out: a stream's SSE bytes (an aborted stream ends with an error event
// and [DONE]); for a whole answer, nothing until the last event, then the body. Returns the HTTP
// status of a whole answer: 200, or 503 when the request was aborted.
unsigned api_output_event(ApiOutput *o, const TokenEvent *ev, Buf *out);

// s[0..n) as a JSON string, quotes included (valid UTF-8 passes through unescaped), appended to
// out without allocating once out has grown.
void api_output_json_string(Buf *out, const char *s, size_t n);

#endif
