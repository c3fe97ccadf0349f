// api_latency.h: the request histograms /metrics shows under vLLM's names, measured at the API:
// a request's submit, each of its token events as the dispatcher receives it, and its last
// event. Time to first token, the gaps between tokens, end to end and decode time (first to
// last token), and per finished request its prompt and generated tokens and max_tokens. The
// dispatcher records (api_latency_event), /metrics reads a copy (api_latency_read); one mutex,
// no allocation. Knows nothing of HTTP or of the text format (api_metrics.c).
#ifndef GE_API_API_LATENCY_H
#define GE_API_API_LATENCY_H

#include <pthread.h>
#include <stdint.h>

#include "core/engine.h"

enum { API_HIST_MAX_BOUNDS = 32 };

// A Prometheus histogram: bins[i] counts the observations v with bounds[i-1] < v <= bounds[i]
// (le is inclusive), bins[num_bounds] those above every bound.
typedef struct {
  double bounds[API_HIST_MAX_BOUNDS];  // ascending
  int num_bounds;
  uint64_t bins[API_HIST_MAX_BOUNDS + 1];
  uint64_t count;
  double sum;
} ApiHistogram;

// bounds[n] (n <= API_HIST_MAX_BOUNDS, ascending); no observations.
void api_histogram_init(ApiHistogram *h, const double *bounds, int n);
// vLLM's build_1_2_5_buckets(max_value): 1, 2, 5, 10, 20, 50, ... up to max_value.
void api_histogram_init_125(ApiHistogram *h, int max_value);
void api_histogram_observe(ApiHistogram *h, double v);

typedef enum {
  API_LAT_TTFT,               // vllm:time_to_first_token_seconds
  API_LAT_ITL,                // vllm:inter_token_latency_seconds (and time_per_output_token)
  API_LAT_E2E,                // vllm:e2e_request_latency_seconds
  API_LAT_DECODE,             // vllm:request_decode_time_seconds
  API_LAT_PROMPT_TOKENS,      // vllm:request_prompt_tokens
  API_LAT_GENERATION_TOKENS,  // vllm:request_generation_tokens
  API_LAT_MAX_TOKENS,         // vllm:request_params_max_tokens
  API_LAT_NUM
} ApiLatencyKind;

typedef struct {
  ApiHistogram hist[API_LAT_NUM];
  uint64_t num_finished[3];  // vllm:request_success by finished_reason: stop, length, abort
} ApiLatencyStats;

typedef struct {
  pthread_mutex_t mu;
  ApiLatencyStats st;  // under mu
} ApiLatency;

// One request's times, kept in its stream (the dispatcher's alone).
typedef struct {
  int64_t submit_ns, first_token_ns, last_token_ns;  // 0: not yet
  int max_tokens;
} ApiLatencyTrack;

// vLLM's buckets; the token-count histograms go up to max_model_len.
void api_latency_init(ApiLatency *l, int max_model_len);
void api_latency_free(ApiLatency *l);

// The request was submitted at now_ns with this max_tokens.
void api_latency_submitted(ApiLatencyTrack *t, int max_tokens, int64_t now_ns);
// One of its events arrived at now_ns. A token observes the time to first token or the gap
// since the previous token; the last event observes the per-request histograms and counts the
// finish reason. An aborted request (the client left, or the server is stopping) counts only
// as request_success{finished_reason="abort"}: vLLM records no latency for it either.
void api_latency_event(ApiLatency *l, ApiLatencyTrack *t, const TokenEvent *ev, int64_t now_ns);

// A consistent copy for /metrics.
void api_latency_read(ApiLatency *l, ApiLatencyStats *out);

#endif
