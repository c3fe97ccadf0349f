// cpu_internal.h: what the CPU backend's files share: the backend state (thread pool, which
// AVX-512 kernels run, growing scratch buffers), the parallel-loop helpers, the op entry points
// the table in cpu_backend.c points at, the AVX-512 kernels' entry points, and a small
// deterministic dot product. Not for use outside engine/backend/cpu.
#ifndef GE_BACKEND_CPU_CPU_INTERNAL_H
#define GE_BACKEND_CPU_CPU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_pool.h"

// Independent scratch buffers: an op may hold several at once (each grows on its own, so a
// pointer from one slot stays valid while another grows). An op must not call another op that
// uses a slot it holds.
typedef enum {
  CPU_SCRATCH_DECODE,     // linear: decoded weight tiles or per-thread decoded rows
  CPU_SCRATCH_INPUT,      // linear: the input rows converted for a kernel (bf16, int8)
  CPU_SCRATCH_ATTENTION,  // attention: per-thread running sums and scores
  CPU_SCRATCH_MOE,        // moe: router logits, top-k, expert grouping, per-expert activations
  CPU_SCRATCH_SAMPLE,     // sample: per-thread probabilities of a row
  CPU_SCRATCH_COUNT,
} CpuScratchSlot;

typedef struct {
  void *ptr;
  size_t bytes;
} CpuScratch;

typedef struct {
  int num_threads;
  CpuPool *pool;  // the threads every op's loops run on (cpu_pool.h)
  // The AVX-512 kernels this CPU runs (cpu_backend_create asks the CPU; a portable backend
  // leaves them false: scalar attention, OpenBLAS on decoded float32 tiles).
  bool avx512;       // AVX512F/BW/VL: cpu_attn512.c
  bool avx512_vnni;  // AVX512F/BW/VL + VNNI: cpu_q8.c
  bool avx512_bf16;  // AVX512F/BW/VL + BF16: cpu_bf16.c
  // AMX-TILE + AMX-INT8, tile data permitted by the kernel, not turned off by GPTOSS_CPU_AMX=0:
  // cpu_q8amx.c for Q8 products of many input rows.
  bool amx_int8;
  // amx_int8 + AMX-BF16 + avx512_bf16: cpu_bf16amx.c for BF16 products of many input rows.
  bool amx_bf16;
  // MXFP4 weights through cpu_mx8.c (8-bit inputs): avx512_vnni unless GPTOSS_CPU_MXFP4=bf16
  // keeps them on cpu_bf16.c (bf16 inputs: slower, closer to float32). With amx_bf16, only
  // products of fewer than CPU_MXFP4_AMX_MIN_ROWS input rows (cpu_linear).
  bool mxfp4_int8;
  // AVX2 + FMA (cpu_backend_create_avx2 leaves the AVX-512 ones false): cpu_q8avx2.c for Q8
  // where avx512_vnni is false, cpu_rowsavx2.c for BF16 and MXFP4 products of a few input rows
  // that no AVX-512 kernel takes.
  bool avx2;
  CpuScratch scratch[CPU_SCRATCH_COUNT];
} CpuState;

static inline CpuState *cpu_state(Backend *be) { return (CpuState *)be->state; }

// Pieces of a loop handed out per thread: enough that a preempted thread holds up little.
#define CPU_PIECES_PER_THREAD 4

// Runs task over items 0 .. num_items - 1 on the backend's threads, grain items a piece.
static inline void cpu_parallel(Backend *be, int64_t num_items, int64_t grain, CpuTask task,
                                void *ctx) {
  cpu_pool_run(cpu_state(be)->pool, num_items, grain, task, ctx);
}

// The grain for num_items items of work_per_item each: all on the caller when the whole is
// below min_work, else CPU_PIECES_PER_THREAD pieces per thread.
static inline int64_t cpu_grain(Backend *be, int64_t num_items, int64_t work_per_item,
                                int64_t min_work) {
  if (num_items * work_per_item < min_work) return num_items;
  const int64_t pieces = (int64_t)cpu_state(be)->num_threads * CPU_PIECES_PER_THREAD;
  return (num_items + pieces - 1) / pieces;
}

// At least bytes of scratch in slot (contents undefined), 64-byte aligned; grows, never shrinks.
void *cpu_scratch(Backend *be, CpuScratchSlot slot, size_t bytes);

// Decodes weight rows row0 .. row0 + num_rows - 1 of w to float.   out: [num_rows, w->cols]
void cpu_decode_rows(const WeightMatrix *w, int64_t row0, int64_t num_rows, float *out);

// y = bias (or 0), or y += bias with accumulate, so that a kernel can then add x W^T.
// y: [num_rows, n], bias: [n] or NULL
void cpu_linear_prepare(float *y, const float *bias, int num_rows, int64_t n, bool accumulate);

// The backend's linear op itself on the AVX-512 kernels, on the calling thread alone when
// serial: y = x W^T + bias (bias NULL: none), or y += that with accumulate, the bias and y's old
// values joining each result as it is stored (no pass over y first: the unembedding's logits
// are 804 KB a row). cpu_q8_linear: WEIGHT_Q8 (needs avx512_vnni, or avx2: cpu_q8avx2.c);
// cpu_bf16_linear: WEIGHT_BF16 and WEIGHT_MXFP4 (needs avx512_bf16; without AMX-BF16 it fills y
// first, with cpu_linear_prepare).   x: [num_rows, w->cols], y: [num_rows, w->rows], bias:
// [w->rows]
void cpu_q8_linear(Backend *be, const WeightMatrix *w, const float *bias, const float *x,
                   int num_rows, float *y, bool accumulate, bool serial);
void cpu_bf16_linear(Backend *be, const WeightMatrix *w, const float *bias, const float *x,
                     int num_rows, float *y, bool accumulate, bool serial);
// The input rows of cpu_q8_linear quantized: x[m][c] ~= q[m][c] * scale[m].
typedef struct {
  const int8_t *q;      // [num_rows rounded up to CPU_Q8_AMX_ROWS, ld] zero past cols and rows
  const float *scale;   // [num_rows]
  const int32_t *corr;  // [num_rows] Q8_ZERO * sum of row m's q: what the weights' offset adds
  int64_t ld;           // bytes per row: q8_groups(cols) * 4
  const float *bias;    // [w->rows], or NULL: added to each result as it is stored
  bool accumulate;      // y's old values are added too
} CpuQ8Input;

// One register block of a Q8 kernel: y[m0 + i][row0 + r] for rz tiles of 16 weight rows from w
// (wscale: their scales) and mt input rows from m0 (only the first num_valid of the rz * 16
// rows are written).  w: rz tiles of [groups, 16, 4], y: [*, ldy]
typedef void (*CpuQ8Block)(const uint8_t *w, int64_t groups, const float *wscale,
                           const CpuQ8Input *in, int m0, float *y, int64_t ldy, int64_t row0,
                           int64_t num_valid, int rz, int mt);
// cpu_q8_linear's AVX2 twins (cpu_q8avx2.c) of its AVX-512 steps: an input row quantized (the
// same values; x: [cols], q: [ld]), and a register block of up to CPU_Q8AVX2_MAX_MT input rows
// by 1 tile, or 1 row by up to CPU_Q8AVX2_RZ_ONE_ROW tiles (the same results bit for bit).
#define CPU_Q8AVX2_MAX_MT 4
#define CPU_Q8AVX2_RZ_ONE_ROW 4
void cpu_q8avx2_quantize_row(const float *x, int64_t cols, int64_t ld, int8_t *q, float *scale,
                             int32_t *corr);
void cpu_q8avx2_block(const uint8_t *w, int64_t groups, const float *wscale, const CpuQ8Input *in,
                      int m0, float *y, int64_t ldy, int64_t row0, int64_t num_valid, int rz,
                      int mt);
// cpu_rowsavx2_linear: y += x W^T for WEIGHT_BF16 and WEIGHT_MXFP4 weights and 1 ..
// CPU_ROWSAVX2_MAX_ROWS input rows with AVX2 (cpu_linear's choice where no AVX-512 kernel takes
// them; more rows go to decoded tiles and OpenBLAS).  x: [num_rows, w->cols], y: [num_rows,
// w->rows]
#define CPU_ROWSAVX2_MAX_ROWS 4
// An input row laid out for the MXFP4 row kernels (cpu_rowsavx2.c's and cpu_mx8row.c's, AVX2
// code that any AVX-512 CPU runs too): each 32-column block quantized to int8 as cpu_mx8.c
// quantizes it, its 16 even and 16 odd columns apart, its scale once per int32 lane of the block
// (4 a block); zeros from cols / 32 up to padded_blocks.
// x: [cols], even, odd: [padded_blocks * 16], scale: [padded_blocks * 4]
void cpu_mxfp4_split_row(const float *x, int64_t cols, int64_t padded_blocks, int8_t *even,
                         int8_t *odd, float *scale);
void cpu_rowsavx2_linear(Backend *be, const WeightMatrix *w, const float *x, int num_rows, float *y,
                         bool serial);

// cpu_q8_linear's AMX-INT8 path (cpu_q8amx.c) for weight tiles t0 .. t1 - 1 (WEIGHT_Q8) times
// input rows 0 .. num_rows - 1: bit-identical to the AVX-512 VNNI path (the same int32 sums, the
// same float epilogue). Needs amx_int8 (tile data permitted for the process), cols a multiple of
// CPU_Q8_AMX_K and the input rows padded with zero rows to a multiple of CPU_Q8_AMX_ROWS.
// y: [num_rows, w->rows]
#define CPU_Q8_AMX_ROWS 16  // input rows of a tile
#define CPU_Q8_AMX_K 64     // columns (bytes) of a tile
void cpu_q8_amx_tiles(const WeightMatrix *w, int64_t t0, int64_t t1, const CpuQ8Input *in,
                      int num_rows, float *y);
// Loads the tile configuration of cpu_q8amx.c and cpu_bf16amx.c (8 tiles of 16 rows by 64 bytes)
// on the calling thread; the caller releases the tiles (_tile_release) when done.
void cpu_amx_configure(void);

// cpu_bf16_linear's AMX-BF16 path (cpu_bf16amx.c): y[:, r0 .. r0 + nr) = (y's values with
// accumulate, else 0) + bias[r0 .. r0 + nr) (none when NULL) + xb (weight rows r0 .. r0 + nr - 1
// of w, WEIGHT_BF16 or WEIGHT_MXFP4)^T for input rows 0 .. num_rows - 1. Needs amx_bf16 (and, for
// MXFP4, the table that cpu_backend_create fills), w->cols a multiple of CPU_BF16_AMX_K, xb padded
// with zero rows to a multiple of CPU_BF16_AMX_ROWS, and bt: [nr rounded up to 16, w->cols] bf16 of
// scratch (the piece's weights, transposed).   xb: [num_rows, w->cols] bf16, y: [num_rows,
// w->rows], bias: [w->rows] or NULL
#define CPU_BF16_AMX_ROWS 16  // input rows of a tile
#define CPU_BF16_AMX_K 32     // columns (bf16) of a tile
void cpu_bf16_amx_rows(const WeightMatrix *w, int64_t r0, int64_t nr, const uint16_t *xb,
                       int num_rows, float *y, const float *bias, bool accumulate, uint32_t *bt);
// The VNNI path's epilogue for one input row and one tile of 16 weight rows (num_valid of them):
// y[m][row0 .. row0 + 16) = (dot - corr[m]) * (wscale[.] * scale[m]) + in's bias and old y.
void cpu_q8_store(const int32_t *dot, const float *wscale, const CpuQ8Input *in, int m, float *y,
                  int64_t ldy, int64_t row0, int64_t num_valid);

// cpu_mx8_linear: WEIGHT_MXFP4 with 8-bit inputs (needs avx512_vnni; cols a multiple of 32).
// cpu_linear takes it for MXFP4 below CPU_MXFP4_AMX_MIN_ROWS input rows where the CPU has
// AMX-BF16, and always where it has not; from that many rows AMX-BF16 (cpu_bf16amx.c through
// cpu_bf16_linear) is faster (bench on a Xeon with AMX, 1024 x 512 and 5760 x 2880 experts:
// 1.2-2x from 64 rows, slower below 32).
#define CPU_MXFP4_AMX_MIN_ROWS 64
void cpu_mx8_linear(Backend *be, const WeightMatrix *w, const float *x, int num_rows, float *y,
                    bool serial);
// Whether cpu_linear takes cpu_mx8_linear for num_rows input rows of w.
bool cpu_linear_uses_mx8(Backend *be, const WeightMatrix *w, int num_rows);
// cpu_mx8row_linear: the same for products of 1 .. CPU_MX8ROW_MAX_ROWS input rows, weight rows
// read in place (cpu_mx8_linear hands them over), several products in one parallel loop (the
// experts of a decode step: one hand-off to the threads instead of one per expert).
#define CPU_MX8ROW_MAX_ROWS 4
typedef struct {
  const WeightMatrix *w;  // WEIGHT_MXFP4
  const float *x;         // [num_rows, w->cols]
  int num_rows;           // 1 .. CPU_MX8ROW_MAX_ROWS
  float *y;               // [num_rows, w->rows]: y += x W^T
} CpuMx8RowProduct;
void cpu_mx8row_linear(Backend *be, const CpuMx8RowProduct *products, int count, bool serial);

// A vector kernel of the attention op (cpu_attn512.c: AVX-512, 16 keys a chunk; cpu_attn256.c:
// AVX2, 8), which cpu_attention.c's vector loop drives over a token's visible keys, a chunk of
// `keys` keys and a block of up to CPU_ATTN_VEC_HEADS query heads at a time.
#define CPU_ATTN_VEC_HEADS 8      // query heads scored together (GPT-OSS's group)
#define CPU_ATTN_VEC_MAX_DIM 256  // largest head_dim (a multiple of keys)
#define CPU_ATTN_VEC_MAX_GROUP 64
typedef struct {
  const float *kt;       // [head_dim, keys] the chunk's keys, transposed
  float *p;              // [CPU_ATTN_VEC_HEADS, keys] scratch: a head block's probabilities
  const int64_t *slot;   // [n] the chunk's keys' cache slots
  int n;                 // keys in the chunk (1 .. keys)
  int head_dim, kv_dim;  // kv_dim: floats per cache slot
  const float *v_cache;  // [slots, kv_dim] from this kv head's part
  float scale;
} CpuAttnChunk;
typedef struct {
  int keys;
  // kt[d][i] = key i's value d for the chunk's n keys (zeros past n).
  // k_cache: [slots, kv_dim] from this kv head's part, kt: [head_dim, keys]
  void (*transpose)(const float *k_cache, int kv_dim, const int64_t *slot, int n, int head_dim,
                    float *kt);
  // Heads h < num (queries q[h]): their scores against the chunk, each one's running max and
  // denominator moved on by the online softmax, and o[h] (stride head_dim) rescaled and
  // added the chunk's probabilities times its values.
  void (*heads)(const CpuAttnChunk *c, const float *const *q, int num, float *max, float *denom,
                float *o);
} CpuAttnKernel;
extern const CpuAttnKernel cpu_attn512;
extern const CpuAttnKernel cpu_attn256;

// cpu_moe's SwiGLU of one row with AVX-512 (cpu_moe512.c).  h: [2 * inter], act: [inter]
void cpu_swiglu512_row(const float *h, int inter, float limit, float *act);

// The ops (backend.h documents each).
void cpu_embed(Backend *be, const WeightMatrix *table, const uint32_t *ids, int num_tokens,
               float *out);
void cpu_rmsnorm(Backend *be, const float *x, const float *scale, int num_rows, int dim,
                 float *out);
void cpu_linear(Backend *be, const WeightMatrix *w, const float *bias, const float *x, int num_rows,
                float *y, bool accumulate);
void cpu_rope(Backend *be, float *x, int num_rows, int row_stride, int num_heads, int head_dim,
              const int32_t *positions, const RopeTable *rope);
void cpu_kv_write(Backend *be, KvCache *kv, int layer, const float *k, const float *v, int stride,
                  const int64_t *slot_mapping, int num_tokens);
void cpu_attention(Backend *be, const AttentionArgs *a);
void cpu_moe(Backend *be, const MoeArgs *a);
void cpu_gather_rows(Backend *be, const float *in, const int32_t *rows, int num_rows, int dim,
                     float *out);
void cpu_add(Backend *be, float *dst, const float *src, size_t n);
void cpu_copy_rows(Backend *be, void *dst, size_t dst_stride, const void *src, size_t src_stride,
                   size_t row_bytes, int num_rows);
void cpu_zero(Backend *be, void *ptr, size_t bytes);
void cpu_sample(Backend *be, const float *logits, int num_rows, int vocab, const SampleRow *rows,
                int32_t *ids, PickLogprobs *logprobs);

// sum a[i] * b[i] with eight partial sums (the same order at any thread count).
// a, b: [n]
static inline float cpu_dot(const float *a, const float *b, int64_t n) {
  float acc[8] = {0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) acc[k] += a[i + k] * b[i + k];
  for (; i < n; i++) acc[0] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

#endif
