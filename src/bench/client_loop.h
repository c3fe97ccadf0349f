// client_loop.h: one event-loop thread of client_run: a libcurl multi handle on epoll that sends
// its share of the requests at their times, under its share of the concurrency cap, and fills
// their results. Internal to the client (http_client.c, client_loop.c); nothing else calls it.
#ifndef GB_BENCH_CLIENT_LOOP_H
#define GB_BENCH_CLIENT_LOOP_H

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/bench_types.h"
#include "bench/http_client.h"
#include "bench/json_scratch.h"
#include "bench/loghist.h"

typedef struct {  // shared by every loop of one run
  atomic_uint in_flight;
  atomic_uint peak;
} ClientShared;

typedef struct Transfer Transfer;  // one request on the wire (client_loop.c)

typedef struct {
  // Set by the caller before client_loop_init:
  const ClientOptions *o;
  const BenchRequest *reqs;
  const int64_t *intended_ns;
  RequestResult *results;
  struct curl_slist *headers;  // shared, read-only
  ClientShared *shared;
  size_t num_requests;  // of the whole run
  size_t next;          // this loop's next request to send; it owns next, next + stride, ...
  size_t stride;
  size_t num_pending;  // its requests not finished yet
  uint32_t cap;        // its share of max_concurrency; 0: none
  // The loop's own:
  uint32_t num_in_flight;
  int64_t slot_freed_ns;  // when a request last finished (freed a concurrency slot)
  CURLM *multi;
  int epoll_fd;
  int timer_fd;
  int64_t curl_deadline_ns;  // when curl wants CURL_SOCKET_TIMEOUT; INT64_MAX: never
  int64_t armed_ns;          // what timer_fd is set to; INT64_MAX: disarmed
  Transfer *free_transfers;
  Transfer *all_transfers;
  JsonScratch json;    // the arena every stream of this loop parses its events in
  LogHist stamp_lags;  // receive lag of the events that carried a server send stamp
  char error[256];  // non-empty: the loop could not go on
} ClientLoop;

// Creates the loop's epoll set, timerfd and multi handle. False with a message on failure
// (client_loop_free is still needed).
bool client_loop_init(ClientLoop *l, char *err, size_t err_size);

// Runs until every request of the loop has finished, or l->error is set.
void client_loop_run(ClientLoop *l);
void client_loop_free(ClientLoop *l);

// Marks r failed with kind and a printf-style message (replacing any earlier one).
__attribute__((format(printf, 3, 4))) void client_result_fail(RequestResult *r, FailureKind kind,
                                                              const char *fmt, ...);

#endif
