// cuda_moe_gemm.cu: the grouped expert kernels of the MoE op. One thread block per work item
// (one expert, up to CUDA_MOE_BM of its token rows) and CUDA_MOE_BN weight rows; the input rows
// and weights go through shared memory MOE_MMA_BK (tensor cores) or MOE_BK (F32) columns at a
// time, the next tile's global loads in flight (in registers) while the current one is
// multiplied.
//   MXFP4 and BF16 experts: bf16 tensor cores (WMMA 16x16x16, float32 accumulation) on bf16
//     input rows (cuda_moe.cu rounds x once per call; stage 1 writes act in bf16); MXFP4 is
//     decoded to bf16 (exactly) on the way into shared memory: a 256-entry table gives a code
//     byte's two e2m1 values as bf16x2, and one bf16x2 product applies the block's scale (exact
//     while the product stays a normal bf16; other scales take the float path).
//   F32 experts: float32 on the CUDA cores (4 x 4 outputs per thread), so F32 weights give a
//     float32 evaluation, as on the CPU (the golden tests' format).
// Stage 1 gathers the tokens' x rows and ends with the bias and the clamped SwiGLU (alpha 1.702,
// +1 on the linear half) of the interleaved gate/linear outputs; stage 2 reads those rows and
// writes each pair's routing-weighted output row (bias included) for cuda_moe.cu to sum. Knows
// nothing of routing.
#include <mma.h>

#include "backend/cuda/cuda_async.cuh"
#include "backend/cuda/cuda_decode.cuh"
#include "backend/cuda/cuda_moe.cuh"

#define MOE_BM CUDA_MOE_BM
#define MOE_BN CUDA_MOE_BN
#define MOE_BK 64         // columns per shared tile (F32 kernel)
#define MOE_MMA_HALVES 2  // tensor-core kernel: 2 x MOE_BK columns per shared tile
#define MOE_MMA_BK (MOE_MMA_HALVES * MOE_BK)
#define MOE_PAD 8  // bf16 elements after each shared row (keeps WMMA's 32-byte alignment)
#define MOE_THREADS 128

// This block's work item.
struct CudaMoeTile {
  int e;     // expert within the launch (g.w[e]); its local index is g.first + e
  int pos0;  // its first position in g.sorted
  int rows;  // token rows, 1 .. MOE_BM
  int n0;    // first weight row
};

// False when the block has nothing to do (past the items, or another launch's expert).
static __device__ bool cuda_moe_tile(const CudaMoeGemm &g, CudaMoeTile *t) {
  if ((int)blockIdx.x >= *g.num_items) return false;
  const int4 item = g.items[blockIdx.x];
  t->e = item.x - g.first;
  t->pos0 = item.y, t->rows = item.z, t->n0 = blockIdx.y * MOE_BN;
  return t->e >= 0 && t->e < g.count;
}

// The row input row r reads (stage 1: its token's x; stage 2: its act row), of x and act_in
// (float) or x_bf16 and act_bf16; NULL past the tile's rows. pairs: [MOE_BM] the rows' pair ids.
template <typename T>
static __device__ const T *cuda_moe_a_row(const T *x, const T *act_in, const CudaMoeGemm &g,
                                          const int *pairs, const CudaMoeTile &t, int r) {
  if (r >= t.rows) return nullptr;
  return g.stage == 1 ? x + (int64_t)(pairs[r] / g.top_k) * g.k
                      : act_in + (int64_t)(t.pos0 + r) * g.k;
}

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

// Weight tile loaders: 32 columns (one MXFP4 block) of one weight row per thread (row tid / 2,
// columns (tid % 2) * 32). lut: the MXFP4 table (cuda_moe_lut_init), unused by the other formats.
// The tensor cores' formats (MXFP4, BF16) copy their raw bytes asynchronously into a pipeline
// Stage (fetch, STAGES of them in flight), each thread into slots of its own, which that same
// thread reads back (read) and decodes into the bf16 tile (store_bf16); valid false (the row or
// columns do not exist) copies zeros. F32 loads into registers (load) and stores transposed.
template <int FMT>
struct CudaMoeB;

// lut[byte] = the bf16x2 bits of e2m1(byte & 15) (low half) and e2m1(byte >> 4) (high half).
static __device__ void cuda_moe_lut_init(uint32_t *lut) {
  for (int i = threadIdx.x; i < 256; i += blockDim.x)
    lut[i] = __float_as_uint(cuda_e2m1(i & 15u)) >> 16 |
             (__float_as_uint(cuda_e2m1(i >> 4)) & 0xffff0000u);
}

// 4 bytes from src to dst (both 4-byte aligned), or zeros where not valid (src still mapped).
static __device__ __forceinline__ void cuda_copy4_async(void *dst, const void *src, bool valid) {
  const unsigned to = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(to), "l"(src),
               "r"(valid ? 4 : 0));
}

template <>
struct CudaMoeB<WEIGHT_MXFP4> {
  static constexpr int STAGES = 5;
  // Per half of the k tile: each thread's 16 code bytes, and the aligned word holding its scale.
  struct Stage {
    uint4 q[MOE_MMA_HALVES][MOE_THREADS];
    uint32_t s[MOE_MMA_HALVES][MOE_THREADS];
  };
  uint4 q;
  uint32_t scale;
  static __device__ int64_t block_of(int k, int64_t row, int col) {
    return row * (k / 32) + col / 32;
  }
  static __device__ void fetch(Stage &st, int h, const void *w, const uint8_t *scales, int k,
                               bool valid, int64_t row, int col) {
    const int64_t block = valid ? block_of(k, row, col) : 0;
    cuda_copy16_async(&st.q[h][threadIdx.x], (const uint4 *)w + block, valid);
    const uintptr_t at = (uintptr_t)(scales + block);
    cuda_copy4_async(&st.s[h][threadIdx.x], (const void *)(at & ~(uintptr_t)3), valid);
  }
  __device__ void read(const Stage &st, int h, const uint8_t *scales, int k, int64_t row, int col) {
    q = st.q[h][threadIdx.x];
    const uintptr_t at = (uintptr_t)(scales + block_of(k, row, col));
    scale = st.s[h][threadIdx.x] >> (8 * (at & 3)) & 0xffu;  // zero-filled words give 0
  }
  // dst: [32]; byte j: values 2j, 2j+1
  __device__ void store_bf16(__nv_bfloat16 *dst, const uint32_t *lut) const {
    const uint32_t words[4] = {q.x, q.y, q.z, q.w};
    if (scale >= 2 && scale <= 252) {  // e2m1 (2^-1 .. 6) x 2^(scale - 127): a normal bf16
      const uint32_t s = scale << 7 | scale << 23;  // bf16x2 of 2^(scale - 127), twice
      const __nv_bfloat162 s2 = *(const __nv_bfloat162 *)&s;
#pragma unroll
      for (int wd = 0; wd < 4; wd++) {
        uint32_t h[4];
#pragma unroll
        for (int b = 0; b < 4; b++) {
          const uint32_t pair = lut[(words[wd] >> (8 * b)) & 0xffu];
          const __nv_bfloat162 v = __hmul2(*(const __nv_bfloat162 *)&pair, s2);
          h[b] = *(const uint32_t *)&v;
        }
        ((uint4 *)dst)[wd] = make_uint4(h[0], h[1], h[2], h[3]);
      }
      return;
    }
#pragma unroll
    for (int wd = 0; wd < 4; wd++) {
      __nv_bfloat162 h[4];
#pragma unroll
      for (int b = 0; b < 4; b++) {
        const uint32_t byte = (words[wd] >> (8 * b)) & 0xffu;
        h[b] = __floats2bfloat162_rn(cuda_mxfp4_value(byte & 15u, scale),
                                     cuda_mxfp4_value(byte >> 4, scale));
      }
      ((uint4 *)dst)[wd] = *(const uint4 *)h;
    }
  }
};

template <>
struct CudaMoeB<WEIGHT_BF16> {
  static constexpr int STAGES = 3;
  struct Stage {
    uint4 q[MOE_MMA_HALVES][4][MOE_THREADS];  // per half: each thread's 64 bytes
  };
  uint4 q[4];
  static __device__ void fetch(Stage &st, int h, const void *w, const uint8_t *scales, int k,
                               bool valid, int64_t row, int col) {
    (void)scales;
    const uint4 *src = (const uint4 *)((const __nv_bfloat16 *)w + (valid ? row * k + col : 0));
#pragma unroll
    for (int i = 0; i < 4; i++) cuda_copy16_async(&st.q[h][i][threadIdx.x], src + i, valid);
  }
  __device__ void read(const Stage &st, int h, const uint8_t *scales, int k, int64_t row, int col) {
    (void)scales, (void)k, (void)row, (void)col;
#pragma unroll
    for (int i = 0; i < 4; i++) q[i] = st.q[h][i][threadIdx.x];
  }
  __device__ void store_bf16(__nv_bfloat16 *dst, const uint32_t *lut) const {
    (void)lut;
#pragma unroll
    for (int i = 0; i < 4; i++) ((uint4 *)dst)[i] = q[i];
  }
};

template <>
struct CudaMoeB<WEIGHT_F32> {
  float4 q[8];
  __device__ void load(const void *w, const uint8_t *scales, int k, bool valid, int64_t row,
                       int col) {
    (void)scales;
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

// Stage 1's epilogue: bias, clamp (gate above only, linear both sides), SwiGLU into act (or,
// with bf16_act, act_bf16). Stage 2's: y[pair] = routing weight * (row + bias).
// c: [MOE_BM, MOE_BN + 4] the products
static __device__ void cuda_moe_epilogue(const CudaMoeGemm &g, const float (*c)[MOE_BN + 4],
                                         const int *pairs, const CudaMoeTile &t, bool bf16_act) {
  const float *bias = g.bias + (int64_t)(g.first + t.e) * g.n;  // [n] of this expert
  if (g.stage == 1) {
    const int half_n = g.n / 2;
    for (int idx = threadIdx.x; idx < MOE_BM * (MOE_BN / 2); idx += MOE_THREADS) {
      const int r = idx / (MOE_BN / 2), j = idx % (MOE_BN / 2), n = t.n0 + 2 * j;
      if (r >= t.rows || n >= g.n) continue;
      const float gate = fminf(c[r][2 * j] + bias[n], g.limit);
      const float lin = fminf(fmaxf(c[r][2 * j + 1] + bias[n + 1], -g.limit), g.limit);
      const float glu = gate / (1.0f + expf(-GPTOSS_SWIGLU_ALPHA * gate));
      const int64_t at = (int64_t)(t.pos0 + r) * half_n + n / 2;
      if (bf16_act)
        g.act_bf16[at] = __float2bfloat16_rn(glu * (lin + 1.0f));
      else
        g.act[at] = glu * (lin + 1.0f);
    }
  } else {
    for (int idx = threadIdx.x; idx < MOE_BM * MOE_BN; idx += MOE_THREADS) {
      const int r = idx / MOE_BN, col = idx % MOE_BN, n = t.n0 + col;
      if (r >= t.rows || n >= g.n) continue;
      const int pair = pairs[r];
      g.y[(int64_t)pair * g.n + n] = g.pair_weights[pair] * (c[r][col] + bias[n]);
    }
  }
}

// The tensor-core kernel's shared memory: the bf16 tiles, then the pipeline stages of raw
// weights, whose space holds the products once the last tile is multiplied.
template <int FMT>
struct CudaMoeMmaSmem {
  __nv_bfloat16 As[MOE_BM][MOE_MMA_BK + MOE_PAD];
  __nv_bfloat16 Bs[MOE_BN][MOE_MMA_BK + MOE_PAD];
  union {
    typename CudaMoeB<FMT>::Stage stages[CudaMoeB<FMT>::STAGES];
    float Cs[MOE_BM][MOE_BN + 4];
  };
  int pairs[MOE_BM];
  uint32_t lut[256];
};

// MXFP4 or BF16 experts on bf16 tensor cores. The weights' raw bytes run STAGES - 1 tiles ahead
// (cp.async), the input rows one tile ahead (registers: they are few, and mostly in L2). Warp w
// computes output columns w * 16 .. + 16 of the tile's rows 0 .. 15 and, when the tile has
// more, 16 .. 31.
template <int FMT>
__global__ void __launch_bounds__(MOE_THREADS)
    cuda_moe_mma_kernel(const __grid_constant__ CudaMoeGemm g) {
  using namespace nvcuda;
  using Loader = CudaMoeB<FMT>;
  constexpr int STAGES = Loader::STAGES;
  CudaMoeTile t;
  if (!cuda_moe_tile(g, &t)) return;
  extern __shared__ __align__(128) unsigned char moe_smem[];
  CudaMoeMmaSmem<FMT> &sm = *(CudaMoeMmaSmem<FMT> *)moe_smem;
  const int tid = threadIdx.x, warp = tid / 32;
  if (tid < MOE_BM) sm.pairs[tid] = tid < t.rows ? g.sorted[t.pos0 + tid] : -1;
  if (FMT == WEIGHT_MXFP4) cuda_moe_lut_init(sm.lut);
  __syncthreads();

  const int a_r = tid / 4, a_c = (tid % 4) * 16, b_r = tid / 2, b_c = (tid % 2) * 32;
  const __nv_bfloat16 *a_row =
      cuda_moe_a_row(g.x_bf16, (const __nv_bfloat16 *)g.act_bf16, g, sm.pairs, t, a_r);
  const int64_t b_row = t.n0 + b_r;
  const void *w = g.w[t.e];
  const uint8_t *scales = g.scales[t.e];
  const int num_k_tiles = (g.k + MOE_MMA_BK - 1) / MOE_MMA_BK;
  // Tile kt's weights into its stage; one copy group per call, empty past the last tile, so
  // that the waits below count the same in every iteration.
  auto fetch = [&](int kt) {
    if (kt < num_k_tiles) {
#pragma unroll
      for (int h = 0; h < MOE_MMA_HALVES; h++) {
        const int col = kt * MOE_MMA_BK + h * MOE_BK + b_c;
        Loader::fetch(sm.stages[kt % STAGES], h, w, scales, g.k, b_row < g.n && col < g.k, b_row,
                      col);
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
      Loader b;
      b.read(sm.stages[kt % STAGES], h, scales, g.k, b_row, kt * MOE_MMA_BK + h * MOE_BK + b_c);
      b.store_bf16(&sm.Bs[b_r][h * MOE_BK + b_c], sm.lut);
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
  CudaMoeB<WEIGHT_F32> b;
  a.load(a_row, a_c, g.k);
  b.load(w, nullptr, g.k, b_row < g.n && b_c < g.k, b_row, b_c);

  float acc[4][4] = {};
  const int num_k_tiles = (g.k + MOE_BK - 1) / MOE_BK;
  for (int kt = 0; kt < num_k_tiles; kt++) {
    a.store_f32_t(At, a_r, a_c);
    b.store_f32_t(Bt, b_r, b_c);
    __syncthreads();
    if (kt + 1 < num_k_tiles) {
      const int k0 = (kt + 1) * MOE_BK;
      a.load(a_row, k0 + a_c, g.k);
      b.load(w, nullptr, g.k, b_row < g.n && k0 + b_c < g.k, b_row, k0 + b_c);
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

template <int FMT>
static void cuda_moe_mma_launch(CudaState *st, const CudaMoeGemm &g, dim3 grid) {
  const size_t smem = sizeof(CudaMoeMmaSmem<FMT>);
  if (smem > 48 * 1024)
    CUDA_CHECK(cudaFuncSetAttribute(cuda_moe_mma_kernel<FMT>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cuda_moe_mma_kernel<FMT><<<grid, MOE_THREADS, smem, st->stream>>>(g);
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
  const dim3 grid((unsigned)max_items, (unsigned)((g.n + MOE_BN - 1) / MOE_BN));
  switch (g.format) {
    case WEIGHT_MXFP4: cuda_moe_mma_launch<WEIGHT_MXFP4>(st, g, grid); break;
    case WEIGHT_BF16: cuda_moe_mma_launch<WEIGHT_BF16>(st, g, grid); break;
    case WEIGHT_F32: cuda_moe_f32_kernel<<<grid, MOE_THREADS, 0, st->stream>>>(g); break;
    default: CHECK(!"cuda moe: expert weights must be MXFP4, BF16 or F32");
  }
  CUDA_CHECK_LAUNCH();
}
