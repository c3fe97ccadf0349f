// comm_nccl.h: the communicator over NCCL for ranks that are threads of one process, one GPU
// each (the CUDA backend). Buffers are device memory. Built when nvcc and NCCL exist; otherwise
// comm_nccl_stub.c fails with the reason. Compiled, not yet run on GPUs (docs/ARCHITECTURE.md).
#ifndef GE_DIST_COMM_NCCL_H
#define GE_DIST_COMM_NCCL_H

#include <stddef.h>

#include "dist/comm.h"

typedef struct NcclGroup NcclGroup;

// A group of size ranks on devices[0 .. size) (one communicator per rank, made at once). NULL
// with NCCL's message.
NcclGroup *nccl_group_create(int size, const int *devices, char *err, size_t err_size);
void nccl_group_free(NcclGroup *g);

// Rank rank's handle; its calls must come from one thread at a time.
Comm *comm_nccl_join(NcclGroup *g, int rank);

#endif
