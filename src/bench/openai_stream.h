// openai_stream.h: reads one streamed OpenAI completions / chat answer (SSE bytes with their
// arrival times) into a RequestResult with vLLM v0.10.2's rules (spec/vllm-bench.md 3.3-3.4):
// TTFT at the first event with a non-empty "choices", one ITL gap per later such event, E2EL
// at the last such event (for chat, at the last event of any kind), output_tokens from the
// usage chunk; and ours: an error event ({"error": ...} or "object": "error") fails the stream,
// and so does a stream that ends without [DONE] and without any finish_reason.
// Knows nothing of sockets or HTTP statuses; allocates nothing per event once its buffers have
// grown.
#ifndef GB_BENCH_OPENAI_STREAM_H
#define GB_BENCH_OPENAI_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/bench_types.h"
#include "bench/http_client.h"
#include "bench/json_scratch.h"
#include "bench/loghist.h"
#include "bench/sse.h"
#include "common/buf.h"

// Reusable across requests: zero-initialise once, oai_stream_begin per request.
typedef struct {
  EndpointType endpoint;
  RequestResult *out;   // where ttft_ns, itl_ns, output_tokens go as events arrive
  size_t itl_cap;       // capacity of out->itl_ns
  int64_t last_ns;      // vLLM's most_recent_timestamp
  bool got_choices;     // an event with non-empty choices has arrived
  bool got_end;         // [DONE] or a choice with a finish_reason has arrived
  size_t num_events;    // data events read
  SseParser sse;
  JsonScratch *json;    // the reading thread's parse arena (shared by its streams)
  Buf text;             // generated text so far
  char *error;          // why the stream failed (malformed JSON, an error event), or NULL
  int64_t stamp_ns;     // the server's ": t=<ns>" stamp awaiting its event, or 0
  LogHist *stamp_lags;  // the reading thread's: receive time - stamp of each stamped event
} OaiStream;

// Starts reading the answer to a request sent at out->start_ns; expected_events sizes the ITL
// array up front (max_tokens is a good guess). json: the calling thread's JSON arena, used by
// every stream that thread reads; stamp_lags: where that thread counts the receive lag of events
// that carry a server send stamp.
void oai_stream_begin(OaiStream *s, EndpointType endpoint, RequestResult *out,
                      size_t expected_events, JsonScratch *json, LogHist *stamp_lags);

// Feeds bytes received at now_ns. False when the stream is malformed or the server sent an error
// event (s->error says why: the event's message, code and type); the caller should stop reading
// it.
bool oai_stream_feed(OaiStream *s, const char *bytes, size_t n, int64_t now_ns);

// The body ended at now_ns (complete or not): reads a last unterminated event when complete,
// then sets out->latency_ns and out->generated_text, and out->success / failure / error by the
// stream rules alone (a malformed or error event fails it, so does an end without [DONE] or a
// finish_reason; else completions need at least one choices event, chat always succeeds). The caller overrides them for transport failures and
// HTTP statuses.
void oai_stream_end(OaiStream *s, bool complete, int64_t now_ns);

void oai_stream_free(OaiStream *s);

#endif
