// mock_waker.c: a min-heap of (due time, suspended connection) under a mutex, and the thread that
// sleeps on a CLOCK_MONOTONIC condition variable until the earliest is due and resumes it. Must
// not call MHD with its mutex held (MHD takes its own locks when resuming).
#include "bench/mock_waker.h"

#include <microhttpd.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

#include "common/check.h"
#include "common/clock.h"

static void heap_push(MockWaker *w, MockWake wake) {
  if (w->num_wakes == w->cap_wakes) {
    w->cap_wakes = w->cap_wakes ? 2 * w->cap_wakes : 256;
    w->wakes = xrealloc(w->wakes, w->cap_wakes * sizeof *w->wakes);
  }
  size_t i = w->num_wakes++;
  for (; i > 0 && w->wakes[(i - 1) / 2].due_ns > wake.due_ns; i = (i - 1) / 2)
    w->wakes[i] = w->wakes[(i - 1) / 2];
  w->wakes[i] = wake;
}

static MockWake heap_pop(MockWaker *w) {
  MockWake top = w->wakes[0], last = w->wakes[--w->num_wakes];
  size_t i = 0, n = w->num_wakes;
  for (size_t child; (child = 2 * i + 1) < n; i = child) {
    if (child + 1 < n && w->wakes[child + 1].due_ns < w->wakes[child].due_ns) child++;
    if (w->wakes[child].due_ns >= last.due_ns) break;
    w->wakes[i] = w->wakes[child];
  }
  if (n) w->wakes[i] = last;
  return top;
}

static void *waker_main(void *arg) {
  MockWaker *w = arg;
  prctl(PR_SET_TIMERSLACK, 1UL);  // wake on time, not up to 50 us late (the default slack)
  pthread_mutex_lock(&w->mu);
  while (!w->exiting) {
    if (w->num_wakes == 0) {
      pthread_cond_wait(&w->cv, &w->mu);
      continue;
    }
    int64_t due = w->wakes[0].due_ns;
    if (due > clock_now_ns()) {
      struct timespec ts = {(time_t)(due / 1000000000), (long)(due % 1000000000)};
      pthread_cond_timedwait(&w->cv, &w->mu, &ts);
      continue;
    }
    struct MHD_Connection *conn = heap_pop(w).conn;
    pthread_mutex_unlock(&w->mu);
    MHD_resume_connection(conn);  // safe from any thread; MHD wakes the connection's worker
    pthread_mutex_lock(&w->mu);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

bool mock_waker_start(MockWaker *w) {
  *w = (MockWaker){0};
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&w->cv, &attr);
  pthread_condattr_destroy(&attr);
  pthread_mutex_init(&w->mu, NULL);
  w->started = pthread_create(&w->thread, NULL, waker_main, w) == 0;
  return w->started;
}

bool mock_waker_suspend(MockWaker *w, struct MHD_Connection *conn, int64_t due_ns) {
  pthread_mutex_lock(&w->mu);
  bool ok = !w->refusing;
  if (ok) {
    MHD_suspend_connection(conn);
    heap_push(w, (MockWake){due_ns, conn});
    if (w->wakes[0].conn == conn) pthread_cond_signal(&w->cv);  // a new earliest wake-up
  }
  pthread_mutex_unlock(&w->mu);
  return ok;
}

void mock_waker_release_all(MockWaker *w) {
  pthread_mutex_lock(&w->mu);
  w->refusing = true;
  while (w->num_wakes) {
    struct MHD_Connection *conn = heap_pop(w).conn;
    pthread_mutex_unlock(&w->mu);
    MHD_resume_connection(conn);
    pthread_mutex_lock(&w->mu);
  }
  pthread_mutex_unlock(&w->mu);
}

void mock_waker_free(MockWaker *w) {
  if (w->started) {
    pthread_mutex_lock(&w->mu);
    w->exiting = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
  }
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  free(w->wakes);
  *w = (MockWaker){0};
}
