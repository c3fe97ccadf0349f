// api_metrics.h: GET /metrics in Prometheus text format from an EngineStats snapshot, under
// vLLM's metric names where vLLM has one (so scrapers written for vLLM read it), each labelled
// with model_name. Pure formatting: no locks, no engine calls.
#ifndef GE_API_API_METRICS_H
#define GE_API_API_METRICS_H

#include "common/buf.h"
#include "core/engine.h"

// What the HTTP front end itself counts.
typedef struct {
  uint64_t num_connections_cut;  // cut by the guard: a request too slow to arrive, or idle
  uint64_t num_hangups;          // clients that left while their answer was pending
} ApiHttpStats;

// Appends the exposition text for st and http to out.
void api_metrics_text(const EngineStats *st, const ApiHttpStats *http, const char *model, Buf *out);

#endif
