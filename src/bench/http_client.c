// http_client.c: client_run: splits the requests over one or more event-loop threads
// (client_loop.c; request i goes to loop i % T, each with a share of the concurrency cap),
// runs them, and sums what they saw. Threads share nothing but the in-flight counters. Must not
// touch sockets itself.
#include "bench/http_client.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/client_internal.h"
#include "bench/client_loop.h"
#include "common/fd_limit.h"
#include "common/check.h"

static void *loop_thread(void *arg) {
  client_loop_run(arg);
  return NULL;
}

static bool run_loops(ClientLoop *loops, uint32_t num_loops, char *err, size_t err_size) {
  pthread_t *threads = xcalloc(num_loops, sizeof *threads);
  uint32_t num_started = 1;
  for (; num_started < num_loops; num_started++)
    if (pthread_create(&threads[num_started], NULL, loop_thread, &loops[num_started]) != 0) {
      snprintf(err, err_size, "cannot start client thread %u of %u", num_started + 1, num_loops);
      break;
    }
  bool ok = num_started == num_loops;
  if (ok) client_loop_run(&loops[0]);
  for (uint32_t i = 1; i < num_started; i++) pthread_join(threads[i], NULL);
  free(threads);
  for (uint32_t i = 0; ok && i < num_loops; i++)
    if (loops[i].error[0]) {
      snprintf(err, err_size, "client loop %u: %s", i, loops[i].error);
      ok = false;
    }
  return ok;
}

static void sum_stats(const ClientLoop *loops, uint32_t num_loops, const ClientShared *shared,
                      ClientStats *stats) {
  LogHist *lags = xcalloc(1, sizeof *lags);
  for (uint32_t i = 0; i < num_loops; i++) loghist_merge(lags, &loops[i].stamp_lags);
  *stats = (ClientStats){.peak_in_flight = atomic_load(&shared->peak),
                         .num_stamped_events = lags->num,
                         .mean_stamp_lag_ns = loghist_mean(lags),
                         .p50_stamp_lag_ns = loghist_percentile(lags, 50),
                         .p99_stamp_lag_ns = loghist_percentile(lags, 99),
                         .max_stamp_lag_ns = lags->max};
  free(lags);
}

// Requests a run that stopped early never finished: failed, with the run's error.
static void fail_unfinished(RequestResult *results, size_t num_requests, const char *err) {
  for (size_t i = 0; i < num_requests; i++)
    if (!results[i].generated_text) {
      results[i].generated_text = xstrdup("");
      client_result_fail(&results[i], FAILURE_CONNECTION, "not sent: %s", err);
    }
}

static bool schedule_ok(const int64_t *intended_ns, size_t num_requests, char *err,
                        size_t err_size) {
  for (size_t i = 1; i < num_requests; i++)
    if (intended_ns[i] < intended_ns[i - 1]) {
      snprintf(err, err_size, "intended send times must not decrease (request %zu)", i);
      return false;
    }
  return true;
}

bool client_run(const ClientOptions *o, const BenchRequest *reqs, const int64_t *intended_ns,
                size_t num_requests, RequestResult *results, ClientStats *stats, char *err,
                size_t err_size) {
  for (size_t i = 0; i < num_requests; i++)
    results[i] = (RequestResult){.prompt_len = reqs[i].prompt_len, .intended_ns = intended_ns[i]};
  if (stats) *stats = (ClientStats){0};
  if (!client_options_check(o, err, err_size) ||
      !schedule_ok(intended_ns, num_requests, err, err_size)) {
    fail_unfinished(results, num_requests, err);
    return false;
  }
  client_global_init();
  uint32_t num_loops = o->num_threads > 1 ? o->num_threads : 1;
  if (num_loops > num_requests) num_loops = num_requests ? (uint32_t)num_requests : 1;
  fd_limit_raise((o->max_concurrency ? o->max_concurrency : num_requests) + 64);

  ClientShared shared = {0};
  struct curl_slist *headers = client_headers(o);
  ClientLoop *loops = xcalloc(num_loops, sizeof *loops);
  bool ok = true;
  for (uint32_t i = 0; i < num_loops; i++) {
    ClientLoop *l = &loops[i];
    *l = (ClientLoop){.o = o,
                      .reqs = reqs,
                      .intended_ns = intended_ns,
                      .results = results,
                      .headers = headers,
                      .shared = &shared,
                      .num_requests = num_requests,
                      .next = i,
                      .stride = num_loops,
                      .epoll_fd = -1,
                      .timer_fd = -1};
    l->num_pending = i < num_requests ? (num_requests - i + num_loops - 1) / num_loops : 0;
    if (o->max_concurrency)
      l->cap = o->max_concurrency / num_loops + (i < o->max_concurrency % num_loops);
    if (ok) ok = client_loop_init(l, err, err_size);
  }
  if (ok) ok = run_loops(loops, num_loops, err, err_size);
  if (stats) sum_stats(loops, num_loops, &shared, stats);
  for (uint32_t i = 0; i < num_loops; i++) client_loop_free(&loops[i]);
  free(loops);
  curl_slist_free_all(headers);
  if (!ok) fail_unfinished(results, num_requests, err);
  return ok;
}
