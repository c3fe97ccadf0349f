// mock_stream.h: what mock-server streams for one completions / chat request, and when: the
// deterministic plan (first event at TTFT, then one event every ITL, tokens_per_event tokens
// each, the usage chunk and "data: [DONE]" with the last one, or a cut after N tokens, or an
// error event after N tokens, or a clean end without finish_reason or [DONE]) and the bytes of each event in OpenAI's chunk format, every data
// line preceded by a ": t=<ns>" send stamp. Knows nothing of sockets or threads.
#ifndef GB_BENCH_MOCK_STREAM_H
#define GB_BENCH_MOCK_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"

typedef enum {
  MOCK_STREAMING,  // events still to come
  MOCK_DONE,       // everything produced: [DONE], or the error event that ends the stream
  MOCK_CUT,        // to be cut now: close the connection without ending the stream
} MockPhase;

typedef struct {
  bool chat;               // chat.completion.chunk (with a role chunk first) or text_completion
  bool include_usage;      // stream_options.include_usage: a usage chunk before [DONE]
  uint64_t number;         // the request's number at the server (ids, words)
  uint32_t num_tokens;     // tokens to generate
  uint32_t prompt_tokens;  // reported in usage
  uint32_t tokens_per_event;
  int64_t cut_after;       // < 0: never; else cut once this many tokens were sent
  bool error_event;        // end with llama-server's error event instead of usage and [DONE]
  uint32_t error_after;    // ... once this many tokens were sent (or at the end, if fewer)
  bool unfinished;         // end the body cleanly after the last token, but with no
                           // finish_reason, usage or [DONE] (a server that gave up)
  int64_t first_due_ns;    // when the first event is due (arrival + TTFT)
  int64_t itl_ns;          // between events
  const char *model_json;  // the model name as a JSON string, quotes included
  int64_t created;         // unix seconds for "created"
} MockStreamPlan;

typedef struct {
  MockStreamPlan plan;
  MockPhase phase;
  uint32_t num_events;  // token events produced
  uint32_t tokens_sent;
  Buf prefix;  // every chunk's JSON up to "choices":
} MockStream;

void mock_stream_init(MockStream *m, const MockStreamPlan *plan);
void mock_stream_free(MockStream *m);

// When the next event is due (meaningful while phase is MOCK_STREAMING).
int64_t mock_stream_next_due(const MockStream *m);

// Appends to out every event due by now_ns, stamping each with the clock as it is written, and
// moves phase on (to MOCK_DONE after [DONE] or the error event, to MOCK_CUT when the cut point
// is reached).
void mock_stream_produce(MockStream *m, int64_t now_ns, Buf *out);

#endif
