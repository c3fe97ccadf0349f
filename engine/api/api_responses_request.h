// api_responses_request.h: a POST /v1/responses body (the stateless, non-background subset of
// vLLM's ResponsesRequest) -> the engine request and the Response object's echoed members.
// input: a string (one user message) or a list of items: messages (user, assistant, system,
// developer; content a string or input_text/output_text parts), function_call,
// function_call_output (its call_id must name an earlier function_call) and reasoning
// (reasoning_text content). Also instructions, tools (function tools; built-in ones refused),
// tool_choice ("auto" only, as vLLM's harmony path), parallel_tool_calls, max_output_tokens,
// temperature, top_p, reasoning.effort, stream, metadata, user, text.format "text". Refused with
// 400: what needs stored state or a tool server (previous_response_id, background, store: true,
// include, built-in tools), json_schema/json_object text formats, reasoning summaries, and any
// other field. Nothing here talks to the engine or the network.
#ifndef GE_API_API_RESPONSES_REQUEST_H
#define GE_API_API_RESPONSES_REQUEST_H

#include "api/api_request.h"
#include "api/api_responses_output.h"

// Fills r (stream, prompt, params) and info->echo (owned by the caller: cJSON_Delete). False
// with err (r and info then hold nothing).
bool api_responses_parse(ApiRequest *r, ApiResponsesInfo *info, const ApiRequestContext *c,
                         const char *body, size_t len, ApiError *err);

#endif
