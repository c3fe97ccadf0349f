// stream_chaos.c: a test client that opens many streaming completions at once and abandons most
// of them at random points: halfway through sending the request, right after sending it, or
// after a random number of answer bytes, closing with FIN or with RST (SO_LINGER 0). The rest are
// read to the end (Connection: close) and must be whole (200, the final chunk, [DONE]). One
// epoll loop, --concurrency sockets at a time, a seeded generator. Prints one summary line; exits 1
// when any request that was read to the end was wrong or a connection failed. libc only.
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static const char USAGE[] =
    "usage: stream_chaos HOST PORT [--requests N (1000)] [--concurrency C (100)] [--seed S (1)]\n"
    "                    [--max-tokens M (8)] [--cut-percent P (75)] [--path PATH]\n"
    "  streams N completions, C at a time; P%% of them are cut at a random point\n";

enum { CUT_NONE, CUT_SENDING, CUT_WAITING, CUT_STREAMING, NUM_FATES };
static const char *const FATE_NAMES[] = {"completed", "cut_sending", "cut_waiting",
                                         "cut_streaming"};

typedef struct {
  int fd;
  int fate;
  bool rst;       // close with RST instead of FIN
  size_t cut_at;  // bytes sent (CUT_SENDING) or received (CUT_STREAMING) before the cut
  char *req;      // the request bytes
  size_t req_len, sent;
  char *in;  // the answer so far
  size_t in_len, in_cap;
} Conn;

static uint64_t rng_state;
static uint64_t rng_next(void) {  // xorshift64*
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}
static size_t rng_below(size_t n) { return n ? (size_t)(rng_next() % n) : 0; }

static void die(const char *msg) {
  fprintf(stderr, "stream_chaos: %s\n%s", msg, USAGE);
  exit(2);
}

static struct addrinfo *server;
static const char *path = "/v1/completions";
static int max_tokens = 8, cut_percent = 75;
static long counts[NUM_FATES], num_bad, num_rst;

static void conn_start(Conn *c, int epfd, long index) {
  char body[256];
  int body_len = snprintf(body, sizeof body,
                          "{\"prompt\": \"request %ld says hello\", \"max_tokens\": %d, "
                          "\"stream\": true, \"ignore_eos\": true, \"temperature\": 0}",
                          index, max_tokens);
  free(c->req);
  c->req = malloc(512);
  c->req_len = (size_t)snprintf(c->req, 512,
                                "POST %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n"
                                "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                                path, body_len, body);
  c->sent = c->in_len = 0;
  c->fate = (int)rng_below(100) < cut_percent ? 1 + (int)rng_below(NUM_FATES - 1) : CUT_NONE;
  c->rst = rng_below(2);
  c->cut_at = c->fate == CUT_SENDING     ? 1 + rng_below(c->req_len - 1)
              : c->fate == CUT_STREAMING ? 1 + rng_below(200 + 160 * (size_t)max_tokens)
                                         : 0;
  c->fd = socket(server->ai_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (c->fd < 0) die("cannot open a socket (raise the open-file limit)");
  if (connect(c->fd, server->ai_addr, server->ai_addrlen) != 0 && errno != EINPROGRESS)
    die("cannot connect");
  struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP, .data.ptr = c};
  epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

// A request read to the end: status 200, the last chunk, [DONE] and a finish_reason.
static bool answer_ok(const Conn *c) {
  if (c->in_len < 12 || strncmp(c->in, "HTTP/1.1 200", 12) != 0) return false;
  return c->in_len >= 5 && memcmp(c->in + c->in_len - 5, "0\r\n\r\n", 5) == 0 &&
         memmem(c->in, c->in_len, "data: [DONE]", 12) &&
         memmem(c->in, c->in_len, "\"finish_reason\":\"length\"", 24);
}

// Closes c and counts its fate (bad: a request read to the end came back wrong).
static void conn_end(Conn *c, int epfd, bool bad) {
  if (c->rst) {
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    num_rst += c->fate != CUT_NONE;
  }
  epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  c->fd = -1;
  counts[c->fate]++;
  if (bad) {
    num_bad++;
    if (num_bad <= 3)
      fprintf(stderr, "stream_chaos: bad answer (%zu bytes): %.300s\n", c->in_len,
              c->in ? c->in : "");
  }
}

// Advances c on an event; true when c is finished.
static bool conn_step(Conn *c, int epfd, uint32_t events) {
  if (c->sent < c->req_len && (events & EPOLLOUT)) {
    size_t want = c->req_len - c->sent;
    if (c->fate == CUT_SENDING && want > c->cut_at - c->sent) want = c->cut_at - c->sent;
    ssize_t n = send(c->fd, c->req + c->sent, want, MSG_NOSIGNAL);
    if (n > 0) c->sent += (size_t)n;
    if (c->fate == CUT_SENDING && c->sent >= c->cut_at) return conn_end(c, epfd, false), true;
    if (n < 0 && errno != EAGAIN) return conn_end(c, epfd, true), true;
    if (c->sent == c->req_len && c->fate == CUT_WAITING) return conn_end(c, epfd, false), true;
    if (c->sent == c->req_len) {  // only reads from here on
      struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
      epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
    }
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    for (;;) {
      if (c->in_cap - c->in_len < 4096) {
        c->in_cap = c->in_cap ? 2 * c->in_cap : 8192;
        c->in = realloc(c->in, c->in_cap);
      }
      ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len - 1, 0);
      if (n > 0) {
        c->in_len += (size_t)n;
        c->in[c->in_len] = '\0';
        if (c->fate == CUT_STREAMING && c->in_len >= c->cut_at)
          return conn_end(c, epfd, false), true;
        continue;
      }
      if (n < 0 && errno == EAGAIN) break;
      // The server closed (Connection: close): the answer must be whole.
      bool ok = answer_ok(c);
      if (c->fate == CUT_STREAMING && ok) c->fate = CUT_NONE;  // the whole answer was shorter
      return conn_end(c, epfd, !ok), true;
    }
  }
  return false;
}

int main(int argc, char **argv) {
  if (argc < 3) die("give HOST and PORT");
  long num_requests = 1000, concurrency = 100;
  rng_state = 1;
  for (int i = 3; i < argc; i += 2) {
    if (i + 1 >= argc) die("a flag needs a value");
    const char *f = argv[i], *v = argv[i + 1];
    if (strcmp(f, "--requests") == 0)
      num_requests = atol(v);
    else if (strcmp(f, "--concurrency") == 0)
      concurrency = atol(v);
    else if (strcmp(f, "--seed") == 0)
      rng_state = strtoull(v, NULL, 10) * 2654435761u + 1;
    else if (strcmp(f, "--max-tokens") == 0)
      max_tokens = atoi(v);
    else if (strcmp(f, "--cut-percent") == 0)
      cut_percent = atoi(v);
    else if (strcmp(f, "--path") == 0)
      path = v;
    else
      die("unknown flag");
  }
  if (num_requests < 1 || concurrency < 1 || max_tokens < 1) die("counts must be >= 1");
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  if (getaddrinfo(argv[1], argv[2], &hints, &server) != 0) die("cannot resolve the host");
  if (concurrency > num_requests) concurrency = num_requests;
  Conn *conns = calloc((size_t)concurrency, sizeof *conns);
  int epfd = epoll_create1(0);
  long started = 0, finished = 0;
  for (long i = 0; i < concurrency; i++) conn_start(&conns[i], epfd, started++);
  struct epoll_event events[256];
  while (finished < num_requests) {
    int n = epoll_wait(epfd, events, 256, 60000);
    if (n == 0) die("no progress for 60 s");
    for (int i = 0; i < n; i++) {
      Conn *c = events[i].data.ptr;
      if (c->fd < 0 || !conn_step(c, epfd, events[i].events)) continue;
      finished++;
      if (started < num_requests) conn_start(c, epfd, started++);
    }
  }
  printf("requests %ld", num_requests);
  for (int f = 0; f < NUM_FATES; f++) printf(" %s %ld", FATE_NAMES[f], counts[f]);
  printf(" rst %ld bad %ld\n", num_rst, num_bad);
  for (long i = 0; i < concurrency; i++) free(conns[i].req), free(conns[i].in);
  free(conns);
  freeaddrinfo(server);
  close(epfd);
  return num_bad ? 1 : 0;
}
