// comm_nccl.c: the NCCL communicator (comm_nccl.h). Each call is enqueued on the rank's backend
// stream, after the ops queued there and before the ones that follow, and returns without
// waiting: a collective's result is in place for the next op, as the shared-memory
// communicator's is for the CPU's, and the host waits only where it reads device memory. So a
// tensor-parallel step has no host round trip per collective, and a CUDA graph of a step records
// its collectives with its kernels. The barrier alone waits, and every call in lockstep (the
// warm-up's step: nccl_group_lockstep). Every CUDA and NCCL call is checked.
#include "dist/comm_nccl.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

#define NCCL_CHECK(call)                                                            \
  do {                                                                              \
    ncclResult_t nccl_rc = (call);                                                  \
    if (nccl_rc != ncclSuccess)                                                     \
      die("%s:%d: %s: %s", __FILE__, __LINE__, #call, ncclGetErrorString(nccl_rc)); \
  } while (0)
#define CUDA_CALL(call)                                                             \
  do {                                                                              \
    cudaError_t cuda_rc = (call);                                                   \
    if (cuda_rc != cudaSuccess)                                                     \
      die("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(cuda_rc)); \
  } while (0)

typedef struct {
  ncclComm_t comm;
  int device;
  cudaStream_t stream;  // the rank's backend's (comm_nccl_join)
  float *one;           // [1] device scratch for the barrier
} NcclRank;

struct NcclGroup {
  int size;
  NcclRank *ranks;  // [size]
  // nccl_group_lockstep: on, and where the ranks' threads meet before a call: every rank before
  // a collective, the two ranks of a transfer before it ([a * size + b], a < b)
  bool lockstep;
  pthread_barrier_t arrive;
  pthread_barrier_t *pairs;
};

NcclGroup *nccl_group_create(int size, const int *devices, char *err, size_t err_size) {
  NcclGroup *g = xcalloc(1, sizeof *g);
  g->size = size;
  g->ranks = xcalloc((size_t)size, sizeof *g->ranks);
  ncclComm_t *comms = xcalloc((size_t)size, sizeof *comms);
  ncclResult_t rc = ncclCommInitAll(comms, size, devices);
  if (rc != ncclSuccess) {
    snprintf(err, err_size, "NCCL: cannot set up %d ranks: %s", size, ncclGetErrorString(rc));
    free(comms);
    free(g->ranks);
    free(g);
    return NULL;
  }
  CHECK(pthread_barrier_init(&g->arrive, NULL, (unsigned)size) == 0);
  g->pairs = xcalloc((size_t)size * size, sizeof *g->pairs);
  for (int a = 0; a < size; a++)
    for (int b = a + 1; b < size; b++)
      CHECK(pthread_barrier_init(&g->pairs[a * size + b], NULL, 2) == 0);
  for (int r = 0; r < size; r++) {
    NcclRank *k = &g->ranks[r];
    k->comm = comms[r];
    k->device = devices[r];
    CUDA_CALL(cudaSetDevice(k->device));
    CUDA_CALL(cudaMalloc((void **)&k->one, sizeof(float)));
  }
  free(comms);
  return g;
}

void nccl_group_free(NcclGroup *g) {
  if (!g) return;
  for (int r = 0; r < g->size; r++) {
    NcclRank *k = &g->ranks[r];
    CUDA_CALL(cudaSetDevice(k->device));
    CUDA_CALL(cudaFree(k->one));
    NCCL_CHECK(ncclCommDestroy(k->comm));
  }
  pthread_barrier_destroy(&g->arrive);
  for (int a = 0; a < g->size; a++)
    for (int b = a + 1; b < g->size; b++) pthread_barrier_destroy(&g->pairs[a * g->size + b]);
  free(g->pairs);
  free(g->ranks);
  free(g);
}

bool nccl_records_in_graphs(char *err, size_t err_size) {
  int version = 0;
  NCCL_CHECK(ncclGetVersion(&version));
  if (version < 20906) {  // NCCL_VERSION(2, 9, 6)
    snprintf(err, err_size, "NCCL %d records no collectives in CUDA graphs (2.9.6 does)", version);
    return false;
  }
  const char *mixing = getenv("NCCL_GRAPH_MIXING_SUPPORT");
  if (mixing && strcmp(mixing, "0") == 0) {
    snprintf(err, err_size,
             "NCCL_GRAPH_MIXING_SUPPORT=0: decode graphs run between prefill steps' collectives "
             "outside them");
    return false;
  }
  return true;
}

void nccl_group_lockstep(NcclGroup *g, bool on) {
  if (g) g->lockstep = on;
}

// The rank's state, its device current (NCCL enqueues on the calling thread's device); in
// lockstep, once every rank's thread (peer < 0: a collective) or the peer's has come to its
// matching call.
static NcclRank *enter(Comm *c, int peer) {
  NcclGroup *g = c->state;
  NcclRank *k = &g->ranks[c->rank];
  CHECK(k->stream != NULL);  // joined
  if (g->lockstep && peer < 0) pthread_barrier_wait(&g->arrive);
  if (g->lockstep && peer >= 0) {
    const int a = c->rank < peer ? c->rank : peer, b = c->rank < peer ? peer : c->rank;
    pthread_barrier_wait(&g->pairs[a * g->size + b]);
  }
  CUDA_CALL(cudaSetDevice(k->device));
  return k;
}

// In lockstep, the call's work done before the thread goes on.
static void leave(Comm *c, NcclRank *k) {
  if (((NcclGroup *)c->state)->lockstep) CUDA_CALL(cudaStreamSynchronize(k->stream));
}

static void nccl_all_reduce_sum(Comm *c, float *buf, size_t n) {
  NcclRank *k = enter(c, -1);
  NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, k->comm, k->stream));
  leave(c, k);
}

static void nccl_all_gather(Comm *c, const float *send, size_t n, float *recv) {
  NcclRank *k = enter(c, -1);
  NCCL_CHECK(ncclAllGather(send, recv, n, ncclFloat, k->comm, k->stream));
  leave(c, k);
}

static void nccl_broadcast(Comm *c, void *buf, size_t bytes, int root) {
  NcclRank *k = enter(c, -1);
  NCCL_CHECK(ncclBroadcast(buf, buf, bytes, ncclChar, root, k->comm, k->stream));
  leave(c, k);
}

static void nccl_send(Comm *c, const void *buf, size_t bytes, int peer) {
  NcclRank *k = enter(c, peer);
  NCCL_CHECK(ncclSend(buf, bytes, ncclChar, peer, k->comm, k->stream));
  leave(c, k);
}

static void nccl_recv(Comm *c, void *buf, size_t bytes, int peer) {
  NcclRank *k = enter(c, peer);
  NCCL_CHECK(ncclRecv(buf, bytes, ncclChar, peer, k->comm, k->stream));
  leave(c, k);
}

// Waits on the host: every rank's queue has reached it.
static void nccl_barrier(Comm *c) {
  NcclRank *k = enter(c, -1);  // (in lockstep, a second host barrier: harmless)
  NCCL_CHECK(ncclAllReduce(k->one, k->one, 1, ncclFloat, ncclSum, k->comm, k->stream));
  CUDA_CALL(cudaStreamSynchronize(k->stream));
}

static void nccl_destroy(Comm *c) { free(c); }

Comm *comm_nccl_join(NcclGroup *g, int rank, void *queue) {
  CHECK(rank >= 0 && rank < g->size && queue != NULL && g->ranks[rank].stream == NULL);
  g->ranks[rank].stream = (cudaStream_t)queue;
  Comm *c = xcalloc(1, sizeof *c);
  *c = (Comm){.rank = rank,
              .size = g->size,
              .state = g,
              .all_reduce_sum = nccl_all_reduce_sum,
              .all_gather = nccl_all_gather,
              .broadcast = nccl_broadcast,
              .send = nccl_send,
              .recv = nccl_recv,
              .barrier = nccl_barrier,
              .destroy = nccl_destroy};
  return c;
}
