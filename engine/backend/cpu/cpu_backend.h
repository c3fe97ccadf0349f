// cpu_backend.h: the CPU backend (the reference for every other backend): float32 activations,
// AVX-512 (and AMX-INT8) kernels for Q8, BF16 and MXFP4 weights where the CPU has them (chosen
// at run time), OpenBLAS for float32 weights and as the portable path, all cores for the rest.
#ifndef GE_BACKEND_CPU_CPU_BACKEND_H
#define GE_BACKEND_CPU_CPU_BACKEND_H

#include "backend/backend.h"

// num_threads <= 0: one per CPU this process may use (common/cpu_cores.h).
Backend *cpu_backend_create(int num_threads);
// The same without the AVX-512 and AVX2 kernels, as on a CPU that lacks them (for tests and
// comparisons).
Backend *cpu_backend_create_portable(int num_threads);
// The same with the AVX2 kernels alone, as on a CPU with AVX2 and FMA but no AVX-512 (for tests
// and comparisons); NULL when this CPU lacks AVX2 or FMA.
Backend *cpu_backend_create_avx2(int num_threads);
// Whether its AVX2 kernels run where no AVX-512 one does (the CPU has AVX2 and FMA).
bool cpu_backend_uses_avx2(Backend *be);
// Whether Q8 products of many rows run on AMX-INT8 tiles (the CPU has them, Linux permits them,
// GPTOSS_CPU_AMX is not 0).
bool cpu_backend_uses_amx(Backend *be);
// True when its BF16 products of 16 input rows or more run on AMX-BF16 tiles (cpu_bf16amx.c).
bool cpu_backend_uses_amx_bf16(Backend *be);
// Pins the backend's worker thread t to cpus[t] (t >= 1; cpus: one CPU per thread, cpus[0] the
// calling thread's). False when the system refuses.
bool cpu_backend_pin(Backend *be, const int *cpus);

#endif
