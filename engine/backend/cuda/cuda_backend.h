// cuda_backend.h: the CUDA backend's public face (C linkage): device discovery, the backend
// table (backend.h) on one GPU, and the device copy of the weights the ops read. Built from the
// .cu files when nvcc exists, else from cuda_stub.c (no device, every create fails with the
// reason), so callers never need #ifdefs. Activations are float32 in device memory; dense
// products are bf16 x bf16 (or float32) on cuBLAS with float32 accumulation; expert weights
// stay MXFP4 on the device. Owns nothing of the model: it never loads or frees host weights.
#ifndef GE_BACKEND_CUDA_CUDA_BACKEND_H
#define GE_BACKEND_CUDA_CUDA_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {  // the headers' functions too: they are C (common/pick.h's, model/'s)
#endif

#include "backend/backend.h"
#include "model/weights.h"

// CUDA devices this process can use: 0 when there is none, no driver, or the build has no CUDA.
// Never fails otherwise.
int cuda_device_count(void);

// The backend on device `device` (one stream, one cuBLAS handle). NULL with a message naming the
// device and the CUDA error when there is no such device, CUDA cannot start, or this build has
// no CUDA. Its ops abort with file:line and CUDA's error string on any CUDA or cuBLAS failure
// (a failed kernel leaves the device unusable; there is nothing to recover).
Backend *cuda_backend_create(int device, char *err, size_t err_size);

// Copies host weights into device memory as a GptOssWeights of the same shapes whose matrices
// and vectors point there (one allocation). Dense matrices BF16 or F32, experts MXFP4, BF16 or
// F32, kept in their format; Q8 is refused. Matrices with no data and NULL vectors stay absent.
// Host may be a shard (its layers, heads and experts are what is copied). The backend's
// upload_weights and free_weights point here. False with a message (which matrix, or the
// bytes that did not fit) and *device left empty. Free with cuda_weights_free, never
// weights_free.
bool cuda_weights_upload(Backend *be, const GptOssWeights *host, GptOssWeights *device, char *err,
                         size_t err_size);
void cuda_weights_free(Backend *be, GptOssWeights *device);

// Dummy weights (weights_dummy.h) for config c and o's shard (NULL: the whole model) and seed,
// generated in device memory in o's formats: the same GptOssWeights, byte for byte, as
// weights_load with LOAD_DUMMY followed by cuda_weights_upload, with no host copy. Dense BF16 or
// F32, experts MXFP4 (others: false, with the reason). The backend's load_dummy_weights points
// here. False with a message (a format it does not generate, the bytes that did not fit).
bool cuda_weights_dummy(Backend *be, const GptOssConfig *c, const WeightsOptions *o,
                        GptOssWeights *device, char *err, size_t err_size);

// Memory helpers for tests, benchmarks and loaders (backend.h has no host-to-device copy).
// Each waits until the copy is done. dst/src: device memory from be->alloc where named so.
void cuda_to_device(Backend *be, void *dst_device, const void *src_host, size_t bytes);
void cuda_copy_device(Backend *be, void *dst_device, const void *src_device, size_t bytes);
// Waits for every op queued on the backend's stream.
void cuda_synchronize(Backend *be);
// The device's name ("NVIDIA H200"), for reports.
const char *cuda_device_name(Backend *be);
// Free and total bytes of the backend's device (to size the KV cache). False when CUDA cannot
// tell (both then 0).
bool cuda_memory_info(Backend *be, size_t *free_bytes, size_t *total_bytes);

#ifdef __cplusplus
}
#endif

#endif
