// cuda_stub.c: the CUDA backend of a build without nvcc (CUDA=0): no device, and every attempt
// to create the backend or upload weights fails with the reason, so the engine and the tests
// link the same functions either way. The copy helpers can only be reached with a backend,
// which this build never returns.
#include <stdio.h>

#include "backend/cuda/cuda_backend.h"
#include "common/check.h"

#define CUDA_STUB_MESSAGE "this gptoss-engine was built without CUDA (nvcc not found)"

int cuda_device_count(void) { return 0; }

Backend *cuda_backend_create(int device, char *err, size_t err_size) {
  (void)device;
  snprintf(err, err_size, "%s", CUDA_STUB_MESSAGE);
  return NULL;
}

bool cuda_weights_upload(Backend *be, const GptOssWeights *host, GptOssWeights *device, char *err,
                         size_t err_size) {
  (void)be, (void)host;
  *device = (GptOssWeights){0};
  snprintf(err, err_size, "%s", CUDA_STUB_MESSAGE);
  return false;
}

bool cuda_weights_dummy(Backend *be, const GptOssConfig *c, const WeightsOptions *o,
                        GptOssWeights *device, char *err, size_t err_size) {
  (void)be, (void)c, (void)o;
  *device = (GptOssWeights){0};
  snprintf(err, err_size, "%s", CUDA_STUB_MESSAGE);
  return false;
}

void cuda_weights_free(Backend *be, GptOssWeights *device) {
  (void)be;
  *device = (GptOssWeights){0};
}

void cuda_to_device(Backend *be, void *dst_device, const void *src_host, size_t bytes) {
  (void)be, (void)dst_device, (void)src_host, (void)bytes;
  CHECK(!"cuda_to_device: " CUDA_STUB_MESSAGE);
}

void cuda_copy_device(Backend *be, void *dst_device, const void *src_device, size_t bytes) {
  (void)be, (void)dst_device, (void)src_device, (void)bytes;
  CHECK(!"cuda_copy_device: " CUDA_STUB_MESSAGE);
}

void cuda_synchronize(Backend *be) { (void)be; }

const char *cuda_device_name(Backend *be) {
  (void)be;
  return "none (built without CUDA)";
}

bool cuda_memory_info(Backend *be, size_t *free_bytes, size_t *total_bytes) {
  (void)be;
  *free_bytes = *total_bytes = 0;
  return false;
}
