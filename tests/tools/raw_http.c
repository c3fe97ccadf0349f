// raw_http.c: a test client that sends bytes to an HTTP server exactly as given (malformed
// request lines, header floods, lying Content-Length, invalid UTF-8), at full speed or one byte
// every --slow-ms (after --fast-bytes at once: a quick head, then a slow body), and reads the
// answer while it sends, so an early answer or a cut-off is seen. After sending it can
// half-close (--half-close: shutdown(SHUT_WR), then read the whole answer) or hang up
// (--close-after-ms: close the socket that long after the last byte went out). Interim 1xx
// answers ("100 Continue") are skipped: STATUS is the final answer's.
// Prints one line "STATUS SENT_BYTES ELAPSED_MS END" (STATUS 0: no status line; END: answered,
// closed, reset or timeout) and writes the answer's body (de-chunked) to --body. Knows nothing of
// the server under test; libc only.
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char USAGE[] =
    "usage: raw_http HOST PORT [--slow-ms N [--fast-bytes K]] [--timeout-ms N] [--body FILE]\n"
    "                [--half-close | --close-after-ms N] < REQUEST\n"
    "  sends REQUEST's bytes (with --slow-ms, the first K at once and then one every N ms),\n"
    "  reads the answer until it is complete, the server closes, or --timeout-ms (default\n"
    "  30000) passes; prints\n"
    "  \"STATUS SENT_BYTES ELAPSED_MS END\" with END one of answered, closed, reset, timeout,\n"
    "  hung-up (--close-after-ms)\n";

static void die(const char *msg) {
  fprintf(stderr, "raw_http: %s\n%s", msg, USAGE);
  exit(2);
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

typedef struct {
  char *data;
  size_t len, cap;
} Bytes;

static void bytes_append(Bytes *b, const char *p, size_t n) {
  if (b->len + n + 1 > b->cap) {
    b->cap = (b->len + n + 1) * 2;
    b->data = realloc(b->data, b->cap);
    if (!b->data) die("out of memory");
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
}

static Bytes read_all(FILE *f) {
  Bytes b = {0};
  char block[1 << 16];
  size_t n;
  while ((n = fread(block, 1, sizeof block, f)) > 0) bytes_append(&b, block, n);
  if (!b.data) bytes_append(&b, "", 0);
  return b;
}

static int connect_to(const char *host, const char *port) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
  if (getaddrinfo(host, port, &hints, &ai) != 0) die("cannot resolve the host");
  int fd = socket(ai->ai_family, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) die("cannot connect");
  freeaddrinfo(ai);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

// The answer so far: its status (0 until the status line is in) and whether it is complete;
// the body, de-chunked, into *body once complete.
static bool answer_complete(const Bytes *all, int *status, Bytes *body) {
  *status = 0;
  Bytes final = *all;  // past any complete interim 1xx answers
  for (const char *head_end; final.len >= 12 && strncmp(final.data, "HTTP/1.1 1", 10) == 0 &&
                             (head_end = strstr(final.data, "\r\n\r\n"));) {
    final.len -= (size_t)(head_end + 4 - final.data);
    final.data = (char *)head_end + 4;
  }
  const Bytes *in = &final;
  if (in->len < 12 || strncmp(in->data, "HTTP/", 5) != 0) return false;
  const char *sp = strchr(in->data, ' ');
  if (sp) *status = atoi(sp + 1);
  const char *end = strstr(in->data, "\r\n\r\n");
  if (!end) return false;
  const char *p = end + 4;
  size_t head_len = (size_t)(p - in->data);
  bool chunked = false;
  long long length = -1;
  for (const char *line = strstr(in->data, "\r\n") + 2; line < end;
       line = strstr(line, "\r\n") + 2) {
    if (strncasecmp(line, "Content-Length:", 15) == 0) length = atoll(line + 15);
    if (strncasecmp(line, "Transfer-Encoding:", 18) == 0 && strstr(line, "chunked") &&
        strstr(line, "chunked") < strstr(line, "\r\n"))
      chunked = true;
  }
  body->len = 0;
  if (!chunked) {
    if (length < 0) return false;  // until the server closes
    if (in->len - head_len < (size_t)length) return false;
    bytes_append(body, p, (size_t)length);
    return true;
  }
  for (;;) {
    const char *eol = strstr(p, "\r\n");
    if (!eol) return false;
    size_t size = strtoul(p, NULL, 16);
    if (size == 0) return strncmp(eol, "\r\n\r\n", 4) == 0;  // no trailers
    if ((size_t)(in->data + in->len - (eol + 2)) < size + 2) return false;
    bytes_append(body, eol + 2, size);
    p = eol + 2 + size + 2;
  }
}

int main(int argc, char **argv) {
  if (argc < 3) die("give HOST and PORT");
  long slow_ms = 0, timeout_ms = 30000, fast_bytes = 0, close_after_ms = -1;
  bool half_close = false;
  const char *body_path = NULL;
  for (int i = 3; i < argc; i++) {
    if (strcmp(argv[i], "--half-close") == 0) {
      half_close = true;
      continue;
    }
    if (i + 1 >= argc) die("a flag needs a value");
    if (strcmp(argv[i], "--slow-ms") == 0)
      slow_ms = atol(argv[++i]);
    else if (strcmp(argv[i], "--timeout-ms") == 0)
      timeout_ms = atol(argv[++i]);
    else if (strcmp(argv[i], "--fast-bytes") == 0)
      fast_bytes = atol(argv[++i]);
    else if (strcmp(argv[i], "--body") == 0)
      body_path = argv[++i];
    else if (strcmp(argv[i], "--close-after-ms") == 0)
      close_after_ms = atol(argv[++i]);
    else
      die("unknown flag");
  }
  Bytes req = read_all(stdin), in = {0}, body = {0};
  bytes_append(&in, "", 0);
  int fd = connect_to(argv[1], argv[2]);
  long long start = now_ms(), next_send = start, sent_all = -1;
  size_t sent = 0;
  int status = 0;
  const char *end = "timeout";
  bool sending = true;
  for (;;) {
    long long now = now_ms();
    if (now - start >= timeout_ms) break;
    if (sent_all < 0 && sent == req.len) {
      sent_all = now;
      if (half_close) shutdown(fd, SHUT_WR);
    }
    if (close_after_ms >= 0 && sent_all >= 0 && now - sent_all >= close_after_ms) {
      end = "hung-up";
      break;
    }
    bool due = sending && sent < req.len && now >= next_send;
    int wait = (int)(start + timeout_ms - now);
    if (close_after_ms >= 0 && sent_all >= 0 && sent_all + close_after_ms - now < wait)
      wait = (int)(sent_all + close_after_ms - now);
    if (sending && sent < req.len && !due && next_send - now < wait) wait = (int)(next_send - now);
    struct pollfd pfd = {.fd = fd, .events = POLLIN | (due ? POLLOUT : 0)};
    if (poll(&pfd, 1, wait) < 0 && errno != EINTR) die("poll failed");
    if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
      char block[1 << 16];
      ssize_t n = recv(fd, block, sizeof block, 0);
      if (n > 0) {
        bytes_append(&in, block, (size_t)n);
        if (answer_complete(&in, &status, &body)) {
          end = "answered";
          break;
        }
        continue;
      }
      if (n == 0 || errno == ECONNRESET || errno == EPIPE) {
        end = n == 0 ? "closed" : "reset";
        break;
      }
      if (errno != EAGAIN && errno != EINTR) die("recv failed");
    }
    if (pfd.revents & POLLOUT) {
      size_t want = !slow_ms                    ? req.len - sent
                    : sent < (size_t)fast_bytes ? (size_t)fast_bytes - sent
                                                : 1;
      if (want > req.len - sent) want = req.len - sent;
      ssize_t n = send(fd, req.data + sent, want, MSG_NOSIGNAL);
      if (n > 0) {
        sent += (size_t)n;
        next_send = now_ms() + slow_ms;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        sending = false;  // the server stopped reading: keep reading its answer
      }
    }
  }
  if (status == 0) answer_complete(&in, &status, &body);
  if (strcmp(end, "closed") == 0 && status && body.len == 0) {  // an answer ended by close
    const char *p = strstr(in.data, "\r\n\r\n");
    if (p) bytes_append(&body, p + 4, in.len - (size_t)(p + 4 - in.data));
  }
  if (body_path) {
    FILE *f = fopen(body_path, "wb");
    if (!f) die("cannot write --body");
    fwrite(body.data ? body.data : "", 1, body.len, f);
    fclose(f);
  }
  printf("%d %zu %lld %s\n", status, sent, now_ms() - start, end);
  close(fd);
  free(req.data);
  free(in.data);
  free(body.data);
  return 0;
}
