// api_metrics.h: GET /metrics in Prometheus text format (0.0.4) from an EngineStats snapshot,
// the API's latency histograms and its HTTP counters, under vLLM's names, types, HELP texts,
// labels (model_name, engine="0") and buckets (vLLM v0.10's vllm/v1/metrics/loggers.py), so
// scrapers and Grafana dashboards written for vLLM read it; bucket bounds are written as
// prometheus_client writes them ("1.0", "1e+06"). Pure formatting: no locks, no engine calls.
#ifndef GE_API_API_METRICS_H
#define GE_API_API_METRICS_H

#include "api/api_latency.h"
#include "common/buf.h"
#include "core/engine.h"

// What the HTTP front end itself counts.
typedef struct {
  uint64_t num_connections_cut;  // cut by the guard: a request too slow to arrive, or idle
  uint64_t num_hangups;          // clients that left while their answer was pending
} ApiHttpStats;

// Appends the exposition text to out.
void api_metrics_text(const EngineStats *st, const ApiLatencyStats *lat, const ApiHttpStats *http,
                      const char *model, Buf *out);

// v as Python's prometheus_client writes a float (floatToGoString: repr, with Go's exponent
// from 1e+06 up): "0.001", "1.0", "2560.0", "1e+06", "+Inf". Into out[32].
void api_metrics_float(double v, char out[32]);

#endif
