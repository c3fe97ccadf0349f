// bench_types.h: the plain structs the load generator's parts exchange: a dataset entry to send
// (BenchRequest) and what happened to it (RequestResult, vLLM's RequestFuncOutput with
// nanosecond monotonic stamps). No behaviour here.
#ifndef GB_BENCH_BENCH_TYPES_H
#define GB_BENCH_BENCH_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// One prompt of a workload.
typedef struct {
  char *prompt;                  // UTF-8 text sent as the prompt (owned)
  uint32_t prompt_len;           // its length in tokens, counted by the client (vLLM's prompt_len)
  uint32_t expected_output_len;  // max_tokens requested
} BenchRequest;

typedef enum {
  FAILURE_NONE,
  FAILURE_HTTP_STATUS,  // the server answered with a non-200 status
  FAILURE_TIMEOUT,      // no complete answer within the timeout
  FAILURE_CONNECTION,   // could not connect, or the connection was refused/reset before a status
  FAILURE_STREAM,       // 200, but the stream broke, was malformed, or carried no content
  NUM_FAILURE_KINDS,
} FailureKind;

// What happened to one request. Times are CLOCK_MONOTONIC nanoseconds (common/clock.h).
typedef struct {
  bool success;
  FailureKind failure;
  int http_status;         // 0 when no status was received
  char *error;             // why it failed, for --save-detailed (owned, NULL on success)
  char *generated_text;    // concatenated text deltas (owned, never NULL after a run)
  uint32_t prompt_len;     // copied from the BenchRequest
  uint32_t output_tokens;  // usage.completion_tokens of the final usage chunk (0: none; the
                           // caller then counts generated_text with the tokenizer)
  int64_t intended_ns;     // when the arrival schedule meant to send it
  int64_t ready_ns;        // when it was due and a concurrency slot was free: start_ns - ready_ns
                           // is the client's own lateness, whatever the cap made it wait
  int64_t start_ns;        // when it was actually sent (after waiting for a concurrency slot)
  int64_t ttft_ns;         // first choices-bearing event - start_ns
  int64_t latency_ns;      // last relevant event - start_ns (vLLM's E2EL)
  int64_t *itl_ns;         // [num_itl] gaps between consecutive choices-bearing events (owned)
  size_t num_itl;
} RequestResult;

void request_result_free(RequestResult *r);

#endif
