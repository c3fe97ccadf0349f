// comm_nccl_stub.c: the NCCL communicator of a build without CUDA or NCCL: creating a group
// fails with the reason, so the runner links the same functions either way.
#include <stdio.h>

#include "common/check.h"
#include "dist/comm_nccl.h"

NcclGroup *nccl_group_create(int size, const int *devices, char *err, size_t err_size) {
  (void)devices;
  snprintf(err, err_size,
           "-tp/-pp on CUDA (%d ranks) needs NCCL, which this build does not have (nvcc and "
           "nccl.h not found)",
           size);
  return NULL;
}

void nccl_group_free(NcclGroup *g) { CHECK(g == NULL); }  // never made here

bool nccl_records_in_graphs(char *err, size_t err_size) {
  snprintf(err, err_size, "this build has no NCCL");
  return false;
}

void nccl_group_lockstep(NcclGroup *g, bool on) {
  (void)on;
  CHECK(g == NULL);
}

Comm *comm_nccl_join(NcclGroup *g, int rank, void *queue) {
  (void)g, (void)rank, (void)queue;
  CHECK(!"comm_nccl_join: this build has no NCCL");
  return NULL;
}
