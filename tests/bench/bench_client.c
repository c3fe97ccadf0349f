// bench_client.c: the load generator's own ceiling, for `make bench` (scripts/bench.sh starts
// `gptoss-bench mock-server` on another CPU and passes its URL). Sends NUM_STREAMS streaming
// completions of OUTPUT_LEN tokens each through client_run (one event-loop thread, as `bench`
// runs by default), their sends spread evenly over SPREAD_MS, all in flight at once, and prints
// one "name value" line per figure: streamed tokens per second, the process's CPU seconds during
// client_run (getrusage: user + system, every thread), and the receive lag of the server's
// ": t=<ns>" send stamps. Times client_run only; never compares against a target itself.
//
//   bench_client BASE_URL NUM_STREAMS OUTPUT_LEN SPREAD_MS [busy]
// (busy: the client's event loop busy-polls, ClientOptions.busy_poll)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench/http_client.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/clock.h"

static long parse_count(const char *what, const char *text, long lo, long hi) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi)
    die("%s '%s' must be an integer in %ld..%ld", what, text, lo, hi);
  return v;
}

static double cpu_seconds(void) {
  struct rusage u;
  CHECK(getrusage(RUSAGE_SELF, &u) == 0);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv) {
  check_set_program("bench_client");
  if (argc != 5 && !(argc == 6 && strcmp(argv[5], "busy") == 0))
    die("usage: bench_client BASE_URL NUM_STREAMS OUTPUT_LEN SPREAD_MS [busy]");
  size_t num_streams = (size_t)parse_count("NUM_STREAMS", argv[2], 1, 100000);
  uint32_t output_len = (uint32_t)parse_count("OUTPUT_LEN", argv[3], 1, 10000000);
  int64_t spread_ns = parse_count("SPREAD_MS", argv[4], 0, 3600000) * 1000000;

  Buf url = {0};
  buf_printf(&url, "%s/v1/completions", argv[1]);
  ClientOptions o = {.url = url.data,
                     .endpoint = ENDPOINT_COMPLETIONS,
                     .model = "mock",
                     .logprobs = -1,
                     .ignore_eos = true,
                     .max_concurrency = (uint32_t)num_streams,
                     .busy_poll = argc == 6,
                     .timeout_ns = 600 * INT64_C(1000000000)};
  BenchRequest *reqs = xcalloc(num_streams, sizeof *reqs);
  int64_t *due = xcalloc(num_streams, sizeof *due);
  RequestResult *results = xcalloc(num_streams, sizeof *results);
  int64_t start_ns = clock_now_ns();
  for (size_t i = 0; i < num_streams; i++) {
    reqs[i] = (BenchRequest){.prompt = "Hello", .prompt_len = 1, .expected_output_len = output_len};
    due[i] = start_ns + spread_ns * (int64_t)i / (int64_t)num_streams;
  }

  ClientStats stats;
  char err[512];
  double cpu0 = cpu_seconds();
  if (!client_run(&o, reqs, due, num_streams, results, &stats, err, sizeof err))
    die("%s", err);
  double wall_s = (double)(clock_now_ns() - start_ns) / 1e9, cpu_s = cpu_seconds() - cpu0;

  uint64_t num_tokens = 0;
  for (size_t i = 0; i < num_streams; i++) {
    const RequestResult *r = &results[i];
    if (!r->success) die("request %zu failed: %s", i, r->error);
    if (r->output_tokens != output_len)
      die("request %zu: %u tokens, not %u (start mock-server without --output-len)", i,
          r->output_tokens, output_len);
    num_tokens += r->output_tokens;
  }
  printf("streams %zu\n", num_streams);
  printf("peak_in_flight %u\n", stats.peak_in_flight);
  printf("tokens %llu\n", (unsigned long long)num_tokens);
  printf("wall_s %.3f\n", wall_s);
  printf("tokens_per_s %.0f\n", (double)num_tokens / wall_s);
  printf("cpu_s %.3f\n", cpu_s);
  printf("cpu_busy %.2f\n", cpu_s / wall_s);  // fraction of one core the client used
  printf("tokens_per_cpu_s %.0f\n", (double)num_tokens / cpu_s);
  printf("stamped_events %zu\n", stats.num_stamped_events);
  printf("stamp_lag_mean_ms %.3f\n", (double)stats.mean_stamp_lag_ns / 1e6);
  printf("stamp_lag_p50_ms %.3f\n", (double)stats.p50_stamp_lag_ns / 1e6);
  printf("stamp_lag_p99_ms %.3f\n", (double)stats.p99_stamp_lag_ns / 1e6);
  printf("stamp_lag_max_ms %.3f\n", (double)stats.max_stamp_lag_ns / 1e6);

  for (size_t i = 0; i < num_streams; i++) request_result_free(&results[i]);
  free(results);
  free(due);
  free(reqs);
  buf_free(&url);
  return 0;
}
