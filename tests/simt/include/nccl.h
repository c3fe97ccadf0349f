// nccl.h (tests/simt): NCCL as engine/dist/comm_nccl.c uses it, for the emulator's devices
// (nccl.cc), so that -tp and -pp run on the emulated CUDA backend with comm_nccl.c itself. A
// call is stream work (runtime.cc): it runs when the rank's queue reaches it, at once or when a
// graph that recorded it is launched, and then waits until every rank of the communicator (a
// collective) or the peer (a send or receive) has come to its matching call, as the GPUs' queues
// would wait for each other (the engine's shared-memory communicator, comm_threads.c, meets
// them); collectives that do not match (another collective, count, type or root) end the process
// with both calls named, where GPUs would hang. Values as NCCL's own (nccl.h, NCCL 2.x) where
// the engine passes them.
#ifndef GE_TESTS_SIMT_NCCL_H
#define GE_TESTS_SIMT_NCCL_H
#include <stddef.h>

#include "cuda_runtime_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { ncclSuccess = 0, ncclInvalidArgument = 4, ncclInvalidUsage = 5 } ncclResult_t;
typedef enum { ncclChar = 0, ncclFloat = 7 } ncclDataType_t;
typedef enum { ncclSum = 0 } ncclRedOp_t;
typedef struct EmuNcclComm *ncclComm_t;

ncclResult_t ncclGetVersion(int *version);
const char *ncclGetErrorString(ncclResult_t result);
// ndev communicators of one clique, rank i on devlist[i] (distinct devices of the emulator's).
ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
