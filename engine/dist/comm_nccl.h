// comm_nccl.h: the communicator over NCCL for ranks that are threads of one process, one GPU
// each (the CUDA backend). Buffers are device memory. Built when nvcc and NCCL exist; otherwise
// comm_nccl_stub.c fails with the reason. Compiled, not yet run on GPUs (docs/ARCHITECTURE.md).
#ifndef GE_DIST_COMM_NCCL_H
#define GE_DIST_COMM_NCCL_H

#include <stdbool.h>
#include <stddef.h>

#include "dist/comm.h"

typedef struct NcclGroup NcclGroup;

// A group of size ranks on devices[0 .. size) (one communicator per rank, made at once). NULL
// with NCCL's message.
NcclGroup *nccl_group_create(int size, const int *devices, char *err, size_t err_size);
void nccl_group_free(NcclGroup *g);

// Rank rank's handle (once per rank); its calls must come from one thread at a time. queue is
// the rank's backend's device queue (Backend.device_queue, a cudaStream_t on the rank's device):
// every call but the barrier is enqueued there, in order with the backend's ops, and returns
// without waiting, so "returns once done" (comm.h) holds in the queue's order, which is the
// order the backend's later ops and its copies to the host see.
Comm *comm_nccl_join(NcclGroup *g, int rank, void *queue);

// Lockstep (off by default; set it between calls, from any one thread): before each call the
// ranks' threads meet (every rank before a collective, sender and receiver before a transfer)
// and after it each waits for its own call's work. For a step that may allocate device memory
// (the warm-up's): cudaMalloc and cudaFree may wait for this and peer GPUs' queued work, which
// can hold a collective waiting for this very thread, a deadlock lockstep rules out. NULL: none.
void nccl_group_lockstep(NcclGroup *g, bool on);

// Whether the NCCL this process loaded can have its collectives recorded in CUDA graphs that
// run between collectives outside them (2.9.6 or later, NCCL_GRAPH_MIXING_SUPPORT not 0); false
// with the reason.
bool nccl_records_in_graphs(char *err, size_t err_size);

#endif
