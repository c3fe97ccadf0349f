// cuda_attention.cu: paged causal attention with sinks and the sliding window (spec
// gptoss-model.md section 2.1) for mixed prefill/decode batches, in float32 over a float32 or bf16
// KV cache. One thread block per (tile of up to CUDA_ATTN_TILE_TOKENS tokens of one sequence, KV
// head, chunk of that KV head's query heads): up to 32 query rows (token, head) share each chunk
// of 32 keys, which the block copies (cp.async, 4 elements a copy: 16 bytes of float32, 8 of
// bf16) through the sequence's block table into shared memory, ATT_STAGES - 1 chunks ahead of
// the one it scores, in the cache's own type (bf16 halves the bytes read and copied). Warp w
// owns rows w, w + 4, ... (2 of them for a decode tile of 8 heads, 8 for a full prefill tile: two
// instantiations, so a decode tile does no work for rows it lacks) with an online softmax whose
// running max starts at the row's sink. Lane j scores key j of the chunk (4 elements a read of
// its key, widened to float, and float4 reads of the rows' queries), and each lane accumulates
// head_dim / 32 consecutive output dimensions. The sink's exp(sink - max) joins the denominator
// at the end (a sink has no value). Reads the cache, never writes it (kv_write comes first).
#include <math.h>

#include <cuda_bf16.h>

#include "backend/cuda/cuda_async.cuh"
#include "backend/cuda/cuda_attention.cuh"

#define ATT_THREADS 128
#define ATT_WARPS (ATT_THREADS / 32)
#define ATT_ROWS 32  // query rows per block
#define ATT_KEYS 32  // keys per chunk: one per lane
#define ATT_HEADS_PER_BLOCK CUDA_ATTN_HEADS_PER_BLOCK
static_assert(ATT_ROWS == ATT_HEADS_PER_BLOCK * CUDA_ATTN_TILE_TOKENS, "a block's rows");

// Chunks in shared memory at once, for lane dimensions DPL (the largest heads take two).
template <int DPL>
struct AttStages {
  static constexpr int value = DPL >= 8 ? 2 : 3;
};

// Bytes of shared memory a block takes: the query rows (float) and the chunks' keys and values
// (KV, the cache's type), each row head_dim + 4 elements (keeps 4-element alignment: 16 bytes of
// float, 8 of bf16; lane j's 4-element reads of key j fall in distinct banks per phase).
template <typename KV, int DPL>
static size_t cuda_attention_smem_bytes(int head_dim) {
  return (size_t)ATT_ROWS * (head_dim + 4) * sizeof(float) +
         (size_t)AttStages<DPL>::value * 2 * ATT_KEYS * (head_dim + 4) * sizeof(KV);
}

// One 4-element copy of the cache into shared memory (cuda_async.cuh).
static __device__ __forceinline__ void cuda_copy4_async(float *dst, const float *src, bool ok) {
  cuda_copy16_async(dst, src, ok);
}
static __device__ __forceinline__ void cuda_copy4_async(__nv_bfloat16 *dst,
                                                        const __nv_bfloat16 *src, bool ok) {
  cuda_copy8_async(dst, src, ok);
}

// The 4 elements at src (4-element aligned) as float.
static __device__ __forceinline__ float4 cuda_load4(const float *src) {
  return *(const float4 *)src;
}
static __device__ __forceinline__ float4 cuda_load4(const __nv_bfloat16 *src) {
  const uint2 w = *(const uint2 *)src;
  return make_float4(__uint_as_float(w.x << 16), __uint_as_float(w.x & 0xffff0000u),
                     __uint_as_float(w.y << 16), __uint_as_float(w.y & 0xffff0000u));
}

static __device__ __forceinline__ float cuda_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

static __device__ __forceinline__ float cuda_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The 2 elements at src (2-element aligned) as float.
static __device__ __forceinline__ float2 cuda_load2(const float *src) {
  return *(const float2 *)src;
}
static __device__ __forceinline__ float2 cuda_load2(const __nv_bfloat16 *src) {
  return __bfloat1622float2(*(const __nv_bfloat162 *)src);
}

// The DPL elements at src (aligned to DPL elements up to 4; DPL is 1, 2, 4 or 8) as float.
template <int DPL, typename KV>
static __device__ __forceinline__ void cuda_load_dims(const KV *src, float (&v)[DPL]) {
  if constexpr (DPL == 1) {
    v[0] = (float)src[0];
  } else if constexpr (DPL == 2) {
    const float2 a = cuda_load2(src);
    v[0] = a.x, v[1] = a.y;
  } else {
#pragma unroll
    for (int i = 0; i < DPL / 4; i++) {
      const float4 a = cuda_load4(src + 4 * i);
      v[4 * i] = a.x, v[4 * i + 1] = a.y, v[4 * i + 2] = a.z, v[4 * i + 3] = a.w;
    }
  }
}

// One tile's rows; RPW: rows per warp (nrows <= ATT_WARPS * RPW). DPL: output dimensions per
// lane (head_dim <= 32 * DPL).
template <typename KV, int DPL, int RPW>
static __device__ __forceinline__ void cuda_attention_tile(const CudaAttnParams &p,
                                                           const CudaAttnBlock &blk, float *smem) {
  constexpr int STAGES = AttStages<DPL>::value;
  const int hd = p.head_dim, stride = hd + 4, q4 = hd / 4;
  float *Qs = smem;  // [ATT_ROWS, stride]
  // [STAGES] x {K [ATT_KEYS, stride], V [ATT_KEYS, stride]}
  KV *chunks = (KV *)(Qs + ATT_ROWS * stride);
  const KV *k_cache = (const KV *)p.k_cache, *v_cache = (const KV *)p.v_cache;

  const int t0 = blk.t0, kvh = blk.kvh, h_begin = blk.h_begin, gh = blk.gh;
  const int nrows = blk.nrows, kmin = blk.kmin, kmax = blk.kmax;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  for (int idx = threadIdx.x; idx < nrows * hd; idx += ATT_THREADS) {
    const int r = idx / hd, d = idx % hd;
    const int t = t0 + r / gh, h = kvh * p.group + h_begin + r % gh;
    Qs[r * stride + d] = p.q[(int64_t)t * p.q_stride + h * hd + d];
  }
  const int num_chunks = kmax >= kmin ? (kmax - kmin) / ATT_KEYS + 1 : 0;

  // Chunk c's keys and values into its stage, zeros past kmax; then closes the copy group (an
  // empty one past the last chunk, so the waits below count the same).
  auto fetch = [&](int c) {
    if (c < num_chunks) {
      KV *Ks = chunks + (c % STAGES) * 2 * ATT_KEYS * stride, *Vs = Ks + ATT_KEYS * stride;
      for (int idx = threadIdx.x; idx < ATT_KEYS * q4; idx += ATT_THREADS) {
        const int jj = idx / q4, d = 4 * (idx % q4), j = kmin + c * ATT_KEYS + jj;
        const bool valid = j <= kmax;
        const int64_t at = cuda_attn_key_at(p, blk, j) + d;
        cuda_copy4_async(Ks + jj * stride + d, k_cache + at, valid);
        cuda_copy4_async(Vs + jj * stride + d, v_cache + at, valid);
      }
    }
    cuda_copy_commit();
  };

  float m[RPW], l[RPW], acc[RPW][DPL];
  int lo[RPW], hi[RPW];
#pragma unroll
  for (int i = 0; i < RPW; i++) {
    const int r = warp + ATT_WARPS * i;
    m[i] = 0.0f, l[i] = 0.0f, lo[i] = 1, hi[i] = 0;
    if (r < nrows) {
      const int t = t0 + r / gh, h = kvh * p.group + h_begin + r % gh;
      m[i] = p.sinks[h];
      hi[i] = p.positions[t];
      lo[i] = p.window > 0 ? max(0, hi[i] - p.window + 1) : 0;
    }
#pragma unroll
    for (int n = 0; n < DPL; n++) acc[i][n] = 0.0f;
  }

  for (int c = 0; c < STAGES - 1; c++) fetch(c);
  for (int c = 0; c < num_chunks; c++) {
    fetch(c + STAGES - 1);
    cuda_copy_wait<STAGES - 1>();  // chunk c's copies (this thread's) have landed
    __syncthreads();               // and everyone's, and the queries
    const KV *Ks = chunks + (c % STAGES) * 2 * ATT_KEYS * stride, *Vs = Ks + ATT_KEYS * stride;

    // Lane j scores key kmin + c * ATT_KEYS + j against each of the warp's rows.
    float sc[RPW];
#pragma unroll
    for (int i = 0; i < RPW; i++) sc[i] = 0.0f;
    const KV *krow = Ks + lane * stride;
#pragma unroll 4
    for (int d = 0; d < hd; d += 4) {
      const float4 k = cuda_load4(krow + d);
#pragma unroll
      for (int i = 0; i < RPW; i++) {
        const float4 q = *(const float4 *)(Qs + (warp + ATT_WARPS * i) * stride + d);
        sc[i] = fmaf(q.x, k.x, sc[i]);
        sc[i] = fmaf(q.y, k.y, sc[i]);
        sc[i] = fmaf(q.z, k.z, sc[i]);
        sc[i] = fmaf(q.w, k.w, sc[i]);
      }
    }
    const int j = kmin + c * ATT_KEYS + lane;
#pragma unroll
    for (int i = 0; i < RPW; i++) {
      if (warp + ATT_WARPS * i >= nrows) continue;  // the same for the whole warp
      const float x = j >= lo[i] && j <= hi[i] ? sc[i] * p.scale : -INFINITY;
      const float m_new = fmaxf(m[i], cuda_warp_max(x));
      const float correction = expf(m[i] - m_new);
      const float pj = expf(x - m_new);
      l[i] = l[i] * correction + cuda_warp_sum(pj);
#pragma unroll
      for (int n = 0; n < DPL; n++) acc[i][n] *= correction;
      m[i] = m_new;
      sc[i] = pj;
    }
    // acc += p_j v_j over the chunk's keys, p_j broadcast from lane j.
    const bool has_dims = lane * DPL < hd;
#pragma unroll 4
    for (int jj = 0; jj < ATT_KEYS; jj++) {
      float v[DPL];
      if (has_dims) {
        cuda_load_dims<DPL>(Vs + jj * stride + lane * DPL, v);
      } else {
#pragma unroll
        for (int n = 0; n < DPL; n++) v[n] = 0.0f;
      }
#pragma unroll
      for (int i = 0; i < RPW; i++) {
        if (warp + ATT_WARPS * i >= nrows) continue;
        const float pj = __shfl_sync(0xffffffffu, sc[i], jj);
#pragma unroll
        for (int n = 0; n < DPL; n++) acc[i][n] = fmaf(pj, v[n], acc[i][n]);
      }
    }
    __syncthreads();  // before the next fetch overwrites this stage
  }

#pragma unroll
  for (int i = 0; i < RPW; i++) {
    const int r = warp + ATT_WARPS * i;
    if (r >= nrows || lane * DPL >= hd) continue;
    const int t = t0 + r / gh, h = kvh * p.group + h_begin + r % gh;
    const float inv = 1.0f / (l[i] + expf(p.sinks[h] - m[i]));
    float *o = p.out + (int64_t)t * p.num_heads * hd + (int64_t)h * hd + lane * DPL;
#pragma unroll
    for (int n = 0; n < DPL; n++) o[n] = acc[i][n] * inv;
  }
}

// __launch_bounds__ asks for 1 block an SM at least: left to itself the compiler squeezes some
// instantiations into 128 registers with spills (ptxas -v); so it keeps 155-210, no spills
// (heads of 64: 155-164, 3 blocks an SM, as the float32 kernel measured on the H200 had).
template <typename KV, int DPL>
__global__ void __launch_bounds__(ATT_THREADS, 1)
    cuda_attention_kernel(const __grid_constant__ CudaAttnParams p) {
  extern __shared__ float4 att_smem[];
  const CudaAttnBlock blk = cuda_attn_block(p);
  if (blk.nrows <= 2 * ATT_WARPS)  // a decode tile of up to 8 heads
    cuda_attention_tile<KV, DPL, 2>(p, blk, (float *)att_smem);
  else
    cuda_attention_tile<KV, DPL, ATT_ROWS / ATT_WARPS>(p, blk, (float *)att_smem);
}

template <typename KV, int DPL>
static void cuda_attention_launch(CudaState *st, const CudaAttnParams &p, dim3 grid) {
  const size_t smem = cuda_attention_smem_bytes<KV, DPL>(p.head_dim);
  cuda_allow_smem(st, (const void *)cuda_attention_kernel<KV, DPL>, smem);
  cuda_attention_kernel<KV, DPL><<<grid, ATT_THREADS, smem, st->stream>>>(p);
  CUDA_CHECK_LAUNCH();
}

// The instantiation for the cache's type and head_dim / 32 dimensions a lane.
template <typename KV>
static void cuda_attention_dispatch(CudaState *st, const CudaAttnParams &p, dim3 grid) {
  if (p.head_dim <= 32)
    cuda_attention_launch<KV, 1>(st, p, grid);
  else if (p.head_dim <= 64)
    cuda_attention_launch<KV, 2>(st, p, grid);
  else if (p.head_dim <= 128)
    cuda_attention_launch<KV, 4>(st, p, grid);
  else
    cuda_attention_launch<KV, 8>(st, p, grid);
}

void cuda_attention(Backend *be, const AttentionArgs *a) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, CUDA_PROF_ATTENTION);
  const Batch *b = a->batch;
  // The tiles were cut by upload_batch for this batch's sequences (backend.h: every op gets its
  // result, or for a hybrid cache's sliding layers a copy with the window arrays swapped in,
  // model/forward.c: the same query starts, the tiles still hold).
  CHECK(b->query_start == st->batch.query_start && b->num_seqs == st->batch.num_seqs &&
        b->num_tokens == st->batch.num_tokens);
  CHECK(a->num_kv_heads > 0 && a->num_heads % a->num_kv_heads == 0);
  CHECK(a->kv->num_kv_heads == a->num_kv_heads && a->kv->head_dim == a->head_dim);
  CHECK(a->layer >= 0 && a->layer < a->kv->num_layers);
  // float4 reads and 16-byte copies of key rows; each lane's dimensions in one vector
  CHECK(a->head_dim > 0 && a->head_dim <= 256 && a->head_dim % 4 == 0);
  CHECK(a->head_dim <= 128 || a->head_dim % 8 == 0);
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
  // On the tensor cores where the call fits them: the short sequences' tiles by the decode
  // kernel, the long ones' flash tiles by the prefill kernel. Otherwise every tile here.
  if (st->attn_kernel == CUDA_ATTN_KERNEL_AUTO && cuda_attention_flash_fits(a)) {
    cuda_attention_flash_decode_launch(st, p, st->num_attn_short_tiles, a->num_kv_heads);
    p.tiles = st->attn_flash_tiles;
    cuda_attention_flash_launch(st, p, st->num_attn_flash_tiles, a->num_kv_heads);
    return;
  }
  const int chunks = (p.group + ATT_HEADS_PER_BLOCK - 1) / ATT_HEADS_PER_BLOCK;
  const dim3 grid((unsigned)st->num_attn_tiles, (unsigned)(a->num_kv_heads * chunks));
  if (a->kv->dtype == KV_BF16)
    cuda_attention_dispatch<__nv_bfloat16>(st, p, grid);
  else
    cuda_attention_dispatch<float>(st, p, grid);
}
