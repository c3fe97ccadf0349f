// mock_server.h: an OpenAI-compatible streaming server with deterministic, configurable timing
// and faults, for the harness's own tests (started in-process on an ephemeral port) and for
// `gptoss-bench mock-server` (measuring the client's ceiling). Serves GET /health, GET
// /v1/models, GET /mock/stats, POST /v1/completions and /v1/chat/completions (stream=true
// only). Never exits the process on anything a client sends.
#ifndef GB_BENCH_MOCK_SERVER_H
#define GB_BENCH_MOCK_SERVER_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  const char *host;            // bind address, numeric or a name (default 127.0.0.1)
  uint16_t port;               // 0: ephemeral (mock_server_port tells which)
  const char *model;           // the id /v1/models lists and chunks carry
  int64_t ttft_ns;             // request body received -> first event
  int64_t itl_ns;              // between consecutive events
  uint32_t output_len;         // tokens per answer; 0: the request's max_tokens (16 if absent)
  uint32_t tokens_per_event;   // tokens carried by one event (>= 1)
  double error_rate;           // fraction of completion requests answered with error_status
  int error_status;            // HTTP status of those answers
  int64_t cut_after;           // < 0: never; else close each stream after this many tokens
  uint32_t error_event_every;  // 0: never; else every Nth completion request's stream ends
                               // with an error event (llama-server's {"error": {...}})
  uint32_t error_event_after;  // ... once this many tokens were sent
  uint32_t unfinished_every;   // 0: never; else every Nth stream ends cleanly without a
                               // finish_reason or [DONE]
  uint64_t seed;               // picks which requests get errors (by arrival number)
  uint32_t num_threads;        // HTTP worker threads (each with its own epoll)
  unsigned receive_timeout_s;  // a connection that moves no byte this long (a stalled request,
                               // an idle keep-alive one, a client not reading) is closed; a
                               // stream waiting for its next event is not; 0: never
} MockOptions;

typedef struct {
  uint64_t num_requests;      // completion requests received (ids are numbered by it)
  uint64_t num_errors;        // answered with error_status
  uint64_t num_cut;           // streams cut on purpose
  uint64_t num_error_events;  // streams ended by an error event
  uint32_t in_flight;         // completion requests between arrival and their last byte
  uint32_t max_in_flight;     // the most at once since the start
} MockStats;

typedef struct MockServer MockServer;

// Defaults: 127.0.0.1, port 0, model "openai/gpt-oss-120b", TTFT 50 ms, ITL 10 ms, output from
// max_tokens, 1 token per event, no errors (status 500 when enabled), no cuts, no error events
// (after 2 tokens when enabled), seed 0, 1 thread, receive timeout 10 s (the engine's default).
void mock_options_default(MockOptions *o);

// Starts serving in background threads. NULL with a message if the options are invalid or the
// address cannot be bound.
MockServer *mock_server_start(const MockOptions *o, char *err, size_t err_size);
uint16_t mock_server_port(const MockServer *s);
void mock_server_stats(const MockServer *s, MockStats *out);
// Ends every stream still open (they are cut) and frees the server.
void mock_server_stop(MockServer *s);

#endif
