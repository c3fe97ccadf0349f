// client_loop.c: one event-loop thread of client_run: a libcurl multi handle driven by the
// socket API on epoll, with a timerfd for both curl's timeouts and the next intended send time.
// Owns the transfers (easy handles reused across requests), admission under the loop's share of
// the concurrency cap, and turning curl outcomes into FailureKinds. Must not interpret SSE or
// JSON (openai_stream.c does) nor build bodies (request_body.c).
#include "bench/client_loop.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "bench/client_internal.h"
#include "bench/openai_stream.h"
#include "bench/request_body.h"
#include "common/check.h"
#include "common/clock.h"

enum { ERROR_BODY_MAX = 1024, MAX_EVENTS = 256 };
#define CANCEL_POLL_NS (100 * INT64_C(1000000))

struct Transfer {
  CURL *easy;
  size_t index;               // the request it carries
  char *body;                 // its JSON body (cJSON_free)
  Buf id_header;              // "x-request-id: <prefix><index>"
  struct curl_slist id_node;  // id_header in front of the run's shared header list
  OaiStream stream;
  Buf error_body;   // first ERROR_BODY_MAX bytes of a non-200 answer
  int http_status;  // from the last status line; 0 until one arrives
  char reason[64];  // its reason phrase
  char curl_error[CURL_ERROR_SIZE];
  Transfer *next_free;
  Transfer *next_all;
};

// ---- results --------------------------------------------------------------------------------

void client_result_fail(RequestResult *r, FailureKind kind, const char *fmt, ...) {
  Buf msg = {0};
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  buf_reserve(&msg, n > 0 ? (size_t)n : 0);
  va_start(ap, fmt);
  vsnprintf(msg.data, msg.cap, fmt, ap);
  va_end(ap);
  free(r->error);
  r->error = msg.data;
  r->success = false;
  r->failure = kind;
}

static const char *curl_reason(const Transfer *t, CURLcode rc) {
  return t->curl_error[0] ? t->curl_error : curl_easy_strerror(rc);
}

// Final verdict: transport and HTTP failures override what the stream alone said.
static void classify(const ClientLoop *l, Transfer *t, CURLcode rc, RequestResult *r) {
  r->http_status = t->http_status;
  if (rc == CURLE_OPERATION_TIMEDOUT)
    client_result_fail(r, FAILURE_TIMEOUT, "timed out after %.3f s: %s", l->o->timeout_ns / 1e9,
                       curl_reason(t, rc));
  else if (t->http_status == 0)
    client_result_fail(r, FAILURE_CONNECTION, "%s",
                       rc == CURLE_OK ? "no HTTP status line" : curl_reason(t, rc));
  else if (t->http_status != 200)
    client_result_fail(r, FAILURE_HTTP_STATUS, "HTTP %d %s%s%s", t->http_status, t->reason,
                       t->error_body.len ? ": " : "", t->error_body.len ? t->error_body.data : "");
  else if (rc != CURLE_OK && !t->stream.error)
    client_result_fail(r, FAILURE_STREAM, "stream broke after %zu events: %s",
                       r->num_itl + t->stream.got_choices, curl_reason(t, rc));
}

// ---- curl callbacks -------------------------------------------------------------------------

static size_t on_header(char *line, size_t size, size_t nmemb, void *userp) {
  Transfer *t = userp;
  size_t n = size * nmemb;
  if (n > 5 && memcmp(line, "HTTP/", 5) == 0) {
    char copy[160];
    size_t len = n < sizeof copy - 1 ? n : sizeof copy - 1;
    memcpy(copy, line, len);
    copy[len] = '\0';
    int status = 0, reason_at = 0;
    if (sscanf(copy, "HTTP/%*s %d %n", &status, &reason_at) >= 1) {
      t->http_status = status;
      const char *reason = reason_at ? copy + reason_at : "";
      size_t rlen = strcspn(reason, "\r\n");
      if (rlen >= sizeof t->reason) rlen = sizeof t->reason - 1;
      memcpy(t->reason, reason, rlen);
      t->reason[rlen] = '\0';
      buf_clear(&t->error_body);
    }
  }
  return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userp) {
  Transfer *t = userp;
  size_t n = size * nmemb;
  if (t->http_status != 200) {
    size_t room = ERROR_BODY_MAX - t->error_body.len;
    buf_append(&t->error_body, data, n < room ? n : room);
    return n;
  }
  return oai_stream_feed(&t->stream, data, n, clock_now_ns()) ? n : 0;  // 0 aborts the transfer
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
  (void)easy;
  ClientLoop *l = userp;
  if (what == CURL_POLL_REMOVE) {
    epoll_ctl(l->epoll_fd, EPOLL_CTL_DEL, fd, NULL);  // may already be gone with the socket
    return 0;
  }
  struct epoll_event ev = {
      .events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u),
      .data.fd = fd};
  int op = socketp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  if (epoll_ctl(l->epoll_fd, op, fd, &ev) != 0 &&
      epoll_ctl(l->epoll_fd, op == EPOLL_CTL_ADD ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) != 0) {
    snprintf(l->error, sizeof l->error, "epoll_ctl on a socket: %s", strerror(errno));
    return -1;
  }
  if (!socketp) curl_multi_assign(l->multi, fd, l);  // marks it as registered
  return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp) {
  (void)multi;
  ClientLoop *l = userp;
  l->curl_deadline_ns = timeout_ms < 0 ? INT64_MAX : clock_now_ns() + timeout_ms * 1000000LL;
  return 0;
}

// ---- transfers ------------------------------------------------------------------------------

static Transfer *transfer_new(ClientLoop *l) {
  Transfer *t = xcalloc(1, sizeof *t);
  t->easy = curl_easy_init();
  CHECK(t->easy != NULL);  // fails only without memory
  CURL *e = t->easy;
  curl_easy_setopt(e, CURLOPT_URL, l->o->url);
  curl_easy_setopt(e, CURLOPT_POST, 1L);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, l->headers);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->curl_error);
  curl_easy_setopt(e, CURLOPT_PRIVATE, t);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, client_timeout_ms(l->o->timeout_ns));
  t->next_all = l->all_transfers;
  l->all_transfers = t;
  return t;
}

static void transfer_start(ClientLoop *l, size_t i) {
  Transfer *t = l->free_transfers;
  if (t)
    l->free_transfers = t->next_free;
  else
    t = transfer_new(l);
  t->index = i;
  t->http_status = 0;
  t->reason[0] = t->curl_error[0] = '\0';
  buf_clear(&t->error_body);
  t->body = request_body_build(l->o, &l->reqs[i]);
  curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, t->body);
  curl_easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(t->body));
  if (l->o->request_id_prefix) {
    buf_clear(&t->id_header);
    buf_printf(&t->id_header, "x-request-id: %s%zu", l->o->request_id_prefix, i);
    t->id_node = (struct curl_slist){t->id_header.data, l->headers};
    curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, &t->id_node);
  }
  RequestResult *r = &l->results[i];
  r->start_ns = clock_now_ns();
  // It could have gone at its intended time, or when the slot it takes freed if it had to wait.
  r->ready_ns = l->intended_ns[i];
  if (l->cap && l->slot_freed_ns > r->ready_ns) r->ready_ns = l->slot_freed_ns;
  oai_stream_begin(&t->stream, l->o->endpoint, r, l->reqs[i].expected_output_len, &l->json,
                   &l->stamp_lags);
  CHECK(curl_multi_add_handle(l->multi, t->easy) == CURLM_OK);
  l->num_in_flight++;
  unsigned now_in = atomic_fetch_add(&l->shared->in_flight, 1) + 1;
  unsigned peak = atomic_load(&l->shared->peak);
  while (now_in > peak && !atomic_compare_exchange_weak(&l->shared->peak, &peak, now_in)) {
  }
}

static void transfer_finish(ClientLoop *l, Transfer *t, CURLcode rc) {
  RequestResult *r = &l->results[t->index];
  oai_stream_end(&t->stream, rc == CURLE_OK && t->http_status == 200, clock_now_ns());
  classify(l, t, rc, r);
  cJSON_free(t->body);
  t->body = NULL;
  t->next_free = l->free_transfers;
  l->free_transfers = t;
  l->num_in_flight--;
  l->slot_freed_ns = clock_now_ns();
  l->num_pending--;
  atomic_fetch_sub(&l->shared->in_flight, 1);
  if (l->o->num_finished) atomic_fetch_add(l->o->num_finished, 1);
}

static void collect_finished(ClientLoop *l) {
  CURLMsg *msg;
  int left;
  while ((msg = curl_multi_info_read(l->multi, &left))) {
    if (msg->msg != CURLMSG_DONE) continue;
    CURL *easy = msg->easy_handle;
    CURLcode rc = msg->data.result;  // msg is invalid once the handle is removed
    Transfer *t;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&t);
    curl_multi_remove_handle(l->multi, easy);
    transfer_finish(l, t, rc);
  }
}

// ---- the loop -------------------------------------------------------------------------------

static bool slot_free(const ClientLoop *l) {
  return l->next < l->num_requests && (l->cap == 0 || l->num_in_flight < l->cap);
}

static void admit_due(ClientLoop *l) {
  while (slot_free(l) && l->intended_ns[l->next] <= clock_now_ns()) {
    transfer_start(l, l->next);
    l->next += l->stride;
  }
}

static bool cancelled(const ClientLoop *l) { return l->o->cancel && *l->o->cancel; }

// The caller cancelled the run: each of the loop's requests not sent yet fails now.
static void drop_unsent(ClientLoop *l) {
  for (; l->next < l->num_requests; l->next += l->stride) {
    RequestResult *r = &l->results[l->next];
    r->generated_text = xstrdup("");
    client_result_fail(r, FAILURE_CONNECTION, "cancelled before it was sent");
    l->num_pending--;  // not counted in num_finished: it never ran
  }
}

static void socket_action(ClientLoop *l, curl_socket_t fd, int flags) {
  int running;
  curl_multi_socket_action(l->multi, fd, flags, &running);
}

static bool arm_timer(ClientLoop *l, int64_t at_ns) {
  if (at_ns == l->armed_ns) return true;
  struct itimerspec its = {0};
  if (at_ns != INT64_MAX)
    its.it_value = (struct timespec){(time_t)(at_ns / 1000000000), (long)(at_ns % 1000000000)};
  if (timerfd_settime(l->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) != 0) {
    snprintf(l->error, sizeof l->error, "timerfd_settime: %s", strerror(errno));
    return false;
  }
  l->armed_ns = at_ns;
  return true;
}

static void wait_events(ClientLoop *l) {
  struct epoll_event evs[MAX_EVENTS];
  int n;
  do  // busy polling: the armed timer ends the spin at the next deadline
    n = epoll_wait(l->epoll_fd, evs, MAX_EVENTS, l->o->busy_poll ? 0 : -1);
  while (n == 0);
  if (n < 0 && errno != EINTR)
    snprintf(l->error, sizeof l->error, "epoll_wait: %s", strerror(errno));
  for (int i = 0; i < n; i++) {
    int fd = evs[i].data.fd;
    if (fd == l->timer_fd) {
      uint64_t expirations;  // only drained: deadlines are checked against the clock
      ssize_t got = read(fd, &expirations, sizeof expirations);
      (void)got;
      l->armed_ns = INT64_MAX;
      continue;
    }
    uint32_t e = evs[i].events;
    int flags = ((e & EPOLLIN) ? CURL_CSELECT_IN : 0) | ((e & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                ((e & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
    socket_action(l, fd, flags);
  }
}

void client_loop_run(ClientLoop *l) {
  while (!l->error[0]) {
    collect_finished(l);
    if (cancelled(l)) drop_unsent(l);
    if (l->num_pending == 0) break;
    admit_due(l);
    int64_t now = clock_now_ns();
    if (l->curl_deadline_ns <= now) {
      l->curl_deadline_ns = INT64_MAX;  // the action may set a new one
      socket_action(l, CURL_SOCKET_TIMEOUT, 0);
      continue;
    }
    int64_t wake = l->curl_deadline_ns;
    if (slot_free(l) && l->intended_ns[l->next] < wake) wake = l->intended_ns[l->next];
    if (l->o->cancel && wake > now + CANCEL_POLL_NS) wake = now + CANCEL_POLL_NS;
    if (arm_timer(l, wake)) wait_events(l);
  }
}

bool client_loop_init(ClientLoop *l, char *err, size_t err_size) {
  l->curl_deadline_ns = l->armed_ns = INT64_MAX;
  l->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  l->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  l->multi = curl_multi_init();
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = l->timer_fd};
  if (l->epoll_fd < 0 || l->timer_fd < 0 || !l->multi ||
      epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, l->timer_fd, &ev) != 0) {
    snprintf(err, err_size, "cannot set up the client's event loop: %s", strerror(errno));
    return false;
  }
  curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
  curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, on_timer);
  curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
  return true;
}

void client_loop_free(ClientLoop *l) {
  Transfer *next;
  for (Transfer *t = l->all_transfers; t; t = next) {
    next = t->next_all;
    if (t->body) {  // still in flight: the loop stopped on an error
      curl_multi_remove_handle(l->multi, t->easy);
      cJSON_free(t->body);
    }
    curl_easy_cleanup(t->easy);
    oai_stream_free(&t->stream);
    buf_free(&t->id_header);
    buf_free(&t->error_body);
    free(t);
  }
  json_scratch_free(&l->json);
  if (l->multi) curl_multi_cleanup(l->multi);
  if (l->epoll_fd >= 0) close(l->epoll_fd);
  if (l->timer_fd >= 0) close(l->timer_fd);
}
