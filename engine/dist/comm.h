// comm.h: a communicator among the ranks of one group (a tensor-parallel group, or the stages of
// a pipeline): collective sums and gathers, broadcast, point-to-point transfers between pipeline
// stages, and a barrier. Buffers are in the ranks' backend memory. Two implementations behind
// this table: threads sharing memory for the CPU backend (comm_threads.h) and NCCL for the CUDA
// backend (one thread and one GPU per rank). Every rank of a group must make the same sequence
// of collective calls with the same sizes. "Returns once" below is the host's for the threads'
// communicator; NCCL's runs in the order of the rank's device queue instead (the backend's ops
// after a call see its result, the host sees it after the queue's next wait: comm_nccl.h).
#ifndef GE_DIST_COMM_H
#define GE_DIST_COMM_H

#include <stddef.h>

typedef struct Comm Comm;

struct Comm {
  int rank;  // 0 .. size - 1 within the group
  int size;
  void *state;  // the implementation's

  // buf[i] = the sum over ranks of their buf[i]; every rank gets the same bits (a fixed
  // summation order: rank 0 + rank 1 + ...).                   buf: [n]
  void (*all_reduce_sum)(Comm *c, float *buf, size_t n);
  // recv[r * n .. (r + 1) * n) = rank r's send, on every rank.  send: [n], recv: [size * n]
  void (*all_gather)(Comm *c, const float *send, size_t n, float *recv);
  // Every rank's buf = root's buf.                              buf: [bytes]
  void (*broadcast)(Comm *c, void *buf, size_t bytes, int root);
  // Transfer of bytes from this rank to peer, which calls recv with the same size; returns
  // once the bytes have been taken (buf may then be reused).
  void (*send)(Comm *c, const void *buf, size_t bytes, int peer);
  void (*recv)(Comm *c, void *buf, size_t bytes, int peer);
  // Returns once every rank of the group has called it.
  void (*barrier)(Comm *c);
  void (*destroy)(Comm *c);  // this rank's handle
};

#endif
