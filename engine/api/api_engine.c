// api_engine.c: binds the real engine.h functions into an ApiEngine. Kept apart from the server
// so that tests driving the API with an engine double never link the engine.
#include "api/api.h"

static uint64_t submit(void *e, const EngineRequestParams *p, char *err, size_t err_size) {
  return engine_submit(e, p, err, err_size);
}

static void abort_request(void *e, uint64_t request_id) { engine_abort(e, request_id); }

static size_t poll_events(void *e, TokenEvent *out, size_t max_events, int64_t timeout_ns) {
  return engine_poll_events(e, out, max_events, timeout_ns);
}

static void stats(void *e, EngineStats *out) { engine_stats(e, out); }

ApiEngine api_engine_of(Engine *e) {
  return (ApiEngine){.engine = e,
                     .submit = submit,
                     .abort = abort_request,
                     .poll_events = poll_events,
                     .stats = stats};
}
