// cuda_moe_mxfp4.cu: the grouped expert kernel for MXFP4 experts (cuda_moe_gemm.cu launches it
// for that format). One thread block per work item (one expert, up to CUDA_MOE_BM of its token
// rows) and CUDA_MOE_BN weight rows, 16 of them per warp. Nothing of the weights goes through
// shared memory: each thread loads its 16-byte blocks of two weight rows straight into
// registers, a chunk (MX_CHUNK columns) ahead of their use, and decodes them there to bf16x2
// (cuda_mxfp4_decode_word, cuda_decode.cuh: the codes are stored so that 9 logic operations and
// one bf16x2 product for the scale decode 8 of them, cuda_mxfp4_layout.h).
// The products are mma.sync m16n8k16 (bf16 in, float32 accumulation) with the
// weights as the 16-row A operand and up to four 8-token tiles as B, so a decode item of one or
// two tokens computes 8 token rows, not 32.
// Column order: thread q (lane % 4) of a quad owns block q of each 128-column group, and k-step
// s of the group takes its columns 32q + 4s + 0..3 (bytes 2s and 2s + 1 of the block): a sum
// over k is the same in any order, as long as the token rows (read from shared memory, where
// they arrive in MX_CHUNK-column chunks by cp.async, two stages) are taken in that same order.
// In shared memory a token row's 16-byte pieces are swizzled (mx_piece_offset) so that the
// eight lanes of each phase of a 16-byte shared load hit eight different bank quads.
// Per block, once: the input rows' addresses (no division per copy) and each thread's weight
// row pointers (no 64-bit index arithmetic per load). The decode's rare float path is out of
// line (cuda_mxfp4_decode_float): with it inline at the 16 decode sites, or with the chunk loop
// unrolled by two, the kernel ran slower on the H200 (likely more code than the instruction cache
// holds).
#include "backend/cuda/cuda_async.cuh"
#include "backend/cuda/cuda_decode.cuh"
#include "backend/cuda/cuda_mma.cuh"
#include "backend/cuda/cuda_moe_tile.cuh"

#define MX_WARP_ROWS 16                   // weight rows per warp (the mma's 16 rows)
#define MX_GROUP 128                      // columns per group: one 32-column block per quad lane
#define MX_CHUNK 256                      // columns of token rows per shared stage
#define MX_GROUPS (MX_CHUNK / MX_GROUP)   // groups per chunk
#define MX_ROW_BYTES (MX_CHUNK * 2 + 16)  // a token row's chunk in shared memory: 16 (mod 128)
#define MX_STAGES 2
#define MX_PIECES (MX_CHUNK / 8)  // 16-byte pieces of a token row's chunk

static_assert(MX_WARP_ROWS * (MOE_THREADS / 32) == MOE_BN, "the warps cover the block's rows");
static_assert(MOE_THREADS % MX_PIECES == 0,
              "a thread copies the same piece of every row it copies");

struct CudaMoeMxfp4Smem {
  union {
    unsigned char x[MX_STAGES][MOE_BM][MX_ROW_BYTES];  // token rows (bf16), a chunk per stage
    float Cs[MOE_BM][MOE_BN + 4];                      // the products, after the last chunk
  };
  int pairs[MOE_BM];
  const __nv_bfloat16 *rows[MOE_BM];  // the tile rows' input rows (cuda_moe_a_row)
};

// Where piece (q, w) of a group (its columns 32q + 8w .. + 8) lies in the group's 256 bytes of a
// row: line w / 2, bank quad (2q + w) mod 8. The lanes of a load phase read pieces (q = 0..3, w)
// of two consecutive rows, MX_ROW_BYTES (one quad mod 128) apart: eight different quads.
static __device__ __forceinline__ int mx_piece_offset(int q, int w) {
  return 128 * (w >> 1) + 16 * ((2 * q + w) & 7);
}

// This thread's two weight rows (row0 and row0 + 8): their first blocks and scales, and whether
// they exist. w: [n, k / 32] blocks of 16 bytes; scales: [n, k / 32].
struct MxRows {
  const uint4 *w[2];
  const uint8_t *scale[2];
  bool ok[2];
  int blocks;  // per row
};

// One group's weights of one thread: its 16-byte block of rows g and g + 8, and their scales.
struct MxBlocks {
  uint4 q[2];
  uint32_t scale[2];
};

// The rows from row0.
static __device__ __forceinline__ MxRows mx_rows(const uint4 *w, const uint8_t *scales, int n,
                                                 int k, int64_t row0) {
  MxRows rows;
  rows.blocks = k / 32;
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const int64_t row = row0 + 8 * r;
    rows.ok[r] = row < n;
    rows.w[r] = w + (rows.ok[r] ? row : 0) * rows.blocks;
    rows.scale[r] = scales + (rows.ok[r] ? row : 0) * rows.blocks;
  }
  return rows;
}

// Block `block` of both rows (zeros and scale 1.0 where the row or block does not exist).
static __device__ __forceinline__ void mx_load(MxBlocks &m, const MxRows &rows, int block) {
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const bool valid = rows.ok[r] && block < rows.blocks;
    m.q[r] = valid ? __ldg(rows.w[r] + block) : make_uint4(0, 0, 0, 0);
    m.scale[r] = valid ? __ldg(rows.scale[r] + block) : 127u;
  }
}

// One group: acc[nt] += this warp's 16 rows x token tile nt's columns. x: the group's first
// byte in the stage's row 0.
static __device__ __forceinline__ void mx_group(const MxBlocks &m, const unsigned char *x,
                                                int n_tiles, int gq, int q, float (&acc)[4][4]) {
  const uint32_t g_words[4] = {m.q[0].x, m.q[0].y, m.q[0].z, m.q[0].w};
  const uint32_t h_words[4] = {m.q[1].x, m.q[1].y, m.q[1].z, m.q[1].w};
#pragma unroll
  for (int w = 0; w < 4; w++) {  // word w of the blocks: k-steps 2w and 2w + 1
    uint32_t a_g[4], a_h[4];
    cuda_mxfp4_decode_word(g_words[w], m.scale[0], a_g);
    cuda_mxfp4_decode_word(h_words[w], m.scale[1], a_h);
#pragma unroll
    for (int nt = 0; nt < 4; nt++) {
      if (nt >= n_tiles) break;
      // Columns 32q + 8w .. + 8 of token row 8 nt + gq: k-step 2w takes the first four.
      const uint4 xv = *(const uint4 *)(x + (8 * nt + gq) * MX_ROW_BYTES + mx_piece_offset(q, w));
      cuda_mma_bf16(acc[nt], a_g[0], a_h[0], a_g[1], a_h[1], xv.x, xv.y);
      cuda_mma_bf16(acc[nt], a_g[2], a_h[2], a_g[3], a_h[3], xv.z, xv.w);
    }
  }
}

__global__ void __launch_bounds__(MOE_THREADS)
    cuda_moe_mxfp4_kernel(const __grid_constant__ CudaMoeGemm g) {
  CudaMoeTile t;
  if (!cuda_moe_tile(g, &t)) return;
  __shared__ __align__(128) CudaMoeMxfp4Smem sm;
  const int tid = threadIdx.x, warp = tid / 32, gq = tid % 32 / 4, q = tid % 4;
  if (tid < MOE_BM) {
    sm.pairs[tid] = tid < t.rows ? g.sorted[t.pos0 + tid] : -1;
    sm.rows[tid] = cuda_moe_a_row(g.x_bf16, (const __nv_bfloat16 *)g.act_bf16, g, sm.pairs, t, tid);
  }
  __syncthreads();

  const int n_tiles = (t.rows + 7) / 8;
  const int num_chunks = (g.k + MX_CHUNK - 1) / MX_CHUNK;
  // The token rows' chunk c into its stage: this thread copies piece tid % MX_PIECES of rows
  // tid / MX_PIECES, + MOE_THREADS / MX_PIECES, ... (rows past the tile's are left as they are:
  // their products land in columns the epilogue skips); one copy group per call, empty past the
  // last.
  const int piece = tid % MX_PIECES;
  const int piece_at = 2 * MX_GROUP * (piece / 16) + mx_piece_offset(piece / 4 % 4, piece % 4);
  auto fetch = [&](int c) {
    if (c < num_chunks) {
      const int col = c * MX_CHUNK + 8 * piece;
      for (int r = tid / MX_PIECES; r < t.rows; r += MOE_THREADS / MX_PIECES)
        cuda_copy16_async(&sm.x[c % MX_STAGES][r][piece_at],
                          col < g.k ? sm.rows[r] + col : sm.rows[r], col < g.k);
    }
    cuda_copy_commit();
  };

  const MxRows rows =
      mx_rows((const uint4 *)g.w[t.e], g.scales[t.e], g.n, g.k, t.n0 + warp * MX_WARP_ROWS + gq);
  float acc[4][4] = {};
  // Chunk c: its weights are in `cur`; chunk c + 1's go into `next` while c is multiplied.
  auto chunk = [&](int c, const MxBlocks(&cur)[MX_GROUPS], MxBlocks(&next)[MX_GROUPS]) {
    if (c + 1 < num_chunks) {
#pragma unroll
      for (int j = 0; j < MX_GROUPS; j++) mx_load(next[j], rows, 4 * ((c + 1) * MX_GROUPS + j) + q);
    }
    fetch(c + 1);
    cuda_copy_wait<1>();  // chunk c's token rows (this thread's copies) have landed
    __syncthreads();      // and everyone's
#pragma unroll
    for (int j = 0; j < MX_GROUPS; j++) {
      if ((c * MX_GROUPS + j) * MX_GROUP >= g.k) break;
      mx_group(cur[j], &sm.x[c % MX_STAGES][0][2 * MX_GROUP * j], n_tiles, gq, q, acc);
    }
    __syncthreads();  // before the next fetch overwrites the stage (or Cs reuses it)
  };
  MxBlocks cur[MX_GROUPS], next[MX_GROUPS];
#pragma unroll
  for (int j = 0; j < MX_GROUPS; j++) mx_load(next[j], rows, 4 * j + q);
  fetch(0);
  for (int c = 0; c < num_chunks; c++) {
#pragma unroll
    for (int j = 0; j < MX_GROUPS; j++) cur[j] = next[j];
    chunk(c, cur, next);
  }
  // The accumulators: c0, c1 are weight row gq and tokens 2q, 2q + 1 of the tile; c2, c3 row
  // gq + 8.
  const int col = warp * MX_WARP_ROWS + gq;
#pragma unroll
  for (int nt = 0; nt < 4; nt++) {
    if (nt >= n_tiles) break;
    const int tok = 8 * nt + 2 * q;
    sm.Cs[tok][col] = acc[nt][0], sm.Cs[tok + 1][col] = acc[nt][1];
    sm.Cs[tok][col + 8] = acc[nt][2], sm.Cs[tok + 1][col + 8] = acc[nt][3];
  }
  __syncthreads();
  cuda_moe_epilogue(g, sm.Cs, sm.pairs, t, true);
}

void cuda_moe_mxfp4_launch(CudaState *st, const CudaMoeGemm &g, dim3 grid) {
  cuda_moe_mxfp4_kernel<<<grid, MOE_THREADS, 0, st->stream>>>(g);
}
