// api_responses_output.h: a /v1/responses answer written from its token events, as vLLM writes
// gpt-oss's: harmony messages become output items (analysis and commentary without a recipient:
// a "reasoning" item with one reasoning_text part; final: a "message" with one output_text
// part; to=functions.NAME: a "function_call" with call_id, name, arguments). Whole answers are
// one Response object (status "completed", or "incomplete" with incomplete_details.reason
// "max_output_tokens"; usage with input/output tokens and reasoning tokens). Streams are SSE
// events ("event: TYPE\ndata: JSON"), each with its sequence_number, in vLLM's order:
// response.created, response.in_progress, then per item output_item.added, content_part.added,
// the *.delta events, the *.done events, content_part.done, output_item.done, and last
// response.completed. Formats JSON only; no threads, no sockets.
#ifndef GE_API_API_RESPONSES_OUTPUT_H
#define GE_API_API_RESPONSES_OUTPUT_H

#include <cjson/cJSON.h>

#include "api/api_output.h"

// What the request adds to the Response object: its echoed members (instructions, tools,
// tool_choice, temperature, ...), as a JSON object copied by api_responses_output_new.
typedef struct ApiResponsesInfo {
  cJSON *echo;
} ApiResponsesInfo;

typedef struct ApiResponsesOutput ApiResponsesOutput;

ApiResponsesOutput *api_responses_output_new(const ApiResponsesInfo *ri, const ApiOutputInfo *info,
                                             uint64_t seed);
void api_responses_output_free(ApiResponsesOutput *o);  // NULL is fine

// Appends what ev adds to out (see api_output_event); returns the whole answer's HTTP status.
unsigned api_responses_output_event(ApiResponsesOutput *o, const TokenEvent *ev, Buf *out);

#endif
