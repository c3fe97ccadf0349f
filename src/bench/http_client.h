// http_client.h: the load generator's HTTP side: sends each BenchRequest to an OpenAI-compatible
// streaming endpoint at its intended time (open loop, with an optional hard concurrency cap),
// times every SSE event on the monotonic clock and fills one RequestResult per request exactly
// as bench_types.h documents (vLLM v0.10.2 semantics, spec/vllm-bench.md sections 2-3). Also the
// helpers the bench command needs before a run: the ready check and the served model's id.
// Never exits: errors come back as false plus a message.
#ifndef GB_BENCH_HTTP_CLIENT_H
#define GB_BENCH_HTTP_CLIENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/bench_types.h"

typedef enum {
  ENDPOINT_COMPLETIONS,  // /v1/completions: "prompt", text in choices[0].text
  ENDPOINT_CHAT,         // /v1/chat/completions: "messages", text in choices[0].delta.content
} EndpointType;

// vLLM's aiohttp session timeout (6 hours), for callers that want its behaviour.
#define CLIENT_VLLM_TIMEOUT_NS (6LL * 3600 * 1000000000)

typedef struct {
  const char *url;  // full API URL (base + endpoint), e.g. http://127.0.0.1:8000/v1/completions
  EndpointType endpoint;
  const char *model;  // the payload's "model"
  // Sampling fields are sent only when has_* is set, except temperature: 0.0 when not given.
  bool has_temperature, has_top_p, has_top_k, has_min_p;
  double temperature, top_p, min_p;
  int top_k;
  int logprobs;                   // completions only; < 0 sends "logprobs": null (vLLM's default)
  bool ignore_eos;                // sends "ignore_eos": true
  const struct cJSON *extra_body;  // a JSON object whose keys are set in every body; NULL: none
  const char *api_key;            // "Authorization: Bearer <api_key>"; NULL sends "Bearer None",
                                  // as vLLM does when OPENAI_API_KEY is unset
  const char *request_id_prefix;  // "x-request-id: <prefix><i>"; NULL: no such header
  const char *const *headers;     // [num_headers] extra "Name: value" header lines
  size_t num_headers;
  uint32_t max_concurrency;     // hard cap on requests in flight; 0: none
  int64_t timeout_ns;           // per request, from its send to its last byte; 0: none
  uint32_t num_threads;         // event-loop threads; 0 or 1: only the calling thread. With T > 1,
                                // request i belongs to thread i % T and each thread gets a share of
                                // max_concurrency (which must then be 0 or >= T)
  bool busy_poll;               // spin on epoll with a zero timeout instead of sleeping in it:
                                // the loop's core stays busy, and an event is seen within
                                // microseconds rather than after the OS wakes the thread (up to
                                // several ms on a shared VM). For timing runs with a core to spare
  atomic_size_t *num_finished;  // if not NULL, incremented as each request finishes (progress)
  const volatile int *cancel;   // if not NULL and set (by a signal handler): no request is sent
                                // any more, the unsent fail at once ("cancelled"), those in
                                // flight run to their end (the caller stops the server); seen
                                // within 100 ms
} ClientOptions;

typedef struct {
  uint32_t peak_in_flight;    // most requests in flight at once, client side
  size_t num_stamped_events;  // events preceded by a server send stamp (": t=<ns>", mock-server)
  int64_t mean_stamp_lag_ns;  // receive time - server send stamp, over those events
  int64_t p50_stamp_lag_ns;   // percentiles within 3.1% (loghist.h)
  int64_t p99_stamp_lag_ns;
  int64_t max_stamp_lag_ns;
} ClientStats;

// "openai" and "vllm" -> completions, "openai-chat" -> chat (vLLM's --endpoint-type names).
bool client_endpoint_from_name(const char *name, EndpointType *out);

// Checks the options before a run (the URL's path matches the endpoint type as vLLM asserts,
// the thread count fits the concurrency cap). False with a message naming the option.
bool client_options_check(const ClientOptions *o, char *err, size_t err_size);

// Sends reqs[i] at intended_ns[i] (absolute CLOCK_MONOTONIC ns, non-decreasing; times in the
// past mean at once). With a cap, a due request waits for a free slot in index order, and its
// start_ns is taken when it is actually sent, so the wait is outside its latencies (as vLLM).
// Fills results[i] (overwritten; free each with request_result_free) and, if not NULL, stats.
// Returns false only when the run itself could not go on (bad options, no event loop): every
// answer a server gives, including none, is a per-request failure instead.
bool client_run(const ClientOptions *o, const BenchRequest *reqs, const int64_t *intended_ns,
                size_t num_requests, RequestResult *results, ClientStats *stats, char *err,
                size_t err_size);

// vLLM's ready check (spec section 3.5): sends req (without a request id) until one attempt
// succeeds or timeout_ns has passed, retry_interval_ns apart (vLLM: 5 s). Each attempt's own
// timeout is capped by the time left. out holds the last attempt's result. timeout_ns <= 0
// fails at once, as in v0.10.2.
bool client_ready_check(const ClientOptions *o, const BenchRequest *req, int64_t timeout_ns,
                        int64_t retry_interval_ns, RequestResult *out);

// GET models_url (e.g. http://host:port/v1/models) with o's headers and timeout; *id gets the
// first model's "id" (owned). False with a message when there is none or the request fails.
bool client_first_model_id(const ClientOptions *o, const char *models_url, char **id, char *err,
                           size_t err_size);

#endif
