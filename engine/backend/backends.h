// backends.h: choosing and creating the backend of each rank by device name: "cpu", "cuda", or
// "auto" (CUDA when a device is present, else the CPU), and the creator the runner calls once
// per rank. The one place that knows every backend.
#ifndef GE_BACKEND_BACKENDS_H
#define GE_BACKEND_BACKENDS_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backend.h"

typedef enum { DEVICE_CPU, DEVICE_CPU_PORTABLE, DEVICE_CUDA } DeviceKind;

// "cpu" | "cuda" | "auto" -> the device. False with a message: an unknown name, or "cuda" with
// no CUDA device (or a build without CUDA), naming why and what to use instead.
bool device_from_name(const char *name, DeviceKind *out, char *err, size_t err_size);
const char *device_name(DeviceKind d);

// Whether d can run ranks ranks: CUDA runs one a GPU, so it needs that many devices; the CPU's
// ranks share its cores. False with a message naming the ranks and the devices.
bool backend_fits_ranks(DeviceKind d, int ranks, char *err, size_t err_size);

// Bytes of memory free now where be allocates (its GPU for CUDA, the host's RAM for the CPU), for
// sizing the KV cache. 0 when it cannot tell.
size_t backend_free_bytes(Backend *be);

// Rank rank's backend: the CPU's with num_threads threads (the portable one without AVX-512
// kernels for DEVICE_CPU_PORTABLE), its workers pinned to cpus[1 ..] when cpus is not NULL
// ([num_threads]; cpus[0] is the calling thread's), or CUDA device rank. NULL with a message.
Backend *backend_create(DeviceKind d, int rank, int num_threads, const int *cpus, char *err,
                        size_t err_size);

#endif
