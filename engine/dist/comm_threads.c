// comm_threads.c: the shared-memory communicator (comm_threads.h). A collective publishes each
// rank's buffer in the group's slots, meets at a barrier, lets every rank work on its own share
// (a sum of its chunk of the elements, or a copy), and meets again before anyone reuses a buffer.
// Point-to-point transfers go through one mailbox per (sender, receiver) pair.
#include "dist/comm_threads.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  const void *data;  // the sender's buffer while full
  size_t bytes;
  bool full;
} Mailbox;

struct ThreadGroup {
  int size;
  pthread_barrier_t barrier;
  const void **slots;  // [size] each rank's buffer in the current collective
  Mailbox *mail;       // [size * size] sender * size + receiver
};

ThreadGroup *thread_group_create(int size) {
  CHECK(size >= 1);
  ThreadGroup *g = xcalloc(1, sizeof *g);
  g->size = size;
  pthread_barrier_init(&g->barrier, NULL, (unsigned)size);
  g->slots = xcalloc((size_t)size, sizeof *g->slots);
  g->mail = xcalloc((size_t)size * (size_t)size, sizeof *g->mail);
  for (int i = 0; i < size * size; i++) {
    pthread_mutex_init(&g->mail[i].lock, NULL);
    pthread_cond_init(&g->mail[i].changed, NULL);
  }
  return g;
}

void thread_group_free(ThreadGroup *g) {
  if (!g) return;  // NULL: nothing
  for (int i = 0; i < g->size * g->size; i++) {
    pthread_mutex_destroy(&g->mail[i].lock);
    pthread_cond_destroy(&g->mail[i].changed);
  }
  pthread_barrier_destroy(&g->barrier);
  free(g->mail);
  free(g->slots);
  free(g);
}

static ThreadGroup *group_of(Comm *c) { return c->state; }

static void threads_barrier(Comm *c) { pthread_barrier_wait(&group_of(c)->barrier); }

// Publishes this rank's buffer and waits until every rank has published its own.
static void publish(Comm *c, const void *buf) {
  group_of(c)->slots[c->rank] = buf;
  threads_barrier(c);
}

static void threads_all_reduce_sum(Comm *c, float *buf, size_t n) {
  ThreadGroup *g = group_of(c);
  publish(c, buf);
  const size_t begin = n * (size_t)c->rank / (size_t)g->size;
  const size_t end = n * (size_t)(c->rank + 1) / (size_t)g->size;
  float *const *bufs = (float *const *)g->slots;
  for (size_t i = begin; i < end; i++) {
    float sum = bufs[0][i];
    for (int r = 1; r < g->size; r++) sum += bufs[r][i];
    for (int r = 0; r < g->size; r++) bufs[r][i] = sum;
  }
  threads_barrier(c);
}

static void threads_all_gather(Comm *c, const float *send, size_t n, float *recv) {
  ThreadGroup *g = group_of(c);
  publish(c, send);
  for (int r = 0; r < g->size; r++) memcpy(recv + (size_t)r * n, g->slots[r], n * sizeof(float));
  threads_barrier(c);
}

static void threads_broadcast(Comm *c, void *buf, size_t bytes, int root) {
  ThreadGroup *g = group_of(c);
  CHECK(root >= 0 && root < g->size);
  publish(c, buf);
  if (c->rank != root) memcpy(buf, g->slots[root], bytes);
  threads_barrier(c);
}

static void threads_send(Comm *c, const void *buf, size_t bytes, int peer) {
  ThreadGroup *g = group_of(c);
  CHECK(peer >= 0 && peer < g->size && peer != c->rank);
  Mailbox *m = &g->mail[c->rank * g->size + peer];
  pthread_mutex_lock(&m->lock);
  while (m->full) pthread_cond_wait(&m->changed, &m->lock);
  m->data = buf;
  m->bytes = bytes;
  m->full = true;
  pthread_cond_broadcast(&m->changed);
  while (m->full) pthread_cond_wait(&m->changed, &m->lock);  // until the receiver copied it
  pthread_mutex_unlock(&m->lock);
}

static void threads_recv(Comm *c, void *buf, size_t bytes, int peer) {
  ThreadGroup *g = group_of(c);
  CHECK(peer >= 0 && peer < g->size && peer != c->rank);
  Mailbox *m = &g->mail[peer * g->size + c->rank];
  pthread_mutex_lock(&m->lock);
  while (!m->full) pthread_cond_wait(&m->changed, &m->lock);
  CHECK(m->bytes == bytes);
  memcpy(buf, m->data, bytes);
  m->full = false;
  pthread_cond_broadcast(&m->changed);
  pthread_mutex_unlock(&m->lock);
}

static void threads_destroy(Comm *c) { free(c); }

Comm *comm_threads_join(ThreadGroup *g, int rank) {
  CHECK(rank >= 0 && rank < g->size);
  Comm *c = xcalloc(1, sizeof *c);
  *c = (Comm){.rank = rank,
              .size = g->size,
              .state = g,
              .all_reduce_sum = threads_all_reduce_sum,
              .all_gather = threads_all_gather,
              .broadcast = threads_broadcast,
              .send = threads_send,
              .recv = threads_recv,
              .barrier = threads_barrier,
              .destroy = threads_destroy};
  return c;
}
