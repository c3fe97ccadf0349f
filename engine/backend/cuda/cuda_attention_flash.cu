// cuda_attention_flash.cu: prefill attention on tensor cores over a bf16 KV cache with heads of
// 64 (FlashAttention-2's scheme, with sinks, the sliding window and the paged cache), for the
// sequences of a batch with CUDA_ATTN_FLASH_MIN_TOKENS new tokens or more (cuda_attention.cu
// sends the others to its CUDA-core kernel). One thread block of 8 warps per (tile of up to
// CUDA_ATTN_FLASH_TOKENS tokens of one sequence, KV head, up to 8 of its query heads): up to 128
// query rows (token, head), 16 per warp, share each chunk of 64 keys, which the block copies
// (cp.async) through the block table into shared memory one chunk ahead. A warp holds its rows'
// queries as bf16 mma fragments, computes the chunk's scores S = Q K^T with mma.sync m16n8k16
// (K rows by ldmatrix), masks and scales them, keeps the online softmax in registers (the
// running max starts at the row's sink, as on the CUDA cores), rounds P = exp(S - max) to bf16
// and adds P V (V by ldmatrix.trans) into float32 accumulators. The sink's exp(sink - max) joins
// the denominator at the end. Queries and P are rounded to bf16 (the cache already is): within
// bf16 tolerance of the float32 kernel, not bit for bit. In shared memory a key row is 8 pieces
// of 16 bytes, piece p at p ^ (row % 8), so each ldmatrix phase hits 8 bank quads.
#include <cuda_bf16.h>
#include <math.h>

#include "backend/cuda/cuda_async.cuh"
#include "backend/cuda/cuda_attention.cuh"
#include "backend/cuda/cuda_mma.cuh"

#define FA_D 64                                           // head dimension
#define FA_HEADS CUDA_ATTN_HEADS_PER_BLOCK                // query heads per block
#define FA_WARPS 8                                        // 16 rows each
#define FA_THREADS (32 * FA_WARPS)                        //
#define FA_KEYS 64                                        // keys per chunk
#define FA_PIECES (FA_D / 8)                              // 16-byte pieces of a key row
#define FA_COPIES (2 * FA_KEYS * FA_PIECES / FA_THREADS)  // K and V pieces a thread copies

static_assert(CUDA_ATTN_FLASH_TOKENS * FA_HEADS == 16 * FA_WARPS, "16 rows a warp");
static_assert(FA_PIECES == 8, "the swizzle takes 8 pieces a row");

struct CudaFlashStage {
  uint4 k[FA_KEYS][FA_PIECES];
  uint4 v[FA_KEYS][FA_PIECES];
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

__global__ void __launch_bounds__(FA_THREADS)
    cuda_attention_flash_kernel(const __grid_constant__ CudaAttnParams p) {
  __shared__ __align__(128) CudaFlashStage stages[2];
  const CudaAttnBlock blk = cuda_attn_block(p);
  const int s = blk.s, t0 = blk.t0, kvh = blk.kvh, h_begin = blk.h_begin, gh = blk.gh;
  const int nrows = blk.nrows, kmin = blk.kmin, kmax = blk.kmax;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, gq = lane / 4, q = lane % 4;
  const __nv_bfloat16 *k_cache = (const __nv_bfloat16 *)p.k_cache;
  const __nv_bfloat16 *v_cache = (const __nv_bfloat16 *)p.v_cache;

  const int num_chunks = kmax >= kmin ? (kmax - kmin) / FA_KEYS + 1 : 0;
  const int32_t *blocks = p.block_tables + (int64_t)s * p.max_blocks;  // [max_blocks]
  const int64_t head_off = (int64_t)kvh * FA_D;
  // Chunk c's keys and values into its stage (zeros past kmax), one copy group a call.
  auto fetch = [&](int c) {
    if (c < num_chunks) {
      CudaFlashStage &st = stages[c & 1];
#pragma unroll
      for (int i = 0; i < FA_COPIES; i++) {
        const int idx = tid + i * FA_THREADS, is_v = idx / (FA_KEYS * FA_PIECES);
        const int key = idx / FA_PIECES % FA_KEYS, piece = idx % FA_PIECES;
        const int j = kmin + c * FA_KEYS + key;
        const bool valid = j <= kmax;
        const int64_t slot =
            valid ? (int64_t)blocks[j / p.block_size] * p.block_size + j % p.block_size : 0;
        const int64_t at = slot * p.kv_dim + head_off + 8 * piece;
        uint4 *dst = is_v ? &st.v[key][fa_piece(key, piece)] : &st.k[key][fa_piece(key, piece)];
        cuda_copy16_async(dst, (is_v ? v_cache : k_cache) + at, valid);
      }
    }
    cuda_copy_commit();
  };

  // This thread's two rows (fragment rows g and g + 8 of the warp's 16): token, head, position.
  const int row[2] = {16 * warp + gq, 16 * warp + gq + 8};
  bool live[2];
  int tok[2], head[2], pos[2];
  float m[2], l[2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    live[h] = row[h] < nrows;
    tok[h] = t0 + (live[h] ? row[h] / gh : 0);
    head[h] = kvh * p.group + h_begin + (live[h] ? row[h] % gh : 0);
    pos[h] = live[h] ? p.positions[tok[h]] : -1;
    m[h] = live[h] ? p.sinks[head[h]] : 0.0f;
    l[h] = 0.0f;
  }
  const bool warp_live = 16 * warp < nrows;
  // The rows' queries as A fragments of the 4 16-column k-steps (zeros for rows past nrows).
  uint32_t qa[FA_D / 16][4];
#pragma unroll
  for (int ks = 0; ks < FA_D / 16; ks++) {
#pragma unroll
    for (int f = 0; f < 4; f++) {  // a0: row g, cols 2q; a1: row g + 8; a2, a3: cols 2q + 8
      const int h = f & 1, col = 16 * ks + 2 * q + 8 * (f >> 1);
      float2 x = make_float2(0.0f, 0.0f);
      if (live[h]) x = *(const float2 *)(p.q + (int64_t)tok[h] * p.q_stride + head[h] * FA_D + col);
      qa[ks][f] = fa_bf16x2(x.x, x.y);
    }
  }
  float o[FA_D / 8][4] = {};  // [dimension n8 tile] fragments: rows g, g + 8; dims 2q, 2q + 1

  fetch(0);
  for (int c = 0; c < num_chunks; c++) {
    fetch(c + 1);
    cuda_copy_wait<1>();  // chunk c's copies (this thread's) have landed
    __syncthreads();      // and everyone's
    const CudaFlashStage &st = stages[c & 1];
    if (warp_live) {
      // S = Q K^T over the chunk's 64 keys: n8 tile nt is keys 8 nt .. + 8.
      float sc[FA_KEYS / 8][4] = {};
#pragma unroll
      for (int ks = 0; ks < FA_D / 16; ks++) {
#pragma unroll
        for (int np = 0; np < FA_KEYS / 16; np++) {
          const int key = 16 * np + 8 * (lane / 16) + lane % 8;
          uint32_t f[4];
          cuda_ldmatrix_x4(f, &st.k[key][fa_piece(key, 2 * ks + lane / 8 % 2)]);
          cuda_mma_bf16(sc[2 * np], qa[ks][0], qa[ks][1], qa[ks][2], qa[ks][3], f[0], f[1]);
          cuda_mma_bf16(sc[2 * np + 1], qa[ks][0], qa[ks][1], qa[ks][2], qa[ks][3], f[2], f[3]);
        }
      }
      // Scale and mask; the online softmax of both rows.
      float mx[2] = {m[0], m[1]};
#pragma unroll
      for (int nt = 0; nt < FA_KEYS / 8; nt++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int h = e >> 1, j = kmin + c * FA_KEYS + 8 * nt + 2 * q + (e & 1);
          const bool seen = live[h] && j <= pos[h] && (p.window <= 0 || pos[h] - j < p.window);
          sc[nt][e] = seen ? sc[nt][e] * p.scale : -INFINITY;
          mx[h] = fmaxf(mx[h], sc[nt][e]);
        }
      }
      float corr[2];
#pragma unroll
      for (int h = 0; h < 2; h++) {
        mx[h] = fa_quad_max(mx[h]);  // the 4 lanes of a quad hold the same rows
        corr[h] = expf(m[h] - mx[h]);
        m[h] = mx[h];
        l[h] *= corr[h];
      }
#pragma unroll
      for (int nt = 0; nt < FA_KEYS / 8; nt++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
          sc[nt][e] = expf(sc[nt][e] - m[e >> 1]);
          l[e >> 1] += sc[nt][e];
        }
      }
#pragma unroll
      for (int dt = 0; dt < FA_D / 8; dt++) {
        o[dt][0] *= corr[0], o[dt][1] *= corr[0];
        o[dt][2] *= corr[1], o[dt][3] *= corr[1];
      }
      // O += P V: k-step kk is keys 16 kk .. + 16 (score tiles 2 kk, 2 kk + 1 as A fragments).
#pragma unroll
      for (int kk = 0; kk < FA_KEYS / 16; kk++) {
        const uint32_t a0 = fa_bf16x2(sc[2 * kk][0], sc[2 * kk][1]);
        const uint32_t a1 = fa_bf16x2(sc[2 * kk][2], sc[2 * kk][3]);
        const uint32_t a2 = fa_bf16x2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
        const uint32_t a3 = fa_bf16x2(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
#pragma unroll
        for (int dp = 0; dp < FA_D / 16; dp++) {  // dims 16 dp .. + 16: two n8 tiles
          const int key = 16 * kk + 8 * (lane / 8 % 2) + lane % 8;
          uint32_t f[4];
          cuda_ldmatrix_x4_trans(f, &st.v[key][fa_piece(key, 2 * dp + lane / 16)]);
          cuda_mma_bf16(o[2 * dp], a0, a1, a2, a3, f[0], f[1]);
          cuda_mma_bf16(o[2 * dp + 1], a0, a1, a2, a3, f[2], f[3]);
        }
      }
    }
    __syncthreads();  // before the next fetch overwrites this stage
  }

#pragma unroll
  for (int h = 0; h < 2; h++) {
    const float total = fa_quad_sum(l[h]);
    if (!live[h]) continue;
    const float inv = 1.0f / (total + expf(p.sinks[head[h]] - m[h]));
    float *out = p.out + (int64_t)tok[h] * p.num_heads * FA_D + (int64_t)head[h] * FA_D;
#pragma unroll
    for (int dt = 0; dt < FA_D / 8; dt++)
      *(float2 *)(out + 8 * dt + 2 * q) = make_float2(o[dt][2 * h] * inv, o[dt][2 * h + 1] * inv);
  }
}

bool cuda_attention_flash_fits(const AttentionArgs *a) {
  return a->kv->dtype == KV_BF16 && a->head_dim == FA_D;
}

void cuda_attention_flash_launch(CudaState *st, const CudaAttnParams &p, int num_tiles,
                                 int num_kv_heads) {
  if (num_tiles == 0) return;
  const int chunks = (p.group + FA_HEADS - 1) / FA_HEADS;
  const dim3 grid((unsigned)num_tiles, (unsigned)(num_kv_heads * chunks));
  cuda_attention_flash_kernel<<<grid, FA_THREADS, 0, st->stream>>>(p);
  CUDA_CHECK_LAUNCH();
}
