// cuda_moe_tile.cuh: what the grouped expert kernels (cuda_moe_gemm.cu: BF16 and F32 experts;
// cuda_moe_mxfp4.cu and cuda_moe_wide.cu: MXFP4) share: the block's work item, the input row a
// tile row reads, the clamped SwiGLU and the epilogues of both expert products. Device code only;
// not for use outside engine/backend/cuda.
#ifndef GE_BACKEND_CUDA_CUDA_MOE_TILE_CUH
#define GE_BACKEND_CUDA_CUDA_MOE_TILE_CUH

#include "backend/cuda/cuda_moe.cuh"

#define MOE_BM CUDA_MOE_BM
#define MOE_BN CUDA_MOE_BN
#define MOE_THREADS 128

// This block's work item.
struct CudaMoeTile {
  int e;     // expert within the launch (g.w[e]); its local index is g.first + e
  int pos0;  // its first position in g.sorted
  int rows;  // token rows, 1 .. g.tile_rows
  int n0;    // first weight row
};

// False when the block has nothing to do (past the items, or another launch's expert). bn: the
// weight rows per block (blockIdx.y counts them).
static __device__ bool cuda_moe_tile(const CudaMoeGemm &g, CudaMoeTile *t, int bn = MOE_BN) {
  if ((int)blockIdx.x >= *g.num_items) return false;
  const int4 item = g.items[blockIdx.x];
  t->e = item.x - g.first;
  t->pos0 = item.y, t->rows = item.z, t->n0 = blockIdx.y * bn;
  return t->e >= 0 && t->e < g.count;
}

// The row input row r reads (stage 1: its token's x; stage 2: its act row), of x and act_in
// (float) or x_bf16 and act_bf16; NULL past the tile's rows. pairs: [t.rows] the rows' pair ids.
template <typename T>
static __device__ const T *cuda_moe_a_row(const T *x, const T *act_in, const CudaMoeGemm &g,
                                          const int *pairs, const CudaMoeTile &t, int r) {
  if (r >= t.rows) return nullptr;
  return g.stage == 1 ? x + (int64_t)(pairs[r] / g.top_k) * g.k
                      : act_in + (int64_t)(t.pos0 + r) * g.k;
}

// One SwiGLU output of stage 1 from its gate and linear products (biases added): the gate
// clamped above, the linear clamped both sides, gate * sigmoid(alpha gate) * (linear + 1).
static __device__ __forceinline__ float cuda_moe_swiglu(float gate, float lin, float limit) {
  gate = fminf(gate, limit);
  lin = fminf(fmaxf(lin, -limit), limit);
  return gate / (1.0f + expf(-GPTOSS_SWIGLU_ALPHA * gate)) * (lin + 1.0f);
}

// Stage 1's epilogue: bias, clamp (gate above only, linear both sides), SwiGLU into act (or,
// with bf16_act, act_bf16). Stage 2's: y[pair] = routing weight * (row + bias).
// c: [t.rows or more, MOE_BN + 4] the products
static __device__ void cuda_moe_epilogue(const CudaMoeGemm &g, const float (*c)[MOE_BN + 4],
                                         const int *pairs, const CudaMoeTile &t, bool bf16_act) {
  const float *bias = g.bias + (int64_t)(g.first + t.e) * g.n;  // [n] of this expert
  if (g.stage == 1) {
    const int half_n = g.n / 2;
    for (int idx = threadIdx.x; idx < t.rows * (MOE_BN / 2); idx += MOE_THREADS) {
      const int r = idx / (MOE_BN / 2), j = idx % (MOE_BN / 2), n = t.n0 + 2 * j;
      if (n >= g.n) continue;
      const float out =
          cuda_moe_swiglu(c[r][2 * j] + bias[n], c[r][2 * j + 1] + bias[n + 1], g.limit);
      const int64_t at = (int64_t)(t.pos0 + r) * half_n + n / 2;
      if (bf16_act)
        g.act_bf16[at] = __float2bfloat16_rn(out);
      else
        g.act[at] = out;
    }
  } else {
    for (int idx = threadIdx.x; idx < t.rows * MOE_BN; idx += MOE_THREADS) {
      const int r = idx / MOE_BN, col = idx % MOE_BN, n = t.n0 + col;
      if (n >= g.n) continue;
      const int pair = pairs[r];
      g.y[(int64_t)pair * g.n + n] = g.pair_weights[pair] * (c[r][col] + bias[n]);
    }
  }
}

#endif
