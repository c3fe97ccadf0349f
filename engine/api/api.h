// api.h: the engine's OpenAI-compatible HTTP front end (libmicrohttpd): POST /v1/chat/completions
// and /v1/completions (streamed as SSE or answered whole), POST /v1/responses (stateless),
// GET /v1/models, /v1/models/{id}, /health, /metrics (vLLM's names), and vLLM's GET /version,
// POST /tokenize and /detokenize.
// It reaches the engine only through an ApiEngine: the engine.h functions the serve command
// binds with api_engine_of, or a test's double. Never exits the process on client input: every
// bad request gets an OpenAI-style 4xx error body.
#ifndef GE_API_API_H
#define GE_API_API_H

#include <stddef.h>
#include <stdint.h>

#include "core/engine.h"
#include "text/tokenizer.h"

typedef struct {
  const char *host;               // bind address (default 127.0.0.1: loopback only)
  uint16_t port;                  // 0: an ephemeral port (api_port tells which)
  const char *served_model_name;  // the model id /v1/models lists and requests must name
  const char *api_key;            // NULL: none; else /v1/* need "Authorization: Bearer <key>"
  size_t max_body_bytes;          // larger request bodies get 413 (default 8 MiB)
  int max_model_len;              // prompt + output tokens at most; a missing max_tokens means
                                  // max_model_len - prompt tokens
  int receive_timeout_s;          // a request (line, headers, body) must arrive within this
                                  // plus 1 s per 500 body bytes; also the keep-alive timeout
                                  // (default 10; 0: none)
  unsigned idle_timeout_s;        // a connection that moves no byte this long is closed
                                  // (default 60; 0: never)
  const char *current_date;       // the harmony system message's "Current date" (YYYY-MM-DD);
                                  // NULL: today's local date at each request (as vLLM)
} ApiOptions;

// The engine as the API uses it: engine.h's thread-safe functions on one engine object.
typedef struct {
  void *engine;
  uint64_t (*submit)(void *engine, const EngineRequestParams *p, char *err, size_t err_size);
  void (*abort)(void *engine, uint64_t request_id);
  size_t (*poll_events)(void *engine, TokenEvent *out, size_t max_events, int64_t timeout_ns);
  void (*stats)(void *engine, EngineStats *out);
} ApiEngine;

// engine_submit, engine_abort, engine_poll_events and engine_stats on e.
ApiEngine api_engine_of(Engine *e);

typedef struct ApiServer ApiServer;

// host 127.0.0.1, port 8000, no model name, no key, 8 MiB bodies, max_model_len 0 (must be set),
// receive timeout 10 s, idle timeout 60 s.
void api_options_default(ApiOptions *o);

// Starts serving: the HTTP thread and the dispatcher thread, which becomes the only caller of
// engine->poll_events. *engine is copied; the engine it points to and t (o200k_harmony) must
// outlive the server. NULL with a message when the options are invalid or the address cannot be
// bound.
ApiServer *api_start(const ApiOptions *o, const ApiEngine *engine, const Tokenizer *t, char *err,
                     size_t err_size);
uint16_t api_port(const ApiServer *s);

// Graceful stop (call it on SIGTERM/SIGINT, not from a signal handler): stops accepting
// connections, aborts every request in flight (streams end with an error event and [DONE],
// waiting requests get 503), waits a bounded time for their answers to go out, then frees the
// server. The engine must still be running; stop it afterwards.
void api_stop(ApiServer *s);

#endif
