// api_dispatch.h: where HTTP connections and the engine meet. One dispatcher thread is the only
// caller of poll_events: it routes each TokenEvent by request id to its ApiStream, turns it into
// bytes (api_output), times it (api_latency) and resumes the suspended connection waiting for
// them. An answer of several choices (n > 1, a list of prompts) is several engine requests, each
// routed to its ApiChoice; the answer ends once all have ended (usage summed), or at the first
// abort (all aborted). Connection threads only copy bytes out or suspend. A stream lives until
// both sides are done with it: the engine (every choice's last event was seen) and the
// connection (closed); a connection that closes first aborts its requests, which frees their KV
// blocks. Must not call the engine with its lock held, except
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

typedef struct ApiStream ApiStream;

// One choice of an answer: one engine request.
typedef struct {
  ApiStream *stream;
  uint64_t id;                 // the engine's request id
  ApiOutput out;               // the dispatcher's alone
  ApiLatencyTrack lat;         // the dispatcher's alone (set before the request is submitted)
  uint32_t num_prompt_tokens;  // the dispatcher's: from the last event
  uint32_t num_output_tokens;
  bool engine_done;            // under ApiHub.mu: its last event was seen
} ApiChoice;

// One HTTP request's answer: n choices per prompt (n > 1, completions' lists of prompts) are
// engine requests of their own, fanned in here.
struct ApiStream {
  uint64_t id;  // the first choice's engine id (names the answer)
  ApiChoice *choices;  // [num_choices] by choice index
  int num_choices;
  int n;               // choices per prompt (usage counts each prompt once)
  // the dispatcher's:
  int num_finished;    // choices whose last event was formatted
  bool ended;          // the answer's end is written (every choice finished, or one aborted)
  // under ApiHub.mu:
  int num_live;        // choices whose last event is still to come
  struct MHD_Connection *conn;
  Buf bytes;  // answer bytes not handed to MHD yet: [pos, bytes.len)
  size_t pos;
  unsigned status;   // a whole answer's HTTP status
  bool finished;     // the answer's last bytes are in
  bool suspended;    // conn is suspended, waiting for bytes
  bool engine_done;  // the dispatcher is done with it (num_live == 0)
  bool conn_done;    // the connection is done with it
};

typedef struct {
  ApiEngine engine;
  pthread_mutex_t mu;  // guards table, the flags and the ApiStream fields marked so
  ApiTable table;      // engine id -> ApiChoice, for requests whose last event is still to come
  ApiLatency latency;  // the request histograms, per engine request (own lock; the server
                       // inits and frees it)
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

// Submits params [num_choices] (choice index order; n per prompt) and registers one stream for
// them on conn (info.request_id, index and one_of_many are filled in here; with echo_ids set,
// each choice echoes its own prompt). NULL with err: 400
// with the engine's message when it refuses one (the others are aborted), 503 once stopping.
ApiStream *api_hub_submit(ApiHub *h, const EngineRequestParams *params, int num_choices, int n,
                          ApiOutputInfo info, struct MHD_Connection *conn, ApiError *err);

// Aborts every choice of s whose last event has not come (the client hung up).
void api_hub_abort(ApiHub *h, ApiStream *s);

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
