// cuda_attention.cu: paged causal attention with sinks and the sliding window (spec
// gptoss-model.md section 2.1) for mixed prefill/decode batches, in float32. One thread block
// per (tile of up to CUDA_ATTN_TILE_TOKENS tokens of one sequence, KV head, chunk of that KV
// head's query heads): up to 32 query rows (token, head) share each chunk of 32 keys, which the
// block reads once through the sequence's block table into shared memory. Each warp owns up to 8
// rows with an online softmax whose running max starts at the row's sink; lane j scores key j
// of the chunk, and each lane accumulates head_dim / 32 output dimensions. The sink's
// exp(sink - max) joins the denominator at the end (a sink has no value). Reads the cache,
// never writes it (kv_write comes first).
#include <math.h>

#include "backend/cuda/cuda_internal.cuh"

#define ATT_THREADS 128
#define ATT_WARPS (ATT_THREADS / 32)
#define ATT_ROWS 32  // query rows per block
#define ATT_ROWS_PER_WARP (ATT_ROWS / ATT_WARPS)
#define ATT_KEYS 32  // keys per chunk: one per lane
// Query heads per block: ATT_ROWS rows over the tile's tokens.
#define ATT_HEADS_PER_BLOCK (ATT_ROWS / CUDA_ATTN_TILE_TOKENS)

struct CudaAttnParams {
  const float *q;  // [num_tokens, q_stride]
  int q_stride;
  const float *k_cache, *v_cache;  // this layer's [num_slots, kv_dim]
  const float *sinks;              // [num_heads]
  float *out;                      // [num_tokens, num_heads * head_dim]
  const int32_t *positions;        // [num_tokens]
  const int32_t *block_tables;     // [num_seqs, max_blocks]
  int max_blocks, block_size;
  const int4 *tiles;  // [num_tiles] {seq, first token, end token, 0}
  int num_heads, group, head_dim, kv_dim, window;
  float scale;
};

static __device__ __forceinline__ float cuda_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

static __device__ __forceinline__ float cuda_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// NI: output dimensions per lane (head_dim <= 32 * NI).
template <int NI>
__global__ void __launch_bounds__(ATT_THREADS)
    cuda_attention_kernel(const __grid_constant__ CudaAttnParams p) {
  extern __shared__ float att_smem[];
  __shared__ int64_t slot_s[ATT_KEYS];
  const int hd = p.head_dim;
  float *Qs = att_smem;                  // [ATT_ROWS, hd]
  float *Ks = Qs + ATT_ROWS * hd;        // [ATT_KEYS, hd + 1] (odd stride: no bank conflicts)
  float *Vs = Ks + ATT_KEYS * (hd + 1);  // [ATT_KEYS, hd]

  const int4 tile = p.tiles[blockIdx.x];
  const int s = tile.x, t0 = tile.y, ntok = tile.z - tile.y;
  const int chunks = (p.group + ATT_HEADS_PER_BLOCK - 1) / ATT_HEADS_PER_BLOCK;
  const int kvh = blockIdx.y / chunks, h_begin = (blockIdx.y % chunks) * ATT_HEADS_PER_BLOCK;
  const int gh = min(ATT_HEADS_PER_BLOCK, p.group - h_begin);  // query heads in this block
  const int nrows = ntok * gh;  // row r: token t0 + r / gh, head kvh * group + h_begin + r % gh
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  for (int idx = threadIdx.x; idx < nrows * hd; idx += ATT_THREADS) {
    const int r = idx / hd, d = idx % hd;
    const int t = t0 + r / gh, h = kvh * p.group + h_begin + r % gh;
    Qs[idx] = p.q[(int64_t)t * p.q_stride + h * hd + d];
  }
  // The keys any row of the tile sees: [kmin, kmax].
  int kmin = INT32_MAX, kmax = -1;
  for (int i = 0; i < ntok; i++) {
    const int pos = p.positions[t0 + i];
    kmin = min(kmin, p.window > 0 ? max(0, pos - p.window + 1) : 0);
    kmax = max(kmax, pos);
  }

  float m[ATT_ROWS_PER_WARP], l[ATT_ROWS_PER_WARP], acc[ATT_ROWS_PER_WARP][NI];
  int lo[ATT_ROWS_PER_WARP], hi[ATT_ROWS_PER_WARP];
#pragma unroll
  for (int i = 0; i < ATT_ROWS_PER_WARP; i++) {
    const int r = warp + ATT_WARPS * i;
    m[i] = 0.0f, l[i] = 0.0f, lo[i] = 1, hi[i] = 0;
    if (r < nrows) {
      const int t = t0 + r / gh, h = kvh * p.group + h_begin + r % gh;
      m[i] = p.sinks[h];
      hi[i] = p.positions[t];
      lo[i] = p.window > 0 ? max(0, hi[i] - p.window + 1) : 0;
    }
#pragma unroll
    for (int n = 0; n < NI; n++) acc[i][n] = 0.0f;
  }

  const int32_t *blocks = p.block_tables + (int64_t)s * p.max_blocks;  // [max_blocks]
  const int64_t head_off = (int64_t)kvh * hd;
  for (int j0 = kmin; j0 <= kmax; j0 += ATT_KEYS) {
    if (threadIdx.x < ATT_KEYS) {
      const int j = j0 + threadIdx.x;
      slot_s[threadIdx.x] =
          j <= kmax ? (int64_t)blocks[j / p.block_size] * p.block_size + j % p.block_size : -1;
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < ATT_KEYS * hd; idx += ATT_THREADS) {
      const int jj = idx / hd, d = idx % hd;
      const int64_t slot = slot_s[jj];
      const int64_t at = slot * p.kv_dim + head_off + d;
      Ks[jj * (hd + 1) + d] = slot >= 0 ? p.k_cache[at] : 0.0f;
      Vs[jj * hd + d] = slot >= 0 ? p.v_cache[at] : 0.0f;
    }
    __syncthreads();

    // Lane j scores key j0 + j against each of the warp's rows.
    float sc[ATT_ROWS_PER_WARP];
#pragma unroll
    for (int i = 0; i < ATT_ROWS_PER_WARP; i++) sc[i] = 0.0f;
    const float *krow = Ks + lane * (hd + 1);
    for (int d = 0; d < hd; d++) {
      const float kd = krow[d];
#pragma unroll
      for (int i = 0; i < ATT_ROWS_PER_WARP; i++)
        if (warp + ATT_WARPS * i < nrows) sc[i] += Qs[(warp + ATT_WARPS * i) * hd + d] * kd;
    }
    const int j = j0 + lane;
#pragma unroll
    for (int i = 0; i < ATT_ROWS_PER_WARP; i++) {
      if (warp + ATT_WARPS * i >= nrows) continue;  // the same for the whole warp
      const float x = j >= lo[i] && j <= hi[i] ? sc[i] * p.scale : -INFINITY;
      const float m_new = fmaxf(m[i], cuda_warp_max(x));
      const float correction = expf(m[i] - m_new);
      const float pj = expf(x - m_new);
      l[i] = l[i] * correction + cuda_warp_sum(pj);
#pragma unroll
      for (int n = 0; n < NI; n++) acc[i][n] *= correction;
      m[i] = m_new;
      sc[i] = pj;
    }
    // acc += p_j v_j over the chunk's keys, p_j broadcast from lane j.
    for (int jj = 0; jj < ATT_KEYS; jj++) {
      float vd[NI];
#pragma unroll
      for (int n = 0; n < NI; n++) {
        const int d = lane + 32 * n;
        vd[n] = d < hd ? Vs[jj * hd + d] : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < ATT_ROWS_PER_WARP; i++) {
        if (warp + ATT_WARPS * i >= nrows) continue;
        const float pj = __shfl_sync(0xffffffffu, sc[i], jj);
#pragma unroll
        for (int n = 0; n < NI; n++) acc[i][n] += pj * vd[n];
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < ATT_ROWS_PER_WARP; i++) {
    const int r = warp + ATT_WARPS * i;
    if (r >= nrows) continue;
    const int t = t0 + r / gh, h = kvh * p.group + h_begin + r % gh;
    const float inv = 1.0f / (l[i] + expf(p.sinks[h] - m[i]));
    float *o = p.out + (int64_t)t * p.num_heads * hd + (int64_t)h * hd;
#pragma unroll
    for (int n = 0; n < NI; n++) {
      const int d = lane + 32 * n;
      if (d < hd) o[d] = acc[i][n] * inv;
    }
  }
}

template <int NI>
static void cuda_attention_launch(CudaState *st, const CudaAttnParams &p, dim3 grid) {
  const size_t smem =
      (size_t)(ATT_ROWS * p.head_dim + ATT_KEYS * (p.head_dim + 1) + ATT_KEYS * p.head_dim) *
      sizeof(float);
  if (smem > 48 * 1024)
    CUDA_CHECK(cudaFuncSetAttribute(cuda_attention_kernel<NI>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cuda_attention_kernel<NI><<<grid, ATT_THREADS, smem, st->stream>>>(p);
  CUDA_CHECK_LAUNCH();
}

void cuda_attention(Backend *be, const AttentionArgs *a) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, CUDA_PROF_ATTENTION);
  const Batch *b = a->batch;
  // The tiles were cut by upload_batch for this very batch (backend.h: every op gets its result).
  CHECK(b == &st->batch);
  CHECK(a->num_kv_heads > 0 && a->num_heads % a->num_kv_heads == 0);
  CHECK(a->kv->num_kv_heads == a->num_kv_heads && a->kv->head_dim == a->head_dim);
  CHECK(a->layer >= 0 && a->layer < a->kv->num_layers);
  CHECK(a->head_dim > 0 && a->head_dim <= 256);
  if (b->num_tokens == 0 || st->num_attn_tiles == 0) return;
  CudaAttnParams p;
  p.q = a->q;
  p.q_stride = a->q_stride;
  p.k_cache = a->kv->k[a->layer];
  p.v_cache = a->kv->v[a->layer];
  p.sinks = a->sinks;
  p.out = a->out;
  p.positions = b->positions;
  p.block_tables = b->block_tables;
  p.max_blocks = b->max_blocks_per_seq;
  p.block_size = a->kv->block_size;
  p.tiles = st->attn_tiles;
  p.num_heads = a->num_heads;
  p.group = a->num_heads / a->num_kv_heads;
  p.head_dim = a->head_dim;
  p.kv_dim = a->num_kv_heads * a->head_dim;
  p.window = a->sliding_window;
  p.scale = a->scale;
  const int chunks = (p.group + ATT_HEADS_PER_BLOCK - 1) / ATT_HEADS_PER_BLOCK;
  const dim3 grid((unsigned)st->num_attn_tiles, (unsigned)(a->num_kv_heads * chunks));
  if (a->head_dim <= 32)
    cuda_attention_launch<1>(st, p, grid);
  else if (a->head_dim <= 64)
    cuda_attention_launch<2>(st, p, grid);
  else if (a->head_dim <= 128)
    cuda_attention_launch<4>(st, p, grid);
  else
    cuda_attention_launch<8>(st, p, grid);
}
