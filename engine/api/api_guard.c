// api_guard.c: the request-arrival deadlines, the hang-up watch and their watchdog thread.
// libmicrohttpd tells the guard of each connection's start and close (the close before the
// socket is closed, under the same mutex the watchdog holds while it looks at sockets), so a
// socket the watchdog polls or shuts down is always still the connection's own. Must not call
// libmicrohttpd from the watchdog: it only polls and shuts down sockets, and libmicrohttpd closes
// them on its own thread.
#include "api/api_guard.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "common/check.h"
#include "common/clock.h"

enum { SCAN_INTERVAL_MS = 200 };

struct ApiGuardConn {
  ApiGuardConn *prev, *next;
  int fd;
  bool receiving;                // a request is (or may be) arriving: the deadline runs
  bool cut;                      // shut down already
  int64_t since_ns;              // when the request started to arrive (or the last answer ended)
  uint64_t body_bytes;           // of the request arriving
  void (*on_hangup)(void *arg);  // while an answer is pending: called once if the client leaves
  bool (*probe)(void *arg, int fd);  // called while the client's end is closed, until true
  void *hangup_arg;
};

static ApiGuardConn *conn_of(struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *info =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info ? info->socket_context : NULL;
}

static bool late(const ApiGuard *g, const ApiGuardConn *c, int64_t now) {
  double allowed_ns = (double)g->timeout_ns + (double)c->body_bytes / g->min_rate * 1e9;
  return g->timeout_ns > 0 && c->receiving && !c->cut && (double)(now - c->since_ns) > allowed_ns;
}

// Under mu: one poll over every watched socket. A reset or an error (POLLERR, POLLHUP: the client
// is gone) calls its request's on_hangup. The end of the client's sending alone (POLLRDHUP) is a
// half-close or a close, which TCP cannot tell apart until the server writes: the request goes
// on, and its probe is asked to write something (a gone client answers that with a reset).
static void watch_hangups(ApiGuard *g) {
  size_t n = 0;
  for (ApiGuardConn *c = g->head; c; c = c->next) {
    if (!c->on_hangup) continue;
    if (n == g->watch_cap) {
      g->watch_cap = g->watch_cap ? 2 * g->watch_cap : 64;
      g->watch_fds = xrealloc(g->watch_fds, g->watch_cap * sizeof *g->watch_fds);
      g->watch_conns = xrealloc(g->watch_conns, g->watch_cap * sizeof *g->watch_conns);
    }
    g->watch_fds[n] = (struct pollfd){.fd = c->fd, .events = POLLRDHUP};
    g->watch_conns[n++] = c;
  }
  if (n == 0 || poll(g->watch_fds, n, 0) <= 0) return;
  for (size_t i = 0; i < n; i++) {
    ApiGuardConn *c = g->watch_conns[i];
    short revents = g->watch_fds[i].revents;
    if (!(revents & (POLLHUP | POLLERR))) {
      if ((revents & POLLRDHUP) && c->probe && c->probe(c->hangup_arg, c->fd)) c->probe = NULL;
      continue;
    }
    void (*on_hangup)(void *) = c->on_hangup;
    c->on_hangup = NULL;
    on_hangup(c->hangup_arg);
    atomic_fetch_add(&g->num_hangups, 1);
  }
}

static void *watchdog_main(void *arg) {
  ApiGuard *g = arg;
  pthread_mutex_lock(&g->mu);
  while (!g->exiting) {
    int64_t now = clock_now_ns();
    for (ApiGuardConn *c = g->head; c; c = c->next)
      if (late(g, c, now)) {
        shutdown(c->fd, SHUT_RDWR);
        c->cut = true;
        atomic_fetch_add(&g->num_cut, 1);
      }
    watch_hangups(g);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += SCAN_INTERVAL_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&g->wake, &g->mu, &until);
  }
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

bool api_guard_start(ApiGuard *g, int timeout_s, double min_rate) {
  *g = (ApiGuard){.timeout_ns = (int64_t)timeout_s * 1000000000, .min_rate = min_rate};
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->wake, NULL);
  atomic_init(&g->num_cut, 0);
  atomic_init(&g->num_hangups, 0);
  g->started = pthread_create(&g->thread, NULL, watchdog_main, g) == 0;
  return g->started;
}

void api_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode code) {
  ApiGuard *g = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    ApiGuardConn *c = xcalloc(1, sizeof *c);
    *c = (ApiGuardConn){
        .fd = info ? info->connect_fd : -1, .receiving = info != NULL, .since_ns = clock_now_ns()};
    pthread_mutex_lock(&g->mu);
    c->next = g->head;
    if (g->head) g->head->prev = c;
    g->head = c;
    pthread_mutex_unlock(&g->mu);
    *socket_context = c;
    return;
  }
  ApiGuardConn *c = *socket_context;
  if (!c) return;
  pthread_mutex_lock(&g->mu);
  if (c->prev)
    c->prev->next = c->next;
  else
    g->head = c->next;
  if (c->next) c->next->prev = c->prev;
  pthread_mutex_unlock(&g->mu);
  free(c);
  *socket_context = NULL;
}

void api_guard_body(ApiGuard *g, struct MHD_Connection *conn, size_t n) {
  ApiGuardConn *c = conn_of(conn);
  if (!c) return;
  pthread_mutex_lock(&g->mu);
  c->body_bytes += n;
  pthread_mutex_unlock(&g->mu);
}

void api_guard_request_in(ApiGuard *g, struct MHD_Connection *conn) {
  ApiGuardConn *c = conn_of(conn);
  if (!c) return;
  pthread_mutex_lock(&g->mu);
  c->receiving = false;
  pthread_mutex_unlock(&g->mu);
}

void api_guard_watch_hangup(ApiGuard *g, struct MHD_Connection *conn, void (*on_hangup)(void *arg),
                            bool (*probe)(void *arg, int fd), void *arg) {
  ApiGuardConn *c = conn_of(conn);
  if (!c || c->fd < 0) return;
  pthread_mutex_lock(&g->mu);
  c->on_hangup = on_hangup;
  c->probe = probe;
  c->hangup_arg = arg;
  pthread_mutex_unlock(&g->mu);
}

void api_guard_answered(ApiGuard *g, struct MHD_Connection *conn) {
  ApiGuardConn *c = conn_of(conn);
  if (!c) return;
  pthread_mutex_lock(&g->mu);
  c->on_hangup = NULL;
  c->probe = NULL;
  c->receiving = c->fd >= 0;
  c->since_ns = clock_now_ns();
  c->body_bytes = 0;
  pthread_mutex_unlock(&g->mu);
}

uint64_t api_guard_num_cut(ApiGuard *g) { return atomic_load(&g->num_cut); }
uint64_t api_guard_num_hangups(ApiGuard *g) { return atomic_load(&g->num_hangups); }

void api_guard_stop(ApiGuard *g) {
  if (g->started) {
    pthread_mutex_lock(&g->mu);
    g->exiting = true;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    g->started = false;
  }
  free(g->watch_fds);
  free(g->watch_conns);
  pthread_cond_destroy(&g->wake);
  pthread_mutex_destroy(&g->mu);
}
