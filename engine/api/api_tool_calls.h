// api_tool_calls.h: chat answers' tool calls, read from harmony output as vLLM reads gpt-oss's:
// a message whose recipient is "functions.NAME" is a call of NAME with the message's content as
// its arguments (never content). Streams get vLLM's deltas: the first for a call carries its
// index, id ("chatcmpl-tool-<hex>"), type "function", function.name and empty arguments; the
// next ones function.arguments pieces. Whole answers get message.tool_calls. A turn with calls
// that stopped (<|call|>) finishes with "tool_calls". Formats JSON; no threads, no sockets.
#ifndef GE_API_API_TOOL_CALLS_H
#define GE_API_API_TOOL_CALLS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "text/harmony.h"

typedef struct {
  char id_prefix[40];  // "chatcmpl-tool-<16 hex>"; call k is id_prefix then k
  int num_calls;       // calls begun so far
  bool in_call;        // the current message is a call
  cJSON *calls;        // whole answers: [{id, type, function: {name, arguments}}]
  Buf args;            // whole answers: the current call's arguments so far
} ApiToolCalls;

void api_tool_calls_init(ApiToolCalls *c, uint64_t seed, bool whole);
void api_tool_calls_free(ApiToolCalls *c);

// After each parser push, with the text the event added: true when that text is a call's
// arguments (whole answers keep it); *started when the event began a call (the parser just read
// its header). A call ends with its message (kind) or with the answer (last).
bool api_tool_calls_track(ApiToolCalls *c, const HarmonyParser *p, HarmonyEventKind kind, bool last,
                          const Buf *delta, bool *started);

// Stream deltas: `"tool_calls":[...]` for the call just begun (with its name from p), or for an
// arguments piece of the current call.
void api_tool_calls_start_delta(const ApiToolCalls *c, const HarmonyParser *p, Buf *out);
void api_tool_calls_args_delta(const ApiToolCalls *c, const Buf *delta, Buf *out);

// "tool_calls" when the turn stopped after calls, else fallback.
const char *api_tool_calls_finish(const ApiToolCalls *c, bool stopped, const char *fallback);

// Whole answers: a copy of the calls array into message as "tool_calls" (an empty list when
// none); c keeps its own (api_tool_calls_free frees it).
void api_tool_calls_add_to(const ApiToolCalls *c, cJSON *message);

// The function name of the parser's current recipient ("functions.NAME"), or NULL.
const char *api_tool_calls_name(const HarmonyParser *p);

#endif
