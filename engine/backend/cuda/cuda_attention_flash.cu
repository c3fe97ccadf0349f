// cuda_attention_flash.cu: attention on tensor cores over a bf16 KV cache with heads of 64
// (FlashAttention-2's scheme, with sinks, the sliding window and the paged cache), in two
// kernels that share one per-warp core (fa_rows_chunk):
//   - prefill (the sequences of a batch with CUDA_ATTN_FLASH_MIN_TOKENS new tokens or more): one
//     block of 8 warps per (tile of up to CUDA_ATTN_FLASH_TOKENS tokens of one sequence, KV
//     head, up to 8 of its query heads): up to 128 query rows, 16 a warp, share each chunk of 64
//     keys, which the block copies (cp.async) through the block table one chunk ahead;
//   - decode (the other sequences: tiles of up to CUDA_ATTN_TILE_TOKENS tokens, so up to 32
//     rows): one block of 4 warps per tile, KV head and chunk of heads; the keys are split
//     across the warps (flash-decoding: warp w takes chunks w, w + 4, ... of 32 keys, each warp
//     copying its own), each warp runs every row over its keys, and the four partial results
//     (max, sum, output) are combined through shared memory at the end.
// The core: a warp holds 16 query rows as bf16 mma fragments, computes a chunk's scores
// S = Q K^T with mma.sync m16n8k16 (K rows by ldmatrix), masks and scales them, keeps the
// online softmax in registers (the running max starts at the row's sink, as on the CUDA cores),
// rounds P = exp(S - max) to bf16 and adds P V (V by ldmatrix.trans) into float32 accumulators.
// The sink's exp(sink - max) joins the denominator at the end. Queries and P are rounded to bf16
// (the cache already is): within bf16 tolerance of the float32 kernel, not bit for bit. In shared
// memory a key row is 8 pieces of 16 bytes, piece p at p ^ (row % 8), so each ldmatrix phase hits
// 8 bank quads.
#include <cuda_bf16.h>
#include <math.h>

#include "backend/cuda/cuda_async.cuh"
#include "backend/cuda/cuda_attention.cuh"
#include "backend/cuda/cuda_mma.cuh"

#define FA_D 64                                     // head dimension
#define FA_PIECES (FA_D / 8)                        // 16-byte pieces of a key row
#define FA_HEADS CUDA_ATTN_HEADS_PER_BLOCK          // query heads per block
#define FA_WARPS 8                                  // prefill: 16 rows each
#define FA_KEYS 64                                  // prefill: keys per chunk
#define FD_WARPS 4                                  // decode: warps splitting the keys
#define FD_KEYS 32                                  // decode: keys per chunk (of one warp)
#define FD_ROWS (CUDA_ATTN_TILE_TOKENS * FA_HEADS)  // decode: rows per block, at most

static_assert(CUDA_ATTN_FLASH_TOKENS * FA_HEADS == 16 * FA_WARPS, "16 rows a prefill warp");
static_assert(FD_ROWS == 32, "two m16 tiles of rows a decode warp");
static_assert(FA_PIECES == 8, "the swizzle takes 8 pieces a row");

// A chunk of KEYS keys and values in shared memory, pieces swizzled (fa_piece).
template <int KEYS>
struct FaChunk {
  uint4 k[KEYS][FA_PIECES];
  uint4 v[KEYS][FA_PIECES];
};

static __device__ __forceinline__ int fa_piece(int row, int p) { return p ^ (row & 7); }

// lo and hi rounded to bf16, as one word (lo in the low half: the lower address).
static __device__ __forceinline__ uint32_t fa_bf16x2(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *(const uint32_t *)&h;
}

static __device__ __forceinline__ float fa_quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

static __device__ __forceinline__ float fa_quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// Copies chunk keys [key0, key0 + KEYS) of the block's KV head (zeros past kmax) into c: piece
// `first`, first + step, ... of its 2 x KEYS x 8 (K, then V) by this thread.
template <int KEYS>
static __device__ __forceinline__ void fa_fetch(FaChunk<KEYS> &c, const CudaAttnParams &p,
                                                const CudaAttnBlock &b, int key0, int first,
                                                int step) {
  const __nv_bfloat16 *k_cache = (const __nv_bfloat16 *)p.k_cache;
  const __nv_bfloat16 *v_cache = (const __nv_bfloat16 *)p.v_cache;
  for (int idx = first; idx < 2 * KEYS * FA_PIECES; idx += step) {
    const int is_v = idx / (KEYS * FA_PIECES), key = idx / FA_PIECES % KEYS;
    const int piece = idx % FA_PIECES, j = key0 + key;
    const bool valid = j <= b.kmax;
    const int64_t at = cuda_attn_key_at(p, b, j) + 8 * piece;
    uint4 *dst = is_v ? &c.v[key][fa_piece(key, piece)] : &c.k[key][fa_piece(key, piece)];
    cuda_copy16_async(dst, (is_v ? v_cache : k_cache) + at, valid);
  }
}

// One m16 tile of query rows in a warp: this thread's two rows (fragment rows g and g + 8).
struct FaRows {
  bool live[2];
  int tok[2], head[2], pos[2];
  float m[2], l[2];           // the online softmax's running max (from the sink), this lane's sum
  uint32_t qa[FA_D / 16][4];  // the rows' queries as A fragments of the 4 16-column k-steps
  float o[FA_D / 8][4];       // P V: dims 8 dt + 2q, + 1 of row g (0, 1) and row g + 8 (2, 3)
};

// The rows first .. first + 15 of the block (row r: token t0 + r / gh, head kvh * group +
// h_begin + r % gh; rows past nrows are dead: zero queries, nothing written).
static __device__ __forceinline__ void fa_rows_init(FaRows &r, const CudaAttnParams &p,
                                                    const CudaAttnBlock &b, int first) {
  const int lane = threadIdx.x % 32, gq = lane / 4, q = lane % 4;
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int row = first + gq + 8 * h;
    r.live[h] = row < b.nrows;
    r.tok[h] = b.t0 + (r.live[h] ? row / b.gh : 0);
    r.head[h] = b.kvh * p.group + b.h_begin + (r.live[h] ? row % b.gh : 0);
    r.pos[h] = r.live[h] ? p.positions[r.tok[h]] : -1;
    r.m[h] = r.live[h] ? p.sinks[r.head[h]] : 0.0f;
    r.l[h] = 0.0f;
  }
#pragma unroll
  for (int ks = 0; ks < FA_D / 16; ks++) {
#pragma unroll
    for (int f = 0; f < 4; f++) {  // a0: row g, cols 2q; a1: row g + 8; a2, a3: cols 2q + 8
      const int h = f & 1, col = 16 * ks + 2 * q + 8 * (f >> 1);
      float2 x = make_float2(0.0f, 0.0f);
      if (r.live[h])
        x = *(const float2 *)(p.q + (int64_t)r.tok[h] * p.q_stride + r.head[h] * FA_D + col);
      r.qa[ks][f] = fa_bf16x2(x.x, x.y);
    }
  }
#pragma unroll
  for (int dt = 0; dt < FA_D / 8; dt++) r.o[dt][0] = r.o[dt][1] = r.o[dt][2] = r.o[dt][3] = 0.0f;
}

// The rows over chunk c (its keys key0 .. key0 + KEYS - 1): scores, mask and scale, the online
// softmax, O += P V. The whole warp calls it.
template <int KEYS>
static __device__ __forceinline__ void fa_rows_chunk(FaRows &r, const FaChunk<KEYS> &c, int key0,
                                                     const CudaAttnParams &p) {
  const int lane = threadIdx.x % 32, q = lane % 4;
  float sc[KEYS / 8][4] = {};  // n8 tile nt: keys 8 nt .. + 8
#pragma unroll
  for (int ks = 0; ks < FA_D / 16; ks++) {
#pragma unroll
    for (int np = 0; np < KEYS / 16; np++) {
      const int key = 16 * np + 8 * (lane / 16) + lane % 8;
      uint32_t f[4];
      cuda_ldmatrix_x4(f, &c.k[key][fa_piece(key, 2 * ks + lane / 8 % 2)]);
      cuda_mma_bf16(sc[2 * np], r.qa[ks][0], r.qa[ks][1], r.qa[ks][2], r.qa[ks][3], f[0], f[1]);
      cuda_mma_bf16(sc[2 * np + 1], r.qa[ks][0], r.qa[ks][1], r.qa[ks][2], r.qa[ks][3], f[2], f[3]);
    }
  }
  float mx[2] = {r.m[0], r.m[1]};
#pragma unroll
  for (int nt = 0; nt < KEYS / 8; nt++) {
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int h = e >> 1, j = key0 + 8 * nt + 2 * q + (e & 1);
      const bool seen = r.live[h] && j <= r.pos[h] && (p.window <= 0 || r.pos[h] - j < p.window);
      sc[nt][e] = seen ? sc[nt][e] * p.scale : -INFINITY;
      mx[h] = fmaxf(mx[h], sc[nt][e]);
    }
  }
  float corr[2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    mx[h] = fa_quad_max(mx[h]);  // the 4 lanes of a quad hold the same rows
    corr[h] = expf(r.m[h] - mx[h]);
    r.m[h] = mx[h];
    r.l[h] *= corr[h];
  }
#pragma unroll
  for (int nt = 0; nt < KEYS / 8; nt++) {
#pragma unroll
    for (int e = 0; e < 4; e++) {
      sc[nt][e] = expf(sc[nt][e] - r.m[e >> 1]);
      r.l[e >> 1] += sc[nt][e];
    }
  }
#pragma unroll
  for (int dt = 0; dt < FA_D / 8; dt++) {
    r.o[dt][0] *= corr[0], r.o[dt][1] *= corr[0];
    r.o[dt][2] *= corr[1], r.o[dt][3] *= corr[1];
  }
  // O += P V: k-step kk is keys 16 kk .. + 16 (score tiles 2 kk, 2 kk + 1 as A fragments).
#pragma unroll
  for (int kk = 0; kk < KEYS / 16; kk++) {
    const uint32_t a0 = fa_bf16x2(sc[2 * kk][0], sc[2 * kk][1]);
    const uint32_t a1 = fa_bf16x2(sc[2 * kk][2], sc[2 * kk][3]);
    const uint32_t a2 = fa_bf16x2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
    const uint32_t a3 = fa_bf16x2(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
#pragma unroll
    for (int dp = 0; dp < FA_D / 16; dp++) {  // dims 16 dp .. + 16: two n8 tiles
      const int key = 16 * kk + 8 * (lane / 8 % 2) + lane % 8;
      uint32_t f[4];
      cuda_ldmatrix_x4_trans(f, &c.v[key][fa_piece(key, 2 * dp + lane / 16)]);
      cuda_mma_bf16(r.o[2 * dp], a0, a1, a2, a3, f[0], f[1]);
      cuda_mma_bf16(r.o[2 * dp + 1], a0, a1, a2, a3, f[2], f[3]);
    }
  }
}

// Prefill: one block's 8 warps over every chunk of the tile's keys, together.
__global__ void __launch_bounds__(32 * FA_WARPS)
    cuda_attention_flash_kernel(const __grid_constant__ CudaAttnParams p) {
  __shared__ __align__(128) FaChunk<FA_KEYS> stages[2];
  const CudaAttnBlock b = cuda_attn_block(p);
  const int warp = threadIdx.x / 32, q = threadIdx.x % 4;
  const int num_chunks = b.kmax >= b.kmin ? (b.kmax - b.kmin) / FA_KEYS + 1 : 0;
  auto fetch = [&](int c) {  // one copy group a call, empty past the last chunk
    if (c < num_chunks)
      fa_fetch(stages[c & 1], p, b, b.kmin + c * FA_KEYS, threadIdx.x, 32 * FA_WARPS);
    cuda_copy_commit();
  };
  FaRows r;
  fa_rows_init(r, p, b, 16 * warp);
  const bool warp_live = 16 * warp < b.nrows;
  fetch(0);
  for (int c = 0; c < num_chunks; c++) {
    fetch(c + 1);
    cuda_copy_wait<1>();  // chunk c's copies (this thread's) have landed
    __syncthreads();      // and everyone's
    if (warp_live) fa_rows_chunk(r, stages[c & 1], b.kmin + c * FA_KEYS, p);
    __syncthreads();  // before the next fetch overwrites this stage
  }
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const float total = fa_quad_sum(r.l[h]);
    if (!r.live[h]) continue;
    const float inv = 1.0f / (total + expf(p.sinks[r.head[h]] - r.m[h]));
    float *out = p.out + (int64_t)r.tok[h] * p.num_heads * FA_D + (int64_t)r.head[h] * FA_D;
#pragma unroll
    for (int dt = 0; dt < FA_D / 8; dt++)
      *(float2 *)(out + 8 * dt + 2 * q) =
          make_float2(r.o[dt][2 * h] * inv, r.o[dt][2 * h + 1] * inv);
  }
}

// Decode: each warp's partial result, for the combination.
struct FdPartial {
  float o[FD_ROWS][FA_D];
  float m[FD_ROWS], l[FD_ROWS];
};

union CudaFlashDecodeSmem {
  FaChunk<FD_KEYS> stages[FD_WARPS][2];  // each warp's own two
  FdPartial part[FD_WARPS];
};

// Decode: the block's 4 warps split the tile's key chunks, then combine.
__global__ void __launch_bounds__(32 * FD_WARPS)
    cuda_attention_flash_decode_kernel(const __grid_constant__ CudaAttnParams p) {
  extern __shared__ __align__(128) unsigned char fd_smem[];
  CudaFlashDecodeSmem &sm = *(CudaFlashDecodeSmem *)fd_smem;
  const CudaAttnBlock b = cuda_attn_block(p);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gq = lane / 4, q = lane % 4;
  const int num_chunks = b.kmax >= b.kmin ? (b.kmax - b.kmin) / FD_KEYS + 1 : 0;
  const bool two_tiles = b.nrows > 16;
  // This warp's i-th chunk, warp + FD_WARPS i, into its stage i % 2 (one copy group a call).
  auto fetch = [&](int i) {
    const int c = warp + FD_WARPS * i;
    if (c < num_chunks) fa_fetch(sm.stages[warp][i & 1], p, b, b.kmin + c * FD_KEYS, lane, 32);
    cuda_copy_commit();
  };
  FaRows r[2];
  fa_rows_init(r[0], p, b, 0);
  fa_rows_init(r[1], p, b, 16);
  fetch(0);
  for (int i = 0; warp + FD_WARPS * i < num_chunks; i++) {
    fetch(i + 1);
    cuda_copy_wait<1>();  // chunk i's copies (this lane's) have landed
    __syncwarp();         // and the warp's
    const int key0 = b.kmin + (warp + FD_WARPS * i) * FD_KEYS;
    fa_rows_chunk(r[0], sm.stages[warp][i & 1], key0, p);
    if (two_tiles) fa_rows_chunk(r[1], sm.stages[warp][i & 1], key0, p);
    __syncwarp();  // before the next fetch overwrites this stage
  }
  cuda_copy_wait<0>();
  __syncthreads();  // every warp is done with the stages: their space takes the partials
  FdPartial &mine = sm.part[warp];
#pragma unroll
  for (int t = 0; t < 2; t++) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int row = 16 * t + gq + 8 * h;
      const float total = fa_quad_sum(r[t].l[h]);
      if (q == 0) mine.m[row] = r[t].m[h], mine.l[row] = total;
#pragma unroll
      for (int dt = 0; dt < FA_D / 8; dt++)
        *(float2 *)&mine.o[row][8 * dt + 2 * q] =
            make_float2(r[t].o[dt][2 * h], r[t].o[dt][2 * h + 1]);
    }
  }
  __syncthreads();
  // out = sum over warps of o_w e^(m_w - m) / (sum of l_w e^(m_w - m) + e^(sink - m)).
  for (int idx = threadIdx.x; idx < b.nrows * FA_D; idx += 32 * FD_WARPS) {
    const int row = idx / FA_D, d = idx % FA_D;
    const int tok = b.t0 + row / b.gh, head = b.kvh * p.group + b.h_begin + row % b.gh;
    float m = sm.part[0].m[row];
    for (int w = 1; w < FD_WARPS; w++) m = fmaxf(m, sm.part[w].m[row]);
    float num = 0.0f, den = expf(p.sinks[head] - m);
    for (int w = 0; w < FD_WARPS; w++) {
      const float scale = expf(sm.part[w].m[row] - m);
      num += sm.part[w].o[row][d] * scale;
      den += sm.part[w].l[row] * scale;
    }
    p.out[(int64_t)tok * p.num_heads * FA_D + (int64_t)head * FA_D + d] = num / den;
  }
}

bool cuda_attention_flash_fits(const AttentionArgs *a) {
  // queries are read as float2: an even row stride at an 8-byte-aligned start
  return a->kv->dtype == KV_BF16 && a->head_dim == FA_D && a->q_stride % 2 == 0 &&
         (uintptr_t)a->q % 8 == 0;
}

void cuda_attention_flash_launch(CudaState *st, const CudaAttnParams &p, int num_tiles,
                                 int num_kv_heads) {
  if (num_tiles == 0) return;
  const int chunks = (p.group + FA_HEADS - 1) / FA_HEADS;
  const dim3 grid((unsigned)num_tiles, (unsigned)(num_kv_heads * chunks));
  cuda_attention_flash_kernel<<<grid, 32 * FA_WARPS, 0, st->stream>>>(p);
  CUDA_CHECK_LAUNCH();
}

void cuda_attention_flash_decode_launch(CudaState *st, const CudaAttnParams &p, int num_tiles,
                                        int num_kv_heads) {
  if (num_tiles == 0) return;
  const int chunks = (p.group + FA_HEADS - 1) / FA_HEADS;
  const dim3 grid((unsigned)num_tiles, (unsigned)(num_kv_heads * chunks));
  const size_t smem = sizeof(CudaFlashDecodeSmem);
  cuda_allow_smem(st, (const void *)cuda_attention_flash_decode_kernel, smem);
  cuda_attention_flash_decode_kernel<<<grid, 32 * FD_WARPS, smem, st->stream>>>(p);
  CUDA_CHECK_LAUNCH();
}
