// api_metrics.h: GET /metrics in Prometheus text format from an EngineStats snapshot, under
// vLLM's metric names where vLLM has one (so scrapers written for vLLM read it), each labelled
// with model_name. Pure formatting: no locks, no engine calls.
#ifndef GE_API_API_METRICS_H
#define GE_API_API_METRICS_H

#include "common/buf.h"
#include "core/engine.h"

// Appends the exposition text for st to out.
void api_metrics_text(const EngineStats *st, const char *model, Buf *out);

#endif
