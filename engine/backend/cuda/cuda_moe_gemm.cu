// cuda_moe_gemm.cu: the grouped expert kernels of the MoE op. One thread block per work item
// (one expert, up to CUDA_MOE_BM of its token rows) and CUDA_MOE_BN weight rows; the input rows
// and weights go through shared memory MOE_MMA_BK (tensor cores) or MOE_BK (F32) columns at a
// time, the next tile's global loads in flight (in registers) while the current one is
// multiplied.
//   MXFP4 experts: cuda_moe_mxfp4.cu (decoded in registers; launched from here), or
//     cuda_moe_wide.cu (decoded once per block into shared memory; 128-row items for
//     prefill-sized calls, 32-row ones when asked for).
//   BF16 experts: bf16 tensor cores (WMMA 16x16x16, float32 accumulation) on bf16 input rows
//     (cuda_moe.cu rounds x once per call; stage 1 writes act in bf16), the weights copied
//     (cp.async) STAGES - 1 tiles ahead.
//   F32 experts: float32 on the CUDA cores (4 x 4 outputs per thread), so F32 weights give a
//     float32 evaluation, as on the CPU (the golden tests' format).
// Stage 1 gathers the tokens' x rows and ends with the bias and the clamped SwiGLU (alpha 1.702,
// +1 on the linear half) of the interleaved gate/linear outputs; stage 2 reads those rows and
// writes each pair's routing-weighted output row (bias included) for cuda_moe.cu to sum. Knows
// nothing of routing.
#include <mma.h>

#include "backend/cuda/cuda_async.cuh"
#include "backend/cuda/cuda_moe_tile.cuh"

#define MOE_BK 64         // columns per shared tile (F32 kernel)
#define MOE_MMA_HALVES 2  // tensor-core kernel: 2 x MOE_BK columns per shared tile
#define MOE_MMA_BK (MOE_MMA_HALVES * MOE_BK)
#define MOE_PAD 8  // bf16 elements after each shared row (keeps WMMA's 32-byte alignment)

// Input tile loaders: 16 columns of one row per thread (row tid / 4, columns (tid % 4) * 16).
// Of bf16 rows (the tensor cores' path):
struct CudaMoeABf16 {
  uint4 v[2];
  __device__ void load(const __nv_bfloat16 *row, int col, int k) {
    const bool valid = row && col < k;
    v[0] = valid ? ((const uint4 *)(row + col))[0] : make_uint4(0, 0, 0, 0);
    v[1] = valid ? ((const uint4 *)(row + col))[1] : make_uint4(0, 0, 0, 0);
  }
  __device__ void store_bf16(__nv_bfloat16 *dst) const {  // dst: [16], 16-byte aligned
    ((uint4 *)dst)[0] = v[0];
    ((uint4 *)dst)[1] = v[1];
  }
};

// Of float rows (the F32 experts' path):
struct CudaMoeA {
  float4 v[4];
  __device__ void load(const float *row, int col, int k) {
    const bool valid = row && col < k;
#pragma unroll
    for (int i = 0; i < 4; i++)
      v[i] = valid ? ((const float4 *)(row + col))[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  // Transposed, as float: at[col + i][r] = value i.   at: [MOE_BK][MOE_BM + 4]
  __device__ void store_f32_t(float (*at)[MOE_BM + 4], int r, int col) const {
#pragma unroll
    for (int i = 0; i < 4; i++) {
      at[col + 4 * i][r] = v[i].x, at[col + 4 * i + 1][r] = v[i].y;
      at[col + 4 * i + 2][r] = v[i].z, at[col + 4 * i + 3][r] = v[i].w;
    }
  }
};

// Weight tile loaders: 32 columns of one weight row per thread (row tid / 2, columns
// (tid % 2) * 32); valid false (the row or columns do not exist) gives zeros.
// BF16: the raw bytes are copied asynchronously into a pipeline Stage (fetch, STAGES of them in
// flight), each thread into slots of its own, which that same thread reads back into the tile.
struct CudaMoeBf16Weights {
  static constexpr int STAGES = 3;
  struct Stage {
    uint4 q[MOE_MMA_HALVES][4][MOE_THREADS];  // per half: each thread's 64 bytes
  };
  static __device__ void fetch(Stage &st, int h, const void *w, int k, bool valid, int64_t row,
                               int col) {
    const uint4 *src = (const uint4 *)((const __nv_bfloat16 *)w + (valid ? row * k + col : 0));
#pragma unroll
    for (int i = 0; i < 4; i++) cuda_copy16_async(&st.q[h][i][threadIdx.x], src + i, valid);
  }
  // dst: [32], 16-byte aligned
  static __device__ void store(const Stage &st, int h, __nv_bfloat16 *dst) {
#pragma unroll
    for (int i = 0; i < 4; i++) ((uint4 *)dst)[i] = st.q[h][i][threadIdx.x];
  }
};

// F32: loaded into registers, stored transposed.
struct CudaMoeF32Weights {
  float4 q[8];
  __device__ void load(const void *w, int k, bool valid, int64_t row, int col) {
    const float4 *src = (const float4 *)((const float *)w + row * k + col);
#pragma unroll
    for (int i = 0; i < 8; i++) q[i] = valid ? src[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  // Transposed: bt[col + i][r] = value i.   bt: [MOE_BK][MOE_BN + 4]
  __device__ void store_f32_t(float (*bt)[MOE_BN + 4], int r, int col) const {
#pragma unroll
    for (int i = 0; i < 8; i++) {
      bt[col + 4 * i][r] = q[i].x, bt[col + 4 * i + 1][r] = q[i].y;
      bt[col + 4 * i + 2][r] = q[i].z, bt[col + 4 * i + 3][r] = q[i].w;
    }
  }
};

// The BF16 kernel's shared memory: the bf16 tiles, then the pipeline stages of raw weights,
// whose space holds the products once the last tile is multiplied.
struct CudaMoeBf16Smem {
  __nv_bfloat16 As[MOE_BM][MOE_MMA_BK + MOE_PAD];
  __nv_bfloat16 Bs[MOE_BN][MOE_MMA_BK + MOE_PAD];
  union {
    CudaMoeBf16Weights::Stage stages[CudaMoeBf16Weights::STAGES];
    float Cs[MOE_BM][MOE_BN + 4];
  };
  int pairs[MOE_BM];
};

// BF16 experts on bf16 tensor cores. The weights run STAGES - 1 tiles ahead (cp.async), the
// input rows one tile ahead (registers: they are few, and mostly in L2). Warp w computes output
// columns w * 16 .. + 16 of the tile's rows 0 .. 15 and, when the tile has more, 16 .. 31.
__global__ void __launch_bounds__(MOE_THREADS)
    cuda_moe_bf16_kernel(const __grid_constant__ CudaMoeGemm g) {
  using namespace nvcuda;
  using Loader = CudaMoeBf16Weights;
  constexpr int STAGES = Loader::STAGES;
  CudaMoeTile t;
  if (!cuda_moe_tile(g, &t)) return;
  extern __shared__ __align__(128) unsigned char moe_smem[];
  CudaMoeBf16Smem &sm = *(CudaMoeBf16Smem *)moe_smem;
  const int tid = threadIdx.x, warp = tid / 32;
  if (tid < MOE_BM) sm.pairs[tid] = tid < t.rows ? g.sorted[t.pos0 + tid] : -1;
  __syncthreads();

  const int a_r = tid / 4, a_c = (tid % 4) * 16, b_r = tid / 2, b_c = (tid % 2) * 32;
  const __nv_bfloat16 *a_row =
      cuda_moe_a_row(g.x_bf16, (const __nv_bfloat16 *)g.act_bf16, g, sm.pairs, t, a_r);
  const int64_t b_row = t.n0 + b_r;
  const void *w = g.w[t.e];
  const int num_k_tiles = (g.k + MOE_MMA_BK - 1) / MOE_MMA_BK;
  // Tile kt's weights into its stage; one copy group per call, empty past the last tile, so
  // that the waits below count the same in every iteration.
  auto fetch = [&](int kt) {
    if (kt < num_k_tiles) {
#pragma unroll
      for (int h = 0; h < MOE_MMA_HALVES; h++) {
        const int col = kt * MOE_MMA_BK + h * MOE_BK + b_c;
        Loader::fetch(sm.stages[kt % STAGES], h, w, g.k, b_row < g.n && col < g.k, b_row, col);
      }
    }
    cuda_copy_commit();
  };
  for (int kt = 0; kt < STAGES - 1; kt++) fetch(kt);
  CudaMoeABf16 a[MOE_MMA_HALVES];  // half h: columns h * MOE_BK .. + MOE_BK of the tile
#pragma unroll
  for (int h = 0; h < MOE_MMA_HALVES; h++) a[h].load(a_row, h * MOE_BK + a_c, g.k);

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
  wmma::fill_fragment(acc[0], 0.0f);
  wmma::fill_fragment(acc[1], 0.0f);
  for (int kt = 0; kt < num_k_tiles; kt++) {
    cuda_copy_wait<STAGES - 2>();  // tile kt's copies (this thread's, all it reads) have landed
#pragma unroll
    for (int h = 0; h < MOE_MMA_HALVES; h++) {
      a[h].store_bf16(&sm.As[a_r][h * MOE_BK + a_c]);
      Loader::store(sm.stages[kt % STAGES], h, &sm.Bs[b_r][h * MOE_BK + b_c]);
    }
    __syncthreads();
    fetch(kt + STAGES - 1);  // into the stage this thread read back in the previous iteration
    if (kt + 1 < num_k_tiles) {
#pragma unroll
      for (int h = 0; h < MOE_MMA_HALVES; h++)
        a[h].load(a_row, (kt + 1) * MOE_MMA_BK + h * MOE_BK + a_c, g.k);
    }
#pragma unroll
    for (int kk = 0; kk < MOE_MMA_BK; kk += 16) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> bf;
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> af;
      wmma::load_matrix_sync(bf, &sm.Bs[warp * 16][kk], MOE_MMA_BK + MOE_PAD);  // B(k,n) = W[n][k]
      wmma::load_matrix_sync(af, &sm.As[0][kk], MOE_MMA_BK + MOE_PAD);
      wmma::mma_sync(acc[0], af, bf, acc[0]);
      if (t.rows > 16) {
        wmma::load_matrix_sync(af, &sm.As[16][kk], MOE_MMA_BK + MOE_PAD);
        wmma::mma_sync(acc[1], af, bf, acc[1]);
      }
    }
    __syncthreads();
  }
  // Every real copy has landed (only empty groups may be open): the stages' space is free.
  wmma::store_matrix_sync(&sm.Cs[0][warp * 16], acc[0], MOE_BN + 4, wmma::mem_row_major);
  if (t.rows > 16)
    wmma::store_matrix_sync(&sm.Cs[16][warp * 16], acc[1], MOE_BN + 4, wmma::mem_row_major);
  __syncthreads();
  cuda_moe_epilogue(g, sm.Cs, sm.pairs, t, true);
}

// F32 experts in float32: thread (ty, tx) = (tid / 16, tid % 16) computes rows ty * 4 .. + 4
// and columns tx * 4 .. + 4 of the tile, from k-major (transposed) shared tiles.
__global__ void __launch_bounds__(MOE_THREADS)
    cuda_moe_f32_kernel(const __grid_constant__ CudaMoeGemm g) {
  CudaMoeTile t;
  if (!cuda_moe_tile(g, &t)) return;
  __shared__ __align__(16) float At[MOE_BK][MOE_BM + 4];
  __shared__ __align__(16) float Bt[MOE_BK][MOE_BN + 4];
  __shared__ __align__(16) float Cs[MOE_BM][MOE_BN + 4];
  __shared__ int pairs[MOE_BM];
  const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
  if (tid < MOE_BM) pairs[tid] = tid < t.rows ? g.sorted[t.pos0 + tid] : -1;
  __syncthreads();

  const int a_r = tid / 4, a_c = (tid % 4) * 16, b_r = tid / 2, b_c = (tid % 2) * 32;
  const float *a_row = cuda_moe_a_row(g.x, g.act_in, g, pairs, t, a_r);
  const int64_t b_row = t.n0 + b_r;
  const void *w = g.w[t.e];
  CudaMoeA a;
  CudaMoeF32Weights b;
  a.load(a_row, a_c, g.k);
  b.load(w, g.k, b_row < g.n && b_c < g.k, b_row, b_c);

  float acc[4][4] = {};
  const int num_k_tiles = (g.k + MOE_BK - 1) / MOE_BK;
  for (int kt = 0; kt < num_k_tiles; kt++) {
    a.store_f32_t(At, a_r, a_c);
    b.store_f32_t(Bt, b_r, b_c);
    __syncthreads();
    if (kt + 1 < num_k_tiles) {
      const int k0 = (kt + 1) * MOE_BK;
      a.load(a_row, k0 + a_c, g.k);
      b.load(w, g.k, b_row < g.n && k0 + b_c < g.k, b_row, k0 + b_c);
    }
#pragma unroll 8
    for (int kk = 0; kk < MOE_BK; kk++) {
      const float4 av = *(const float4 *)&At[kk][ty * 4];
      const float4 bv = *(const float4 *)&Bt[kk][tx * 4];
      const float as[4] = {av.x, av.y, av.z, av.w}, bs[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] += as[i] * bs[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) Cs[ty * 4 + i][tx * 4 + j] = acc[i][j];
  __syncthreads();
  cuda_moe_epilogue(g, Cs, pairs, t, false);
}

void cuda_moe_gemm(CudaState *st, const CudaMoeGemm &g, int max_items) {
  CHECK(g.k % 32 == 0 && g.n % 2 == 0 && g.count <= CUDA_MOE_MAX_LAUNCH_EXPERTS);
  CHECK(g.stage == 1 || g.stage == 2);
  for (int i = 0; i < g.count; i++) CHECK(((uintptr_t)g.w[i] & 15) == 0);
  const bool bf16_rows = g.format != WEIGHT_F32;
  CHECK(((uintptr_t)(g.stage == 1 ? (bf16_rows ? (const void *)g.x_bf16 : g.x)
                                  : (bf16_rows ? (const void *)g.act_bf16 : g.act_in)) &
         15) == 0);
  if (max_items <= 0) return;
  if (g.wide) {
    cuda_moe_wide_launch(st, g, max_items);
    CUDA_CHECK_LAUNCH();
    return;
  }
  CHECK(g.tile_rows == CUDA_MOE_BM);
  const dim3 grid((unsigned)max_items, (unsigned)((g.n + MOE_BN - 1) / MOE_BN));
  switch (g.format) {
    case WEIGHT_MXFP4: cuda_moe_mxfp4_launch(st, g, grid); break;
    case WEIGHT_BF16: {
      const size_t smem = sizeof(CudaMoeBf16Smem);
      cuda_allow_smem(st, (const void *)cuda_moe_bf16_kernel, smem);
      cuda_moe_bf16_kernel<<<grid, MOE_THREADS, smem, st->stream>>>(g);
      break;
    }
    case WEIGHT_F32: cuda_moe_f32_kernel<<<grid, MOE_THREADS, 0, st->stream>>>(g); break;
    default: CHECK(!"cuda moe: expert weights must be MXFP4, BF16 or F32");
  }
  CUDA_CHECK_LAUNCH();
}
