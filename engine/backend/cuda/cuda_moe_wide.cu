// cuda_moe_wide.cu: the wide grouped expert kernels for MXFP4 experts (cuda_moe.cu chooses,
// cuda_moe_gemm.cu launches), in two block shapes of 8 warps:
//   - 128 token rows x 128 weight rows (warps 2 x 4, each 64 x 32), for calls whose experts
//     average CUDA_MOE_WIDE_MIN_ROWS rows or more (prefill-sized steps);
//   - 32 token rows x 256 weight rows (warps 1 x 8, each 32 x 32), for 32-row items (large
//     decode steps: about 32 rows an expert at 1,024 tokens of gpt-oss-120b); only when
//     GPTOSS_CUDA_MOE_KERNEL=wide32 asks for it, until a GPU has measured it against the tile
//     kernel (cuda_moe_mxfp4.cu), which auto keeps for those.
// One block per work item (one expert, up to BM of its token rows) and BN weight rows, in
// 64-column stages (two MXFP4 blocks a row):
//   - the weights of a stage are decoded once per block into shared memory as bf16
//     (cuda_mxfp4_decode_word; a thread decodes one or two 32-column blocks of one row) and then
//     serve all the item's rows, where the tile kernel decodes them in every warp's registers;
//   - the token rows (bf16) arrive by cp.async;
//   - both are read by ldmatrix into mma.sync m16n8k16 (bf16 in, float32 accumulation) with
//     the token rows as the A operand and the weight rows as B, so that a thread's accumulator
//     pair holds two adjacent weight rows of one token: stage 1's gate/linear pair, whose SwiGLU
//     is taken in registers; stage 2 stores each pair of outputs as one float2.
// Warps whose token rows are all past the item's skip the products. Two stages: stage c + 1's
// token copies and weight loads (into registers) are in flight while stage c is multiplied,
// then its weights are decoded into the other buffer, and one barrier per stage. In shared
// memory a row is 8 pieces of 16 bytes, piece p stored at p ^ (row % 8), so that the 8 rows of
// each ldmatrix phase (and of each decoded store) hit 8 different bank quads.
#include "backend/cuda/cuda_async.cuh"
#include "backend/cuda/cuda_decode.cuh"
#include "backend/cuda/cuda_mma.cuh"
#include "backend/cuda/cuda_moe_tile.cuh"

#define WIDE_BK CUDA_MOE_WIDE_BK  // columns per stage
#define WIDE_THREADS 256
#define WIDE_WARPS (WIDE_THREADS / 32)
#define WIDE_PIECES (WIDE_BK / 8)  // 16-byte pieces of a row's stage
#define WIDE_WARP_N 32             // weight rows per warp

static_assert(WIDE_BK == 64 && WIDE_PIECES == 8, "a stage is two MXFP4 blocks: 8 pieces a row");

// A block shape: WARPS_M x (8 / WARPS_M) warps, each 16 M_TILES token rows x 32 weight rows.
template <int WARPS_M, int M_TILES>
struct WideShape {
  static constexpr int warps_m = WARPS_M, m_tiles = M_TILES;
  static constexpr int warps_n = WIDE_WARPS / WARPS_M;
  static constexpr int bm = WARPS_M * 16 * M_TILES;                   // token rows per item
  static constexpr int bn = warps_n * WIDE_WARP_N;                    // weight rows per block
  static constexpr int decodes = bn * (WIDE_BK / 32) / WIDE_THREADS;  // blocks a thread decodes
  static_assert(decodes * WIDE_THREADS == bn * (WIDE_BK / 32), "every block decoded once");
};
using WideShape128 = WideShape<2, 4>;  // 128 x 128
using WideShape32 = WideShape<1, 2>;   // 32 x 256
static_assert(WideShape128::bm == CUDA_MOE_WIDE_BM && WideShape32::bm == CUDA_MOE_BM,
              "the items' rows");

template <typename S>
struct CudaMoeWideSmem {
  struct {
    uint4 a[S::bm][WIDE_PIECES];  // token rows (bf16)
    uint4 b[S::bn][WIDE_PIECES];  // weight rows, decoded (bf16)
  } stage[2];
  int pairs[S::bm];
  const __nv_bfloat16 *rows[S::bm];  // the tile rows' input rows (cuda_moe_a_row)
};

// Piece p of row r in a stage's array.
static __device__ __forceinline__ int wide_piece(int r, int p) { return p ^ (r & 7); }

// One thread's weights of a stage: its 32-column blocks (one or two rows), and their scales.
template <int N>
struct WideBlocks {
  uint4 codes[N];
  uint32_t scale[N];
};

template <typename S>
__global__ void __launch_bounds__(WIDE_THREADS, 2)
    cuda_moe_wide_kernel(const __grid_constant__ CudaMoeGemm g) {
  CudaMoeTile t;
  if (!cuda_moe_tile(g, &t, S::bn)) return;
  extern __shared__ __align__(128) unsigned char wide_smem[];
  CudaMoeWideSmem<S> &sm = *(CudaMoeWideSmem<S> *)wide_smem;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  if (tid < S::bm) {
    sm.pairs[tid] = tid < t.rows ? g.sorted[t.pos0 + tid] : -1;
    sm.rows[tid] = cuda_moe_a_row(g.x_bf16, (const __nv_bfloat16 *)g.act_bf16, g, sm.pairs, t, tid);
  }
  __syncthreads();

  const int num_stages = g.k / WIDE_BK;
  // Token rows: this thread copies piece tid % 8 of rows tid / 8, + 32, ... (rows past the
  // item's are not copied: their products land in rows the epilogue skips).
  const int copy_piece = tid % WIDE_PIECES;
  auto fetch_tokens = [&](int s) {
    auto &dst = sm.stage[s & 1];
    for (int r = tid / WIDE_PIECES; r < t.rows; r += WIDE_THREADS / WIDE_PIECES)
      cuda_copy16_async(&dst.a[r][wide_piece(r, copy_piece)],
                        sm.rows[r] + s * WIDE_BK + 8 * copy_piece, true);
    cuda_copy_commit();
  };
  // Weights: this thread decodes block (tid + 256 i) % 2 of the stage of weight row
  // (tid + 256 i) / 2, i < S::decodes (zeros past the matrix's rows).
  const int blocks_per_row = g.k / 32;
  const uint4 *w_codes[S::decodes];
  const uint8_t *w_scales[S::decodes];
  bool w_ok[S::decodes];
#pragma unroll
  for (int i = 0; i < S::decodes; i++) {
    const int row = (tid + WIDE_THREADS * i) / 2, half = tid % 2;
    w_ok[i] = t.n0 + row < g.n;
    const int64_t first = (int64_t)(w_ok[i] ? t.n0 + row : 0) * blocks_per_row + half;
    w_codes[i] = (const uint4 *)g.w[t.e] + first;
    w_scales[i] = g.scales[t.e] + first;
  }
  auto load_weights = [&](int s, WideBlocks<S::decodes> &b) {
#pragma unroll
    for (int i = 0; i < S::decodes; i++) {
      b.codes[i] = w_ok[i] ? __ldg(w_codes[i] + 2 * s) : make_uint4(0, 0, 0, 0);
      b.scale[i] = w_ok[i] ? __ldg(w_scales[i] + 2 * s) : 127u;
    }
  };
  auto decode_weights = [&](int s, const WideBlocks<S::decodes> &b) {
#pragma unroll
    for (int i = 0; i < S::decodes; i++) {
      const int row = (tid + WIDE_THREADS * i) / 2, half = tid % 2;
      uint4 *dst = sm.stage[s & 1].b[row];
      const uint32_t words[4] = {b.codes[i].x, b.codes[i].y, b.codes[i].z, b.codes[i].w};
#pragma unroll
      for (int j = 0; j < 4; j++) {  // word j: columns 32 half + 8 j .. + 8, piece 4 half + j
        uint32_t out[4];
        cuda_mxfp4_decode_word(words[j], b.scale[i], out);
        dst[wide_piece(row, 4 * half + j)] = make_uint4(out[0], out[1], out[2], out[3]);
      }
    }
  };

  // ldmatrix addresses: A (token rows, one m16 tile): lane l gives row l % 16 at piece l / 16
  // of the k-step; B (weight rows, two n8 tiles): lane l gives row 8 (l / 16) + l % 8 at piece
  // (l / 8) % 2.
  const int m_base = (warp / S::warps_n) * 16 * S::m_tiles;
  const int n_base = (warp % S::warps_n) * WIDE_WARP_N;
  const int a_row = lane % 16, a_piece = lane / 16;
  const int b_row = 8 * (lane / 16) + lane % 8, b_piece = (lane / 8) % 2;
  const int m_tiles = min(S::m_tiles, max(0, (t.rows - m_base + 15) / 16));  // live m16 tiles
  float acc[S::m_tiles][4][4] = {};  // [m16 tile][n8 tile][fragment]
  auto multiply = [&](int s) {
    const auto &src = sm.stage[s & 1];
#pragma unroll
    for (int ks = 0; ks < WIDE_BK / 16; ks++) {
      uint32_t b[4][2];  // [n8 tile] b0, b1
#pragma unroll
      for (int np = 0; np < 2; np++) {
        const int r = n_base + 16 * np + b_row;
        uint32_t f[4];
        cuda_ldmatrix_x4(f, &src.b[r][wide_piece(r, 2 * ks + b_piece)]);
        b[2 * np][0] = f[0], b[2 * np][1] = f[1], b[2 * np + 1][0] = f[2], b[2 * np + 1][1] = f[3];
      }
#pragma unroll
      for (int mt = 0; mt < S::m_tiles; mt++) {
        if (mt >= m_tiles) break;
        const int r = m_base + 16 * mt + a_row;
        uint32_t a[4];
        cuda_ldmatrix_x4(a, &src.a[r][wide_piece(r, 2 * ks + a_piece)]);
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
          cuda_mma_bf16(acc[mt][nt], a[0], a[1], a[2], a[3], b[nt][0], b[nt][1]);
      }
    }
  };

  WideBlocks<S::decodes> next;
  load_weights(0, next);
  fetch_tokens(0);
  decode_weights(0, next);
  cuda_copy_wait<0>();
  __syncthreads();
  for (int s = 0; s < num_stages; s++) {
    const bool more = s + 1 < num_stages;
    if (more) {  // into the other buffer, last read before the previous barrier
      fetch_tokens(s + 1);
      load_weights(s + 1, next);
    }
    multiply(s);
    if (more) {
      decode_weights(s + 1, next);
      cuda_copy_wait<0>();
    }
    __syncthreads();
  }

  // Epilogue from the accumulators: fragment 2h + j is token row g + 8h of the m16 tile and
  // weight row 2q + j of the n8 tile (g = lane / 4, q = lane % 4).
  const float *bias = g.bias + (int64_t)(g.first + t.e) * g.n;  // [n] of this expert
  const int gq = lane / 4, q = lane % 4;
#pragma unroll
  for (int mt = 0; mt < S::m_tiles; mt++) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int r = m_base + 16 * mt + gq + 8 * h;
      if (r >= t.rows) continue;
#pragma unroll
      for (int nt = 0; nt < 4; nt++) {
        const int n = t.n0 + n_base + 8 * nt + 2 * q;  // even; g.n is even
        if (n >= g.n) continue;
        const float v0 = acc[mt][nt][2 * h] + bias[n], v1 = acc[mt][nt][2 * h + 1] + bias[n + 1];
        if (g.stage == 1) {
          g.act_bf16[(int64_t)(t.pos0 + r) * (g.n / 2) + n / 2] =
              __float2bfloat16_rn(cuda_moe_swiglu(v0, v1, g.limit));
        } else {
          const int pair = sm.pairs[r];
          const float w = g.pair_weights[pair];
          *(float2 *)&g.y[(int64_t)pair * g.n + n] = make_float2(w * v0, w * v1);
        }
      }
    }
  }
}

template <typename S>
static void cuda_moe_wide_run(CudaState *st, const CudaMoeGemm &g, int max_items) {
  const size_t smem = sizeof(CudaMoeWideSmem<S>);
  cuda_allow_smem(st, (const void *)cuda_moe_wide_kernel<S>, smem);
  const dim3 grid((unsigned)max_items, (unsigned)((g.n + S::bn - 1) / S::bn));
  cuda_moe_wide_kernel<S><<<grid, WIDE_THREADS, smem, st->stream>>>(g);
}

void cuda_moe_wide_launch(CudaState *st, const CudaMoeGemm &g, int max_items) {
  CHECK(g.format == WEIGHT_MXFP4 && g.wide && g.k % WIDE_BK == 0);
  if (g.tile_rows == WideShape128::bm)
    cuda_moe_wide_run<WideShape128>(st, g, max_items);
  else if (g.tile_rows == WideShape32::bm)
    cuda_moe_wide_run<WideShape32>(st, g, max_items);
  else
    CHECK(!"cuda moe: the wide kernel takes items of 128 or 32 rows");
}
