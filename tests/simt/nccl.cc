// nccl.cc (tests/simt): the emulated NCCL of include/nccl.h. The communicators of one
// ncclCommInitAll share a clique: each call posts what it is (operation, count, type, root or
// peer, send buffer) in its rank's slot and meets the others at a barrier (all of the clique's
// ranks for a collective, the two of a transfer); each then checks the calls match, reads what
// it needs from the others' buffers (an all-reduce sums in rank order, so every rank gets the
// same bits, as NCCL's), and meets them again before writing its own, so that in-place calls
// read no half-written buffer.
#include "nccl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <functional>
#include <vector>

void emu_work(std::function<void()> f);  // runtime.cc

namespace {
enum Op { kAllReduce, kAllGather, kBroadcast, kSend, kRecv };

// What a rank's call posts for the others to match and read.
struct Call {
  Op op;
  size_t count;
  ncclDataType_t type;
  int root_or_peer;  // a broadcast's root, a transfer's peer; 0 otherwise
  const void *send;
};

struct Clique {
  int size;
  int live;                              // communicators not yet destroyed
  std::vector<Call> posted;              // [size]: each rank's current call
  pthread_barrier_t all;                 // the clique's ranks
  std::vector<pthread_barrier_t> pairs;  // [a * size + b], a < b: the two ranks of a transfer
};

size_t type_bytes(ncclDataType_t t) { return t == ncclFloat ? 4 : 1; }

void describe(const Call &c, char *out, size_t size) {
  const size_t bytes = c.count * type_bytes(c.type);
  switch (c.op) {
    case kAllReduce: snprintf(out, size, "all-reduces %zu bytes", bytes); break;
    case kAllGather: snprintf(out, size, "all-gathers %zu bytes a rank", bytes); break;
    case kBroadcast:
      snprintf(out, size, "broadcasts %zu bytes from rank %d", bytes, c.root_or_peer);
      break;
    case kSend: snprintf(out, size, "sends %zu bytes to rank %d", bytes, c.root_or_peer); break;
    case kRecv:
      snprintf(out, size, "receives %zu bytes from rank %d", bytes, c.root_or_peer);
      break;
  }
}

[[noreturn]] void mismatch(int rank, const Call &mine, int other, const Call &theirs) {
  char a[96], b[96];
  describe(mine, a, sizeof a);
  describe(theirs, b, sizeof b);
  fprintf(stderr,
          "simt: NCCL calls that do not match: rank %d %s while rank %d %s (GPUs would wait for "
          "each other forever)\n",
          rank, a, other, b);
  abort();
}
}  // namespace

struct EmuNcclComm {
  Clique *clique;
  int rank;
};

namespace {
void collective(const EmuNcclComm *c, const Call &call, void *recv) {
  Clique &q = *c->clique;
  q.posted[c->rank] = call;
  pthread_barrier_wait(&q.all);
  for (int r = 0; r < q.size; r++) {
    const Call &o = q.posted[r];
    if (o.op != call.op || o.count != call.count || o.type != call.type ||
        o.root_or_peer != call.root_or_peer)
      mismatch(c->rank, call, r, o);
  }
  const size_t bytes = call.count * type_bytes(call.type);
  std::vector<float> sum;
  if (call.op == kAllReduce) {
    sum.assign((const float *)q.posted[0].send, (const float *)q.posted[0].send + call.count);
    for (int r = 1; r < q.size; r++)
      for (size_t i = 0; i < call.count; i++) sum[i] += ((const float *)q.posted[r].send)[i];
  } else if (call.op == kAllGather) {
    for (int r = 0; r < q.size; r++) memmove((char *)recv + r * bytes, q.posted[r].send, bytes);
  } else if (recv != q.posted[call.root_or_peer].send) {  // a broadcast
    memcpy(recv, q.posted[call.root_or_peer].send, bytes);
  }
  pthread_barrier_wait(&q.all);
  if (call.op == kAllReduce) memcpy(recv, sum.data(), bytes);
}

void transfer(const EmuNcclComm *c, const Call &call, void *recv) {
  Clique &q = *c->clique;
  const int peer = call.root_or_peer;
  q.posted[c->rank] = call;
  pthread_barrier_t &pair =
      q.pairs[c->rank < peer ? c->rank * q.size + peer : peer * q.size + c->rank];
  pthread_barrier_wait(&pair);
  const Call &theirs = q.posted[peer];
  if (theirs.op != (call.op == kSend ? kRecv : kSend) || theirs.root_or_peer != c->rank ||
      theirs.count * type_bytes(theirs.type) != call.count * type_bytes(call.type))
    mismatch(c->rank, call, peer, theirs);
  if (call.op == kRecv) memcpy(recv, theirs.send, call.count * type_bytes(call.type));
  pthread_barrier_wait(&pair);
}

// Checks a call's arguments and puts it on the stream: ncclInvalidArgument where NCCL would.
ncclResult_t enqueue(ncclComm_t comm, const Call &call, void *recv) {
  if (!comm || (call.type != ncclChar && call.type != ncclFloat)) return ncclInvalidArgument;
  if (call.op == kAllReduce && call.type != ncclFloat) return ncclInvalidArgument;
  const bool pairwise = call.op == kSend || call.op == kRecv;
  const int peer = call.root_or_peer;
  if ((pairwise || call.op == kBroadcast) && (peer < 0 || peer >= comm->clique->size))
    return ncclInvalidArgument;
  if (pairwise && peer == comm->rank) return ncclInvalidUsage;
  emu_work([comm, call, recv, pairwise] {
    if (pairwise)
      transfer(comm, call, recv);
    else
      collective(comm, call, recv);
  });
  return ncclSuccess;
}
}  // namespace

ncclResult_t ncclGetVersion(int *version) {
  *version = 22703;  // as NCCL 2.27.3 reports itself
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument (emulated NCCL)";
    case ncclInvalidUsage: return "invalid usage (emulated NCCL)";
  }
  return "unknown result";
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
  int devices = 0;
  cudaGetDeviceCount(&devices);
  if (ndev < 1) return ncclInvalidArgument;
  for (int i = 0; i < ndev; i++) {
    if (devlist[i] < 0 || devlist[i] >= devices) return ncclInvalidArgument;
    for (int j = 0; j < i; j++)
      if (devlist[j] == devlist[i]) return ncclInvalidUsage;  // NCCL: "Duplicate GPU detected"
  }
  Clique *q = new Clique;
  q->size = q->live = ndev;
  q->posted.resize((size_t)ndev);
  pthread_barrier_init(&q->all, nullptr, (unsigned)ndev);
  q->pairs.resize((size_t)ndev * ndev);
  for (int a = 0; a < ndev; a++)
    for (int b = a + 1; b < ndev; b++) pthread_barrier_init(&q->pairs[a * ndev + b], nullptr, 2);
  for (int r = 0; r < ndev; r++) comms[r] = new EmuNcclComm{q, r};
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclInvalidArgument;
  Clique *q = comm->clique;
  delete comm;
  if (--q->live > 0) return ncclSuccess;
  pthread_barrier_destroy(&q->all);
  for (int a = 0; a < q->size; a++)
    for (int b = a + 1; b < q->size; b++) pthread_barrier_destroy(&q->pairs[a * q->size + b]);
  delete q;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t) {
  if (op != ncclSum) return ncclInvalidArgument;
  return enqueue(comm, Call{kAllReduce, count, datatype, 0, sendbuff}, recvbuff);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t) {
  return enqueue(comm, Call{kAllGather, sendcount, datatype, 0, sendbuff}, recvbuff);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t) {
  return enqueue(comm, Call{kBroadcast, count, datatype, root, sendbuff}, recvbuff);
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t) {
  return enqueue(comm, Call{kSend, count, datatype, peer, sendbuff}, nullptr);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t) {
  return enqueue(comm, Call{kRecv, count, datatype, peer, nullptr}, recvbuff);
}
