// api_dispatch.h: where HTTP connections and the engine meet. One dispatcher thread is the only
// caller of poll_events: it routes each TokenEvent by request id to its ApiStream, turns it into
// bytes (api_output), times it (api_latency) and resumes the suspended connection waiting for
// them. Connection threads
// only copy bytes out or suspend. A stream lives until both sides are done with it: the engine
// (its last event was seen) and the connection (closed); a connection that closes first aborts
// its request, which frees its KV blocks. Must not call the engine with its lock held, except
// submit, which only queues.
#ifndef GE_API_API_DISPATCH_H
#define GE_API_API_DISPATCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "api/api.h"
#include "api/api_error.h"
#include "api/api_latency.h"
#include "api/api_output.h"
#include "api/api_table.h"
#include "common/buf.h"

struct MHD_Connection;

enum { API_MAX_EVENTS = 1024 };

typedef struct {
  uint64_t id;          // the engine's request id
  ApiOutput out;        // the dispatcher's alone
  ApiLatencyTrack lat;  // the dispatcher's alone (set before the request is submitted)
  // under ApiHub.mu:
  struct MHD_Connection *conn;
  Buf bytes;  // answer bytes not handed to MHD yet: [pos, bytes.len)
  size_t pos;
  unsigned status;   // a whole answer's HTTP status
  bool finished;     // the last event's bytes are in
  bool suspended;    // conn is suspended, waiting for bytes
  bool engine_done;  // the dispatcher is done with it
  bool conn_done;    // the connection is done with it
} ApiStream;

typedef struct {
  ApiEngine engine;
  pthread_mutex_t mu;  // guards table, the flags and the ApiStream fields marked so
  ApiTable table;      // id -> ApiStream, for requests whose last event is still to come
  ApiLatency latency;  // the request histograms (own lock; the server inits and frees it)
  bool stopping;       // api_hub_abort_all was called: no more submissions
  bool refusing;       // api_hub_release_all was called: no more suspensions
  atomic_bool exiting;
  pthread_t thread;
  bool started;
  TokenEvent events[API_MAX_EVENTS];  // the dispatcher thread's
  Buf scratch;                        // the dispatcher thread's
} ApiHub;

// Starts the dispatcher thread. False when it cannot be created.
bool api_hub_start(ApiHub *h, const ApiEngine *engine);

// Submits p and registers a stream for it on conn (info.request_id is filled in here). NULL with
// err: 400 with the engine's message when it refuses the request, 503 once stopping.
ApiStream *api_hub_submit(ApiHub *h, const EngineRequestParams *p, ApiOutputInfo info,
                          struct MHD_Connection *conn, ApiError *err);

// A streamed answer's MHD reader: the bytes produced so far, or 0 after suspending conn until
// there are more; MHD's end-of-stream when all was sent, end-with-error when refusing.
ssize_t api_hub_read(ApiHub *h, ApiStream *s, char *buf, size_t max);

// A whole answer: true when it can be queued now (finished, or refusing: then s->finished tells
// which); false after suspending conn until it is finished.
bool api_hub_answer_ready(ApiHub *h, ApiStream *s);

// The connection is done with s (answered, or closed early: then the request is aborted).
void api_hub_close(ApiHub *h, ApiStream *s);

// Refuses further submissions and aborts every request whose last event has not come yet.
void api_hub_abort_all(ApiHub *h);

// Refuses further suspensions and resumes every suspended connection (before stopping MHD).
void api_hub_release_all(ApiHub *h);

// Ends the dispatcher thread. Call after release_all and before MHD is stopped, so that no
// resume can reach a stopped daemon.
void api_hub_stop(ApiHub *h);

// Frees the streams the engine never finished and the hub (after MHD has stopped).
void api_hub_free(ApiHub *h);

#endif
