// test_mock_receive_timeout.c: mock-server's --receive-timeout over real loopback sockets: a
// client that sends part of a request and stalls is closed after the timeout; with 0 it is
// not; an answer slower than the timeout (TTFT 2.5 s against 1 s) is never cut; and a
// keep-alive connection idle after its answer is closed after the timeout again.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/mock_server.h"
#include "common/clock.h"

static MockServer *start(unsigned receive_timeout_s, int64_t ttft_ns) {
  MockOptions o;
  mock_options_default(&o);
  o.receive_timeout_s = receive_timeout_s;
  o.ttft_ns = ttft_ns;
  o.itl_ns = 0;
  char err[256];
  MockServer *s = mock_server_start(&o, err, sizeof err);
  if (!s) fail_msg("%s", err);
  return s;
}

static int connect_to(const MockServer *s) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(mock_server_port(s))};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  return fd;
}

// Reads until the server closes (true) or within_ms pass (false); the bytes into buf.
static bool closed_within(int fd, int within_ms, char *buf, size_t size) {
  int64_t until = clock_now_ns() + (int64_t)within_ms * 1000000;
  size_t len = 0;
  for (int64_t now; (now = clock_now_ns()) < until;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, (int)((until - now) / 1000000) + 1) <= 0) continue;
    ssize_t n = recv(fd, buf + len, size - 1 - len, 0);
    if (n <= 0) {
      buf[len] = '\0';
      return true;
    }
    len += (size_t)n;
  }
  buf[len] = '\0';
  return false;
}

static const char PARTIAL[] = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le";

static void test_stalled_request_is_closed(void **state) {
  (void)state;
  MockServer *s = start(1, 0);
  int fd = connect_to(s);
  assert_int_equal(send(fd, PARTIAL, strlen(PARTIAL), 0), (ssize_t)strlen(PARTIAL));
  char buf[4096];
  int64_t t0 = clock_now_ns();
  assert_true(closed_within(fd, 4000, buf, sizeof buf));
  double took_s = (double)(clock_now_ns() - t0) * 1e-9;
  if (took_s < 0.5 || took_s > 3.5) fail_msg("closed after %.2f s, wanted about 1 s", took_s);
  close(fd);
  mock_server_stop(s);
}

static void test_no_timeout(void **state) {
  (void)state;
  MockServer *s = start(0, 0);
  int fd = connect_to(s);
  assert_int_equal(send(fd, PARTIAL, strlen(PARTIAL), 0), (ssize_t)strlen(PARTIAL));
  char buf[4096];
  assert_false(closed_within(fd, 2500, buf, sizeof buf));
  close(fd);
  mock_server_stop(s);
}

static void test_slow_answer_is_not_cut(void **state) {
  (void)state;
  MockServer *s = start(1, 2500000000);  // TTFT 2.5 s > the 1 s timeout
  int fd = connect_to(s);
  const char body[] = "{\"prompt\": \"hi\", \"max_tokens\": 3, \"stream\": true}";
  char req[512];
  int n = snprintf(req, sizeof req,
                   "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s",
                   strlen(body), body);
  assert_int_equal(send(fd, req, (size_t)n, 0), n);
  // The whole stream comes (ends with [DONE] and the last chunk), then the idle keep-alive
  // connection is closed about 1 s later.
  char buf[65536];
  int64_t t0 = clock_now_ns();
  assert_true(closed_within(fd, 6000, buf, sizeof buf));
  double took_s = (double)(clock_now_ns() - t0) * 1e-9;
  assert_non_null(strstr(buf, "HTTP/1.1 200"));
  assert_non_null(strstr(buf, "data: [DONE]"));
  assert_non_null(strstr(buf, "\r\n0\r\n\r\n"));
  if (took_s < 3.0 || took_s > 5.5) fail_msg("closed after %.2f s, wanted about 3.5 s", took_s);
  close(fd);
  mock_server_stop(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stalled_request_is_closed),
      cmocka_unit_test(test_no_timeout),
      cmocka_unit_test(test_slow_answer_is_not_cut),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
