// api_output.h: the answer to one request, written from its token events: streamed as OpenAI
// SSE chunks (a role chunk first for chat, then one chunk per generated token, the last with its
// finish_reason, the usage chunk when asked, "data: [DONE]"), or built whole once finished.
// Text is detokenized incrementally and UTF-8-safe; special tokens never show as text; for chat,
// a HarmonyParser splits the output: the analysis channel goes to reasoning_content, a message to
// functions.NAME becomes a tool call (api_tool_calls.h), every other channel goes to content (as
// vLLM does for GPT-OSS). Logprobs, when asked for, are api_logprobs.c's. Stop strings
// (api_stop.c) end a choice early: FINISH_STOP, vLLM's stop_reason the string; the caller aborts
// its engine request. /v1/responses answers are written by api_responses_output.h instead.
// Knows nothing of threads or sockets.
#ifndef GE_API_API_OUTPUT_H
#define GE_API_API_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>

#include "api/api_logprobs.h"
#include "api/api_stop.h"
#include "api/api_tool_calls.h"
#include "common/buf.h"
#include "core/engine.h"
#include "text/harmony.h"
#include "text/stream_decoder.h"
#include "text/tokenizer.h"

// The choices of one answer at most (n times the number of prompts).
enum { API_MAX_CHOICES = 128 };

typedef struct {
  bool chat;            // chat.completion(.chunk), else text_completion
  bool stream;          // SSE chunks, else one JSON body at the end
  bool include_usage;   // streams only: a usage chunk before [DONE]
  bool continuous_usage;  // streams with include_usage: every chunk carries usage so far
  bool return_token_ids;  // each choice also lists its generated ids (vLLM's "token_ids")
  const struct ApiResponsesInfo *responses;  // non-NULL: a /v1/responses answer (copied)
  bool logprobs;          // each choice carries "logprobs" (api_logprobs.c), else null
  int num_top_logprobs;   // chat: top_logprobs; completions: logprobs
  const char *const *stop;  // [num_stop] stop strings (copied by api_output_init)
  size_t num_stop;
  bool include_stop_str_in_output;
  const uint32_t *echo_ids;  // [num_echo_ids] completions' echo: the prompt, whose text the
  size_t num_echo_ids;       // choice's text starts with (decoded by api_output_init)
  int index;            // the choice's index in the answer
  bool one_of_many;     // one choice of several (n > 1, a list of prompts): its last event
                        // writes no usage chunk, [DONE] or body; api_fanout.c does, once
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
  ApiLogprobs logprobs;    // with info.logprobs
  bool sent_role;
  ApiStop stop;            // the stop strings, on completions' text and chat's content
  Buf stop_text;
  Buf echo;                // the prompt's text, until the first event takes it
  bool done;               // the last event came, or a stop string matched: nothing more
  FinishReason finish;     // why it is done
  uint32_t last_token_id;  // the latest token taken
  ApiToolCalls calls;                    // chat
  struct ApiResponsesOutput *responses;  // /v1/responses answers (api_responses_output.h)
} ApiOutput;

void api_output_init(ApiOutput *o, const ApiOutputInfo *info);
void api_output_free(ApiOutput *o);

// Appends what ev adds to out: a stream's SSE bytes (an aborted stream ends with an error event
// and [DONE]); for a whole answer, nothing until the last event, then the body (a choice of
// several: nothing, see api_output_whole). Returns the HTTP status of a whole answer: 200, or
// 503 when the request was aborted.
unsigned api_output_event(ApiOutput *o, const TokenEvent *ev, Buf *out);

// A stream's end: the usage chunk when asked for, then [DONE].
void api_output_stream_end(const ApiOutput *o, uint64_t num_prompt_tokens,
                           uint64_t num_output_tokens, Buf *out);

// The body of a whole answer whose choices [num_choices] (in index order) all had their last
// event; usage as given.
void api_output_whole(const ApiOutput *const *choices, size_t num_choices,
                      uint64_t num_prompt_tokens, uint64_t num_output_tokens, Buf *out);

#endif
