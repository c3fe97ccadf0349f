// nccl.cc (tests/simt): the emulated NCCL of include/nccl.h, on the engine's own shared-memory
// communicator (engine/dist/comm_threads.c: the CPU ranks'), which meets the ranks at barriers
// and sums an all-reduce in rank order, so every rank gets the same bits, as NCCL's. The
// communicators of one ncclCommInitAll share a clique: one thread group, and a slot per rank
// where each collective first posts what it is (operation, count, type, root), so that ranks
// whose collectives do not match end the process naming both before any bytes move.
#include "nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <functional>
#include <vector>

extern "C" {
#include "dist/comm_threads.h"
}

void emu_work(std::function<void()> f);  // runtime.cc

namespace {
enum Op { kAllReduce, kAllGather, kBroadcast, kSend, kRecv };

// A call as enqueued; a collective posts it for the others to compare.
struct Call {
  Op op;
  size_t count;
  ncclDataType_t type;
  int root_or_peer;  // a broadcast's root, a transfer's peer; 0 otherwise
  const void *send;
};

struct Clique {
  int size;
  int live;                  // communicators not yet destroyed
  ThreadGroup *group;        // the ranks' communicator (comm_threads.c)
  std::vector<Call> posted;  // [size]: each rank's current collective
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
    case kSend:
    case kRecv: break;  // (transfers are not compared: comm_threads.c checks their sizes)
  }
}

// What a collective is, for the message that two do not match.
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
  Comm *comm;  // the rank's handle on the clique's thread group
};

namespace {
// Every rank's collective, met and compared before it runs.
void check_collectives_match(const EmuNcclComm *c, const Call &call) {
  Clique &q = *c->clique;
  q.posted[c->rank] = call;
  c->comm->barrier(c->comm);
  for (int r = 0; r < q.size; r++) {
    const Call &o = q.posted[r];
    if (o.op != call.op || o.count != call.count || o.type != call.type ||
        o.root_or_peer != call.root_or_peer)
      mismatch(c->rank, call, r, o);
  }
}

// The call's work, when the rank's queue reaches it. (A rank reads the others' slots only
// before the collective's own first barrier, so none is posted over while still read.)
void run(const EmuNcclComm *c, const Call &call, void *recv) {
  Comm *comm = c->comm;
  const size_t bytes = call.count * type_bytes(call.type);
  switch (call.op) {
    case kSend: comm->send(comm, call.send, bytes, call.root_or_peer); return;
    case kRecv: comm->recv(comm, recv, bytes, call.root_or_peer); return;
    default: break;
  }
  check_collectives_match(c, call);
  // all-reduce and broadcast work in place on recv: the rank's own values first
  const bool has_values = call.op == kAllReduce || c->rank == call.root_or_peer;
  if (call.op != kAllGather && has_values && recv != call.send) memcpy(recv, call.send, bytes);
  if (call.op == kAllReduce)
    comm->all_reduce_sum(comm, (float *)recv, call.count);
  else if (call.op == kAllGather)
    comm->all_gather(comm, (const float *)call.send, call.count, (float *)recv);
  else
    comm->broadcast(comm, recv, bytes, call.root_or_peer);
}

// Checks a call's arguments and puts it on the stream: ncclInvalidArgument where NCCL would.
ncclResult_t enqueue(ncclComm_t comm, const Call &call, void *recv) {
  if (!comm || (call.type != ncclChar && call.type != ncclFloat)) return ncclInvalidArgument;
  if ((call.op == kAllReduce || call.op == kAllGather) && call.type != ncclFloat)
    return ncclInvalidArgument;  // (the engine sums and gathers floats only)
  const bool pairwise = call.op == kSend || call.op == kRecv;
  const int peer = call.root_or_peer;
  if ((pairwise || call.op == kBroadcast) && (peer < 0 || peer >= comm->clique->size))
    return ncclInvalidArgument;
  if (pairwise && peer == comm->rank) return ncclInvalidUsage;
  emu_work([comm, call, recv] { run(comm, call, recv); });
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
  Clique *q = new Clique{ndev, ndev, thread_group_create(ndev), std::vector<Call>((size_t)ndev)};
  for (int r = 0; r < ndev; r++) comms[r] = new EmuNcclComm{q, r, comm_threads_join(q->group, r)};
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclInvalidArgument;
  Clique *q = comm->clique;
  comm->comm->destroy(comm->comm);
  delete comm;
  if (--q->live > 0) return ncclSuccess;
  thread_group_free(q->group);
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
