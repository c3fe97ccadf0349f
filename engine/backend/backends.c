// backends.c: device names to backends (backends.h).
#include "backend/backends.h"

#include <stdio.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"

bool device_from_name(const char *name, DeviceKind *out, char *err, size_t err_size) {
  const bool have_cuda = cuda_device_count() > 0;
  if (strcmp(name, "auto") == 0) {
    *out = have_cuda ? DEVICE_CUDA : DEVICE_CPU;
    return true;
  }
  if (strcmp(name, "cpu") == 0) {
    *out = DEVICE_CPU;
    return true;
  }
  if (strcmp(name, "cuda") == 0) {
    if (!have_cuda) {
      char why[256];
      Backend *be = cuda_backend_create(0, why, sizeof why);  // the reason, from CUDA itself
      if (be) be->destroy(be);
      snprintf(err, err_size, "--device cuda: no usable CUDA device (%s); use --device cpu", why);
      return false;
    }
    *out = DEVICE_CUDA;
    return true;
  }
  snprintf(err, err_size, "--device '%s' is unknown; use cpu, cuda or auto", name);
  return false;
}

const char *device_name(DeviceKind d) {
  return d == DEVICE_CUDA ? "cuda" : d == DEVICE_CPU_PORTABLE ? "cpu (portable)" : "cpu";
}

Backend *backend_create(DeviceKind d, int rank, int num_threads, const int *cpus, char *err,
                        size_t err_size) {
  if (d == DEVICE_CUDA) return cuda_backend_create(rank, err, err_size);
  Backend *be = d == DEVICE_CPU_PORTABLE ? cpu_backend_create_portable(num_threads)
                                         : cpu_backend_create(num_threads);
  if (!be)
    snprintf(err, err_size, "could not create the CPU backend of rank %d", rank);
  else if (cpus && !cpu_backend_pin(be, cpus))  // a refusal costs speed, never correctness
    fprintf(stderr, "gptoss-engine: warning: rank %d's threads could not be pinned\n", rank);
  return be;
}

bool backend_fits_ranks(DeviceKind d, int ranks, char *err, size_t err_size) {
  if (d != DEVICE_CUDA) return true;
  const int devices = cuda_device_count();
  if (ranks <= devices) return true;
  snprintf(err, err_size,
           "%d ranks need %d GPUs (one a rank) and CUDA sees %d: lower -tp x -pp to at most %d, "
           "or make more GPUs visible (CUDA_VISIBLE_DEVICES)",
           ranks, ranks, devices, devices);
  return false;
}

size_t backend_free_bytes(Backend *be) {
  if (be->host_memory) {
    struct sysinfo si;
    return sysinfo(&si) == 0 ? (size_t)si.freeram * si.mem_unit : 0;
  }
  size_t free_bytes = 0, total_bytes = 0;
  return cuda_memory_info(be, &free_bytes, &total_bytes) ? free_bytes : 0;
}
