// cpu_amx.h: what the AMX kernels (cpu_q8amx.c: Q8 on AMX-INT8; cpu_bf16amx.c: BF16 on
// AMX-BF16) share: the tile registers' roles and the load/store/zero wrappers. Both use one
// configuration, loaded per call by cpu_amx_configure (cpu_internal.h): 8 tiles of 16 rows by
// 64 bytes, C00 C01 C10 C11 the accumulators (input row block i, weight tile j), A0 A1 the input
// rows, B0 B1 the weights. GCC's tile intrinsics paste their tile argument into the instruction
// as written, so these are literal numbers reached through one more macro level (the AMX_*
// wrappers expand them first). Include only in files compiled with the amx-tile target.
#ifndef GE_BACKEND_CPU_CPU_AMX_H
#define GE_BACKEND_CPU_CPU_AMX_H

#include <immintrin.h>

#define TILE_C00 0
#define TILE_C01 1
#define TILE_C10 2
#define TILE_C11 3
#define TILE_A0 4
#define TILE_A1 5
#define TILE_B0 6
#define TILE_B1 7
#define TILE_COUNT 8
#define AMX_ZERO(t) _tile_zero(t)
#define AMX_LOAD(t, ptr, stride) _tile_loadd(t, ptr, stride)
#define AMX_STORE(t, ptr, stride) _tile_stored(t, ptr, stride)

#endif
