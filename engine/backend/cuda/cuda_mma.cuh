// cuda_mma.cuh: the warp-level tensor-core instructions the MoE kernels use (sm_80+): the
// m16n8k16 bf16 product with float32 accumulation, and ldmatrix's load of four 8 x 8 bf16
// matrices from shared memory into that product's fragments. Device code only.
//
// Fragments (PTX ISA, mma.m16n8k16 with .bf16): lane l, g = l / 4, q = l % 4.
//   A (16 x 16, row-major): a0 = (row g, cols 2q, 2q + 1), a1 = (row g + 8, same cols),
//                           a2 = (row g, cols 2q + 8, 2q + 9), a3 = (row g + 8, those cols)
//   B (16 x 8, k x n, given as n rows of k): b0 = (n g, k 2q, 2q + 1), b1 = (n g, k 2q + 8, 2q + 9)
//   C (16 x 8, float): c0, c1 = (row g, cols 2q, 2q + 1), c2, c3 = (row g + 8, those cols)
#ifndef GE_BACKEND_CUDA_CUDA_MMA_CUH
#define GE_BACKEND_CUDA_CUDA_MMA_CUH

#include <stdint.h>

// d += A x B in float32.
static __device__ __forceinline__ void cuda_mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1,
                                                     uint32_t a2, uint32_t a3, uint32_t b0,
                                                     uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Four 8 x 8 matrices of bf16 from shared memory: lanes 8 i .. 8 i + 7 give the addresses of
// matrix i's rows 0 .. 7 (16 bytes each, 16-byte aligned), and r[i] is this lane's pair of
// matrix i: (row l / 4, cols 2 (l % 4), + 1).
static __device__ __forceinline__ void cuda_ldmatrix_x4(uint32_t (&r)[4], const void *row) {
  const unsigned at = (unsigned)__cvta_generic_to_shared(row);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(at));
}

// The same four matrices transposed: r[i] is this lane's pair of matrix i's column l / 4, rows
// 2 (l % 4) and + 1 (the B fragment of a product whose k runs along the stored rows).
static __device__ __forceinline__ void cuda_ldmatrix_x4_trans(uint32_t (&r)[4], const void *row) {
  const unsigned at = (unsigned)__cvta_generic_to_shared(row);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(at));
}

#endif
