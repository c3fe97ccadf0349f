// cpu_backend.h: the CPU backend (the reference for every other backend): float32 activations,
// OpenBLAS for the matrix products, all cores for the rest.
#ifndef GE_BACKEND_CPU_CPU_BACKEND_H
#define GE_BACKEND_CPU_CPU_BACKEND_H

#include "backend/backend.h"

// num_threads <= 0: one per core.
Backend *cpu_backend_create(int num_threads);

#endif
