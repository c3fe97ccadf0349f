// bench_wakeup.c: the machine's floor for the client benchmark's stamp lag, for `make bench`
// (scripts/bench.sh, section client). A writer process pinned to WRITER_CPU sends its
// CLOCK_MONOTONIC time over a loopback TCP connection every PERIOD_US; the reader, pinned to
// READER_CPU and blocked in epoll_wait as the client is, records receive time minus that stamp.
// No HTTP, no parsing: what is left is the kernel's loopback path and waking the reader's CPU,
// which no client can beat. Prints "name value" lines; a CPU of -1 means not pinned.
//
//   bench_wakeup READER_CPU WRITER_CPU NUM_MESSAGES PERIOD_US
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/loghist.h"
#include "common/check.h"
#include "common/clock.h"

static long parse_int(const char *what, const char *text, long lo, long hi) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi)
    die("%s '%s' must be an integer in %ld..%ld", what, text, lo, hi);
  return v;
}

static void pin(long cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET((int)cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) die("cannot pin to CPU %ld", cpu);
}

// A connected loopback TCP pair (Nagle off on the writer's side, as mock-server's): fds[0]
// reads, fds[1] writes.
static void tcp_pair(int fds[2]) {
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof addr;
  int listener = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  fds[1] = socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0 || fds[1] < 0 || bind(listener, (struct sockaddr *)&addr, len) != 0 ||
      listen(listener, 1) != 0 || getsockname(listener, (struct sockaddr *)&addr, &len) != 0 ||
      connect(fds[1], (struct sockaddr *)&addr, len) != 0 ||
      (fds[0] = accept(listener, NULL, NULL)) < 0 ||
      setsockopt(fds[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    die("cannot set up a loopback TCP connection: %s", strerror(errno));
  close(listener);
}

static void write_stamps(int fd, long num_messages, int64_t period_ns) {
  int64_t due = clock_now_ns();
  for (long i = 0; i < num_messages; i++) {
    due += period_ns;
    clock_sleep_until_ns(due);
    int64_t stamp = clock_now_ns();
    if (write(fd, &stamp, sizeof stamp) != (ssize_t)sizeof stamp) _exit(1);
  }
  _exit(0);
}

int main(int argc, char **argv) {
  check_set_program("bench_wakeup");
  if (argc != 5) die("usage: bench_wakeup READER_CPU WRITER_CPU NUM_MESSAGES PERIOD_US");
  long reader_cpu = parse_int("READER_CPU", argv[1], -1, CPU_SETSIZE - 1);
  long writer_cpu = parse_int("WRITER_CPU", argv[2], -1, CPU_SETSIZE - 1);
  long num_messages = parse_int("NUM_MESSAGES", argv[3], 1, 100000000);
  int64_t period_ns = parse_int("PERIOD_US", argv[4], 1, 10000000) * 1000;

  int fds[2];
  tcp_pair(fds);
  pid_t writer = fork();
  if (writer < 0) die("fork: %s", strerror(errno));
  if (writer == 0) {
    pin(writer_cpu);
    write_stamps(fds[1], num_messages, period_ns);
  }
  pin(reader_cpu);
  int epoll_fd = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[0]};
  if (epoll_fd < 0 || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fds[0], &ev) != 0)
    die("epoll: %s", strerror(errno));
  static LogHist lags;
  int64_t stamps[64];
  size_t num_bytes = 0;  // of stamps[] filled (a read may end mid-stamp)
  for (long got = 0; got < num_messages;) {
    if (epoll_wait(epoll_fd, &ev, 1, -1) < 0 && errno != EINTR)
      die("epoll_wait: %s", strerror(errno));
    ssize_t n = read(fds[0], (char *)stamps + num_bytes, sizeof stamps - num_bytes);
    if (n <= 0) die("the writer stopped after %ld of %ld messages", got, num_messages);
    int64_t now = clock_now_ns();
    num_bytes += (size_t)n;
    size_t whole = num_bytes / sizeof *stamps;
    for (size_t i = 0; i < whole; i++) loghist_add(&lags, now - stamps[i]);
    got += (long)whole;
    num_bytes -= whole * sizeof *stamps;
    memmove(stamps, stamps + whole, num_bytes);
  }
  int status;
  waitpid(writer, &status, 0);
  printf("messages %llu\n", (unsigned long long)lags.num);
  printf("period_us %lld\n", (long long)(period_ns / 1000));
  printf("lag_p50_ms %.3f\n", (double)loghist_percentile(&lags, 50) / 1e6);
  printf("lag_p99_ms %.3f\n", (double)loghist_percentile(&lags, 99) / 1e6);
  printf("lag_max_ms %.3f\n", (double)lags.max / 1e6);
  return 0;
}
