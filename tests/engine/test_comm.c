// test_comm.c: the shared-memory communicator with real threads, one per rank, at group sizes 1
// to 4: all-reduce sums (the same bits on every rank, equal to a sum in rank order), all-gather,
// broadcast, point-to-point transfers around a ring, and a barrier that holds every rank back.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "dist/comm_threads.h"

#define N 1001  // not a multiple of any group size: uneven chunks
#define MAX_RANKS 4

typedef struct {
  Comm *comm;
  float reduced[N];
  float gathered[MAX_RANKS * N];
  int broadcast[8];
  int from_left;
  int seen_at_barrier;
} RankResult;

static atomic_int arrived;

static float value_of(int rank, int i) { return (float)(rank + 1) * 0.1f + (float)i * 1e-3f; }

static void *rank_main(void *arg) {
  RankResult *res = arg;
  Comm *c = res->comm;
  for (int i = 0; i < N; i++) res->reduced[i] = value_of(c->rank, i);
  c->all_reduce_sum(c, res->reduced, N);
  float mine[N];
  for (int i = 0; i < N; i++) mine[i] = (float)(c->rank * N + i);
  c->all_gather(c, mine, N, res->gathered);
  for (int i = 0; i < 8; i++) res->broadcast[i] = c->rank == c->size - 1 ? 100 + i : -1;
  c->broadcast(c, res->broadcast, sizeof res->broadcast, c->size - 1);
  if (c->size > 1) {  // a ring: even ranks send first so that the rendezvous cannot deadlock
    int right = (c->rank + 1) % c->size, left = (c->rank + c->size - 1) % c->size;
    int token = 1000 + c->rank;
    if (c->rank % 2 == 0) {
      c->send(c, &token, sizeof token, right);
      c->recv(c, &res->from_left, sizeof res->from_left, left);
    } else {
      c->recv(c, &res->from_left, sizeof res->from_left, left);
      c->send(c, &token, sizeof token, right);
    }
  }
  atomic_fetch_add(&arrived, 1);
  c->barrier(c);
  res->seen_at_barrier = atomic_load(&arrived);
  return NULL;
}

static void run_group(int size) {
  ThreadGroup *g = thread_group_create(size);
  RankResult res[MAX_RANKS];
  pthread_t threads[MAX_RANKS];
  atomic_store(&arrived, 0);
  for (int r = 0; r < size; r++) {
    res[r].comm = comm_threads_join(g, r);
    res[r].from_left = -1;
    assert_int_equal(pthread_create(&threads[r], NULL, rank_main, &res[r]), 0);
  }
  for (int r = 0; r < size; r++) pthread_join(threads[r], NULL);
  for (int i = 0; i < N; i++) {
    float want = value_of(0, i);
    for (int r = 1; r < size; r++) want += value_of(r, i);
    for (int r = 0; r < size; r++) assert_memory_equal(&res[r].reduced[i], &want, sizeof want);
  }
  for (int r = 0; r < size; r++) {
    for (int k = 0; k < size * N; k++) assert_true(res[r].gathered[k] == (float)k);
    for (int i = 0; i < 8; i++) assert_int_equal(res[r].broadcast[i], 100 + i);
    if (size > 1) assert_int_equal(res[r].from_left, 1000 + (r + size - 1) % size);
    assert_int_equal(res[r].seen_at_barrier, size);
    assert_int_equal(res[r].comm->size, size);
    res[r].comm->destroy(res[r].comm);
  }
  thread_group_free(g);
}

static void test_groups_of_one_to_four(void **state) {
  (void)state;
  for (int size = 1; size <= MAX_RANKS; size++)
    for (int round = 0; round < 20; round++) run_group(size);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_groups_of_one_to_four),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
