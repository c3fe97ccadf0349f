// api_guard.h: keeps slow and idle clients from holding the server's connections.
// libmicrohttpd times a connection out only after a stretch of silence, so a client that sends one
// byte a second would keep its connection (and a file descriptor) forever. The guard gives each
// request a deadline to arrive: its request line, headers and body must be in within timeout_s
// seconds, plus one second per min_rate body bytes (a large body may come slowly at that rate),
// counted from the connection's start or from the end of its previous answer, so an idle
// keep-alive connection is closed after the same time (uvicorn, vLLM's server, allows 5 s). A
// watchdog thread cuts late connections with shutdown(); libmicrohttpd then sees the end of the
// stream and closes them on its own thread. Once a request is in, its connection is left alone
// until its answer is done: answers may take minutes. While an answer is pending the connection
// is suspended, and libmicrohttpd does not notice a client that leaves; the watchdog does (the
// hang-up watch), so the request can be aborted and its KV blocks freed at once rather than
// when its last token fails to go out. A client that only half-closes (shutdown(SHUT_WR) after
// its request) still gets its whole answer: the end of its sending is not a hang-up. A client
// that closed its socket looks the same until the server writes to it, so the watch then asks
// the request's probe to write (a stream's next token; a whole answer's interim response), and
// the reset that a gone client sends back is the hang-up. Holds no pointer to libmicrohttpd's
// connections beyond their lifetime (it learns of each close before the socket is closed).
#ifndef GE_API_API_GUARD_H
#define GE_API_API_GUARD_H

#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct ApiGuardConn ApiGuardConn;

typedef struct {
  pthread_mutex_t mu;  // guards the list and every ApiGuardConn
  pthread_cond_t wake;
  ApiGuardConn *head;  // open connections
  int64_t timeout_ns;
  double min_rate;  // body bytes per second that earn one more second
  bool exiting;
  bool started;
  pthread_t thread;
  atomic_uint_fast64_t num_cut;      // connections cut so far
  atomic_uint_fast64_t num_hangups;  // clients seen leaving while their answer was pending
  struct pollfd *watch_fds;          // the watchdog's: sockets of pending answers
  ApiGuardConn **watch_conns;
  size_t watch_cap;
} ApiGuard;

// Starts the watchdog thread (timeout_s 0: it never cuts). False when it cannot be created.
bool api_guard_start(ApiGuard *g, int timeout_s, double min_rate);

// libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION callback (cls: the ApiGuard).
void api_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode code);

// n more body bytes arrived on conn: its deadline moves by n / min_rate seconds.
void api_guard_body(ApiGuard *g, struct MHD_Connection *conn, size_t n);
// conn's request is in whole: no deadline until its answer is done.
void api_guard_request_in(ApiGuard *g, struct MHD_Connection *conn);
// conn's answer is pending: if the client goes (its socket reports a reset, an error or a
// hang-up) before the answer is done, on_hangup(arg) is called once. While the client has ended
// its sending, probe(arg, fd) (may be NULL) is called each scan until it returns true; it may
// write to fd to provoke the reset of a gone client. Both run on the watchdog thread with the
// guard's lock held (they must only ask for an abort, or write without blocking);
// api_guard_answered ends the watch, so arg may be freed after it.
void api_guard_watch_hangup(ApiGuard *g, struct MHD_Connection *conn, void (*on_hangup)(void *arg),
                            bool (*probe)(void *arg, int fd), void *arg);
// conn's answer is done: the deadline for its next request starts now.
void api_guard_answered(ApiGuard *g, struct MHD_Connection *conn);

uint64_t api_guard_num_cut(ApiGuard *g);
uint64_t api_guard_num_hangups(ApiGuard *g);

// Ends the watchdog and frees the guard; call after libmicrohttpd has stopped.
void api_guard_stop(ApiGuard *g);

#endif
