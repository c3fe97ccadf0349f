// event_queue.c: mutex + condition variable ring buffer of TokenEvents, doubling when full.
#include "core/event_queue.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "common/check.h"

void event_queue_init(EventQueue *q) {
  *q = (EventQueue){0};
  pthread_mutex_init(&q->lock, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&q->nonempty, &attr);
  pthread_condattr_destroy(&attr);
}

void event_queue_free(EventQueue *q) {
  pthread_mutex_destroy(&q->lock);
  pthread_cond_destroy(&q->nonempty);
  free(q->events);
  *q = (EventQueue){0};
}

static void grow(EventQueue *q, size_t need) {
  if (q->len + need <= q->cap) return;
  size_t cap = q->cap ? q->cap : 256;
  while (cap < q->len + need) cap *= 2;
  TokenEvent *events = xmalloc(cap * sizeof *events);
  for (size_t i = 0; i < q->len; i++) events[i] = q->events[(q->head + i) % q->cap];
  free(q->events);
  q->events = events;
  q->cap = cap;
  q->head = 0;
}

void event_queue_push(EventQueue *q, const TokenEvent *events, size_t n) {
  if (n == 0) return;
  pthread_mutex_lock(&q->lock);
  grow(q, n);
  for (size_t i = 0; i < n; i++) q->events[(q->head + q->len + i) % q->cap] = events[i];
  q->len += n;
  pthread_cond_signal(&q->nonempty);
  pthread_mutex_unlock(&q->lock);
}

size_t event_queue_pop(EventQueue *q, TokenEvent *out, size_t max, int64_t timeout_ns) {
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  int64_t ns = deadline.tv_nsec + timeout_ns;
  deadline.tv_sec += (time_t)(ns / 1000000000);
  deadline.tv_nsec = (long)(ns % 1000000000);
  pthread_mutex_lock(&q->lock);
  while (q->len == 0 && timeout_ns > 0)
    if (pthread_cond_timedwait(&q->nonempty, &q->lock, &deadline) == ETIMEDOUT) break;
  size_t n = q->len < max ? q->len : max;
  for (size_t i = 0; i < n; i++) out[i] = q->events[(q->head + i) % q->cap];
  if (n) {
    q->head = (q->head + n) % q->cap;
    q->len -= n;
  }
  pthread_mutex_unlock(&q->lock);
  return n;
}
