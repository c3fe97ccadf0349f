// mock_server_cmd.c: `gptoss-bench mock-server`: flags -> MockOptions, start, print the URL,
// serve until SIGINT/SIGTERM, print the counters. Dies on bad flags (a tool); the serving is
// mock_server.c's. Also the process-level fault the library must never cause: --crash-after /
// --crash-after-sec end the process abruptly, as a crashing engine would (for the sweep's tests).
#include "bench/mock_server_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fd_limit.h"
#include "bench/mock_server.h"
#include "common/check.h"
#include "common/clock.h"
#include "common/cpu_cores.h"

static const char USAGE[] =
    "usage: gptoss-bench mock-server [options]\n"
    "  An OpenAI-compatible streaming server with deterministic timing and faults, for tests\n"
    "  and for measuring the client. Routes: POST /v1/completions, /v1/chat/completions\n"
    "  (stream=true), GET /v1/models, /health, /mock/stats (max_in_flight and counters).\n"
    "  Each SSE data line is preceded by a comment \": t=<CLOCK_MONOTONIC ns>\" (its send time).\n"
    "  --host ADDR            bind address (default 127.0.0.1)\n"
    "  --port N               port (default 8000; 0 picks a free one, printed at start)\n"
    "  --model NAME           model id served (default openai/gpt-oss-120b)\n"
    "  --ttft-ms X            request received -> first event (default 50)\n"
    "  --itl-ms X             between events (default 10)\n"
    "  --output-len N         tokens per answer (default 0: the request's max_tokens, else 16)\n"
    "  --tokens-per-event N   tokens in each event (default 1)\n"
    "  --error-rate X         fraction of requests answered with --error-status (default 0)\n"
    "  --error-status N       HTTP status of those answers (default 500)\n"
    "  --cut-after N          close every stream after N tokens, without ending it\n"
    "  --error-event-every N  end every Nth request's stream with an error event inside the\n"
    "                         200 answer, as llama-server does: data: {\"error\": {...}}\n"
    "  --error-event-after N  tokens sent before that error event (default 2)\n"
    "  --unfinished-every N   end every Nth stream cleanly but without a finish_reason,\n"
    "                         usage or data: [DONE] (a server that gave up on it)\n"
    "  --seed N               which requests get errors (default 0)\n"
    "  --threads N            HTTP worker threads (default: number of CPUs)\n"
    "  --receive-timeout S    close a connection that moves no byte for S seconds: a stalled\n"
    "                         request, an idle keep-alive one, a client not reading (default\n"
    "                         10; 0: never); streams waiting for their next event are not cut\n"
    "  --crash-after N        exit abruptly (status 1, an error line on stderr, open streams\n"
    "                         cut) once N completion requests have arrived\n"
    "  --crash-after-sec X    the same X seconds after start\n";

enum { CRASH_POLL_NS = 10 * 1000 * 1000 };

typedef struct {
  long long after_requests;  // < 0: never
  int64_t after_ns;          // < 0: never
} CrashOptions;

static double parse_double(const char *flag, const char *text) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end) die("mock-server: --%s needs a number, got '%s'", flag, text);
  return v;
}

static long long parse_int(const char *flag, const char *text, long long lo, long long hi) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi)
    die("mock-server: --%s needs an integer in [%lld, %lld], got '%s'", flag, lo, hi, text);
  return v;
}

static int64_t parse_ms(const char *flag, const char *text) {
  double ms = parse_double(flag, text);
  if (ms < 0) die("mock-server: --%s must not be negative, got '%s'", flag, text);
  return (int64_t)(ms * 1e6 + 0.5);
}

static MockOptions parse_options(int argc, char **argv, CrashOptions *crash) {
  *crash = (CrashOptions){.after_requests = -1, .after_ns = -1};
  MockOptions o;
  mock_options_default(&o);
  o.port = 8000;
  o.num_threads = (uint32_t)cpu_cores_usable();
  // clang-format off
  static const struct option longopts[] = {
      {"host", required_argument, 0, 'H'},        {"port", required_argument, 0, 'p'},
      {"model", required_argument, 0, 'm'},       {"ttft-ms", required_argument, 0, 't'},
      {"itl-ms", required_argument, 0, 'i'},      {"output-len", required_argument, 0, 'o'},
      {"tokens-per-event", required_argument, 0, 'k'},
      {"error-rate", required_argument, 0, 'e'},  {"error-status", required_argument, 0, 's'},
      {"cut-after", required_argument, 0, 'c'},   {"seed", required_argument, 0, 'S'},
      {"error-event-every", required_argument, 0, 'v'},
      {"error-event-after", required_argument, 0, 'a'},
      {"unfinished-every", required_argument, 0, 'u'},
      {"threads", required_argument, 0, 'T'},     {"help", no_argument, 0, 'h'},
      {"crash-after", required_argument, 0, 'x'}, {"crash-after-sec", required_argument, 0, 'X'},
      {"receive-timeout", required_argument, 0, 'r'},
      {0, 0, 0, 0}};
  // clang-format on
  opterr = 0;
  int c, index = -1;
  while ((c = getopt_long(argc, argv, ":h", longopts, &index)) != -1) {
    const char *flag = index >= 0 ? longopts[index].name : "";
    index = -1;
    switch (c) {
      case 'H': o.host = optarg; break;
      case 'p': o.port = (uint16_t)parse_int(flag, optarg, 0, 65535); break;
      case 'm': o.model = optarg; break;
      case 't': o.ttft_ns = parse_ms(flag, optarg); break;
      case 'i': o.itl_ns = parse_ms(flag, optarg); break;
      case 'o': o.output_len = (uint32_t)parse_int(flag, optarg, 0, UINT32_MAX); break;
      case 'k': o.tokens_per_event = (uint32_t)parse_int(flag, optarg, 1, UINT32_MAX); break;
      case 'e': o.error_rate = parse_double(flag, optarg); break;
      case 's': o.error_status = (int)parse_int(flag, optarg, 100, 599); break;
      case 'c': o.cut_after = parse_int(flag, optarg, 0, INT64_MAX); break;
      case 'v': o.error_event_every = (uint32_t)parse_int(flag, optarg, 1, UINT32_MAX); break;
      case 'a': o.error_event_after = (uint32_t)parse_int(flag, optarg, 0, UINT32_MAX); break;
      case 'u': o.unfinished_every = (uint32_t)parse_int(flag, optarg, 1, UINT32_MAX); break;
      case 'S': o.seed = (uint64_t)parse_int(flag, optarg, 0, INT64_MAX); break;
      case 'T': o.num_threads = (uint32_t)parse_int(flag, optarg, 1, 1024); break;
      case 'r': o.receive_timeout_s = (unsigned)parse_int(flag, optarg, 0, 86400); break;
      case 'x': crash->after_requests = parse_int(flag, optarg, 0, INT64_MAX); break;
      case 'X': crash->after_ns = parse_ms(flag, optarg) * 1000; break;
      case 'h': fputs(USAGE, stdout); exit(0);
      case ':': die("mock-server: %s needs a value\n%s", argv[optind - 1], USAGE);
      default: die("mock-server: unknown option '%s'\n%s", argv[optind - 1], USAGE);
    }
  }
  if (optind < argc) die("mock-server: unexpected argument '%s'\n%s", argv[optind], USAGE);
  if (o.error_rate < 0 || o.error_rate > 1)
    die("mock-server: --error-rate must be in [0, 1], got %g", o.error_rate);
  return o;
}

// Waits for SIGINT or SIGTERM; with a crash set, polls for it meanwhile and never returns once
// it is due: _exit, no cleanup, so streams in flight end mid-way as with a crashed engine.
static int wait_for_stop(const sigset_t *stop_signals, const MockServer *s, const CrashOptions *c) {
  if (c->after_requests < 0 && c->after_ns < 0) {
    int sig;
    sigwait(stop_signals, &sig);
    return sig;
  }
  int64_t start = clock_now_ns();
  for (;;) {
    struct timespec poll = {0, CRASH_POLL_NS};
    int sig = sigtimedwait(stop_signals, NULL, &poll);
    if (sig > 0) return sig;
    MockStats st;
    mock_server_stats(s, &st);
    bool by_count = c->after_requests >= 0 && st.num_requests >= (uint64_t)c->after_requests;
    if (by_count || (c->after_ns >= 0 && clock_now_ns() - start >= c->after_ns)) {
      fprintf(stderr, "mock-server: error: crashing on purpose after %llu requests (%s)\n",
              (unsigned long long)st.num_requests,
              by_count ? "--crash-after" : "--crash-after-sec");
      _exit(1);
    }
  }
}

int mock_server_cmd_main(int argc, char **argv) {
  CrashOptions crash;
  MockOptions o = parse_options(argc, argv, &crash);
  // Signals are taken by sigwait below: block them before any thread starts.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
  fd_limit_raise(100000);
  char err[256];
  MockServer *s = mock_server_start(&o, err, sizeof err);
  if (!s) die("%s", err);
  bool ipv6 = strchr(o.host, ':') != NULL;  // a literal IPv6 address goes in brackets in a URL
  printf("mock-server listening on http://%s%s%s:%u\n", ipv6 ? "[" : "", o.host, ipv6 ? "]" : "",
         mock_server_port(s));
  fflush(stdout);
  wait_for_stop(&stop_signals, s, &crash);
  MockStats st;
  mock_server_stats(s, &st);
  mock_server_stop(s);
  fprintf(stderr,
          "mock-server: stopped; %llu requests, %llu errors, %llu cut, %llu error events, at most "
          "%u in flight\n",
          (unsigned long long)st.num_requests, (unsigned long long)st.num_errors,
          (unsigned long long)st.num_cut, (unsigned long long)st.num_error_events,
          st.max_in_flight);
  return 0;
}
