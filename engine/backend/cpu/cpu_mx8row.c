// cpu_mx8row.c: y += x W^T for WEIGHT_MXFP4 weights with AVX-512 VNNI and 8-bit inputs, for 1 ..
// CPU_MX8ROW_MAX_ROWS input rows (decode: each expert sees a token or a few). cpu_mx8.c decodes
// tiles of 16 weight rows into scratch, a transpose that pays off only when many input rows
// share it; here each weight row is read where it lies, 64 bytes (4 blocks) at a time: the low
// nibbles (even columns) and the high nibbles (odd columns) looked up as vpdpbusd bytes
// (cpu_mx8.h), multiplied with the input's even and odd columns, which the quantization lays
// out so (per block: its 16 even columns, then its 16 odd ones). Each int32 lane then holds 8
// products of one block, started at -12 * its inputs' sum (the codes' offset, exactly); the
// lane's block scale times the input's block scale multiplies it into a float lane sum, and the
// 16 lanes are added at the end of the row (cpu_sum16, 16 rows at a time). The inputs are
// quantized as cpu_mx8.c quantizes them; the float additions come in another order, so a row's
// result can differ from cpu_mx8.c's in the last bits. A call takes several products (the
// experts of a decode step, cpu_moe.c) in one parallel loop: threads take pieces of their 16-row
// groups, and read ahead of the hardware prefetcher.
// Compiled for AVX-512 with target attributes: cpu_mx8_linear calls it only on CPUs with VNNI.
// Reads the weights, writes only y and its scratch.
#include <immintrin.h>

#include "backend/cpu/cpu_avx512.h"
#include "backend/cpu/cpu_internal.h"
#include "backend/cpu/cpu_mx8.h"
#include "common/check.h"
#include "model/mxfp4.h"

#define CPU_MX8ROW_CHUNK_BLOCKS 4  // MXFP4 blocks per 64-byte load of a weight row
#define CPU_MX8ROW_GROUP 16        // weight rows summed together by cpu_sum16
#define CPU_MX8ROW_PIECES_PER_THREAD 8
// Bytes read ahead into L1 and into L2: from memory, a thread's stream of rows alone keeps too
// few reads in flight (gpt-oss-tiny's MoE at one token: 116 -> 99 us a layer with both, 111
// with 4 KiB ahead into L1 alone).
#define CPU_MX8ROW_PREFETCH_L1 1024
#define CPU_MX8ROW_PREFETCH_L2 4096

// One input row quantized for this kernel, padded with zeros to whole chunks of 4 blocks:
// per chunk, the 64 even-column and 64 odd-column int8 values, and per int32 lane (4 blocks
// by 4 lanes) its start (-12 * the lane's 8 inputs) and its block's input scale.
typedef struct {
  const int8_t *even, *odd;  // [chunks * 64]
  const int32_t *start;      // [chunks * 16]
  const float *scale;        // [chunks * 16]
} CpuMx8RowInput;

// x (cols columns) into in's arrays, laid out as CpuMx8RowInput says: cpu_mxfp4_split_row,
// then each lane's start from its 8 values.
CPU_MX8_TARGET static void cpu_mx8row_quantize(const float *x, int64_t cols, int64_t chunks,
                                               int8_t *even, int8_t *odd, int32_t *start,
                                               float *scale) {
  cpu_mxfp4_split_row(x, cols, chunks * CPU_MX8ROW_CHUNK_BLOCKS, even, odd, scale);
  for (int64_t lane = 0; lane < chunks * 16; lane++) {
    int32_t sum = 0;
    for (int k = 0; k < 4; k++) sum += even[lane * 4 + k] + odd[lane * 4 + k];
    start[lane] = -CPU_MX8_OFFSET * sum;
  }
}

// The float lane sums of two weight rows (their codes and scales where they lie) against input
// rows 0 .. MT - 1: f[i * 16 + z] lane 4j + d holds row z's products in lane d of block 4c + j
// over the row's chunks c. The rows of a group lie one after the other, so reading ahead
// (CPU_MX8ROW_PREFETCH_*) reaches the next chunks or the next rows.
CPU_MX8_INLINE void cpu_mx8row_pair(const uint8_t *const codes[2], const uint8_t *const scales[2],
                                    int64_t blocks, int64_t chunks, const CpuMx8RowInput *in,
                                    __m512 *f, const int MT) {
  const __m512i table = cpu_mx8_code_table(), low = _mm512_set1_epi8(0x0f);
  __m512 acc[2][CPU_MX8ROW_MAX_ROWS];
#pragma GCC unroll 4
  for (int i = 0; i < MT; i++) acc[0][i] = acc[1][i] = _mm512_setzero_ps();
  __m512 h16[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int64_t c = 0; c < chunks; c++) {
    const int64_t b0 = c * CPU_MX8ROW_CHUNK_BLOCKS;
    // Lane 4j + d takes block b0 + j's half-scale.
    const __m512i which = _mm512_add_epi32(
        _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                          2),
        _mm512_set1_epi32((int)(c % 4) * 4));
    const int64_t nb = blocks - b0 < 4 ? blocks - b0 : 4;
    const __mmask64 m = nb == 4 ? ~(__mmask64)0 : ((__mmask64)1 << (nb * 16)) - 1;
#pragma GCC unroll 2
    for (int z = 0; z < 2; z++) {
      if (c % 4 == 0) {  // the half-scales of the next 16 blocks, one a lane
        const int64_t n16 = blocks - b0 < 16 ? blocks - b0 : 16;
        h16[z] = cpu_mx8_half_scale(_mm512_cvtepu8_epi32(
            _mm_maskz_loadu_epi8((__mmask16)((1u << n16) - 1), scales[z] + b0)));
      }
      const __m512 h = _mm512_permutexvar_ps(which, h16[z]);
      const uintptr_t at = (uintptr_t)(codes[z] + b0 * MXFP4_BLOCK_BYTES);  // may end past w
      _mm_prefetch((const char *)(at + CPU_MX8ROW_PREFETCH_L1), _MM_HINT_T0);
      _mm_prefetch((const char *)(at + CPU_MX8ROW_PREFETCH_L2), _MM_HINT_T1);
      const __m512i v = _mm512_maskz_loadu_epi8(m, codes[z] + b0 * MXFP4_BLOCK_BYTES);
      const __m512i ue = _mm512_shuffle_epi8(table, _mm512_and_si512(v, low));
      const __m512i uo = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), low));
#pragma GCC unroll 4
      for (int i = 0; i < MT; i++) {
        __m512i s = _mm512_loadu_si512(in[i].start + c * 16);
        s = _mm512_dpbusd_epi32(s, ue, _mm512_loadu_si512(in[i].even + c * 64));
        s = _mm512_dpbusd_epi32(s, uo, _mm512_loadu_si512(in[i].odd + c * 64));
        acc[z][i] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
                            _mm512_mul_ps(h, _mm512_loadu_ps(in[i].scale + c * 16)), acc[z][i]);
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < MT; i++) {
    f[i * CPU_MX8ROW_GROUP] = acc[0][i];
    f[i * CPU_MX8ROW_GROUP + 1] = acc[1][i];
  }
}

// y[i][row0 .. row0 + 16) += the products of input rows 0 .. MT - 1 with weight rows row0 ..
// row0 + 15 (only those below w->rows are written).  y: [MT, w->rows]
CPU_MX8_INLINE void cpu_mx8row_group(const WeightMatrix *w, int64_t row0, const CpuMx8RowInput *in,
                                     float *y, const int MT) {
  const int64_t blocks = w->cols / MXFP4_BLOCK_SIZE;
  const int64_t chunks = (blocks + CPU_MX8ROW_CHUNK_BLOCKS - 1) / CPU_MX8ROW_CHUNK_BLOCKS;
  const int valid = w->rows - row0 < CPU_MX8ROW_GROUP ? (int)(w->rows - row0) : CPU_MX8ROW_GROUP;
  __m512 f[CPU_MX8ROW_MAX_ROWS * CPU_MX8ROW_GROUP];  // [MT][16]
  for (int r = 0; r < CPU_MX8ROW_GROUP; r += 2) {
    const uint8_t *codes[2], *scales[2];
    for (int z = 0; z < 2; z++) {
      const int64_t row = row0 + (r + z < valid ? r + z : valid - 1);
      codes[z] = (const uint8_t *)w->data + row * blocks * MXFP4_BLOCK_BYTES;
      scales[z] = (const uint8_t *)w->scales + row * blocks;
    }
    cpu_mx8row_pair(codes, scales, blocks, chunks, in, f + r, MT);
  }
  const __mmask16 mask = (__mmask16)((1u << valid) - 1);
#pragma GCC unroll 4
  for (int i = 0; i < MT; i++) {
    float *yr = y + i * w->rows + row0;
    _mm512_mask_storeu_ps(
        yr, mask,
        _mm512_add_ps(cpu_sum16(f + i * CPU_MX8ROW_GROUP), _mm512_maskz_loadu_ps(mask, yr)));
  }
}

// One product of a call, its input rows quantized, and where its groups begin among the call's.
typedef struct {
  CpuMx8RowProduct p;
  CpuMx8RowInput in[CPU_MX8ROW_MAX_ROWS];
  int64_t first_group;
} CpuMx8RowJob;

typedef struct {
  const CpuMx8RowJob *jobs;  // [count + 1]: the last holds only first_group, the total
  int count;
} CpuMx8RowCtx;

#define CPU_MX8ROW_CASE(mt) \
  case mt: cpu_mx8row_group(j->p.w, row0, j->in, j->p.y, mt); break;

// Items begin .. end - 1: groups of 16 weight rows, each product's after the one before.
CPU_MX8_TARGET static void cpu_mx8row_task(void *ctx, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const CpuMx8RowCtx *c = ctx;
  int k = 0;
  for (int64_t g = begin; g < end; g++) {
    while (g >= c->jobs[k + 1].first_group) k++;
    const CpuMx8RowJob *j = c->jobs + k;
    const int64_t row0 = (g - j->first_group) * CPU_MX8ROW_GROUP;
    switch (j->p.num_rows) {
      CPU_MX8ROW_CASE(1)
      CPU_MX8ROW_CASE(2)
      CPU_MX8ROW_CASE(3)
      CPU_MX8ROW_CASE(4)
      default: CHECK(!"unsupported number of input rows");
    }
  }
}

void cpu_mx8row_linear(Backend *be, const CpuMx8RowProduct *products, int count, bool serial) {
  CHECK(count >= 1);
  size_t bytes = ((size_t)(count + 1) * sizeof(CpuMx8RowJob) + 63) & ~(size_t)63;
  for (int k = 0; k < count; k++) {
    const CpuMx8RowProduct *p = products + k;
    CHECK(p->w->format == WEIGHT_MXFP4 && p->w->cols % MXFP4_BLOCK_SIZE == 0);
    CHECK(p->num_rows >= 1 && p->num_rows <= CPU_MX8ROW_MAX_ROWS);
    const int64_t chunks =
        (p->w->cols / MXFP4_BLOCK_SIZE + CPU_MX8ROW_CHUNK_BLOCKS - 1) / CPU_MX8ROW_CHUNK_BLOCKS;
    bytes += (size_t)p->num_rows * (size_t)chunks * 64 * 4;  // even, odd, start, scale
  }
  char *buf = cpu_scratch(be, CPU_SCRATCH_INPUT, bytes);
  CpuMx8RowJob *jobs = (CpuMx8RowJob *)buf;
  char *cursor = buf + (((size_t)(count + 1) * sizeof(CpuMx8RowJob) + 63) & ~(size_t)63);
  int64_t groups = 0;
  for (int k = 0; k < count; k++) {
    const CpuMx8RowProduct *p = products + k;
    const int64_t cols = p->w->cols;
    const int64_t chunks =
        (cols / MXFP4_BLOCK_SIZE + CPU_MX8ROW_CHUNK_BLOCKS - 1) / CPU_MX8ROW_CHUNK_BLOCKS;
    jobs[k] = (CpuMx8RowJob){.p = *p, .first_group = groups};
    for (int i = 0; i < p->num_rows; i++) {
      int8_t *even = (int8_t *)cursor, *odd = (int8_t *)(cursor + chunks * 64);
      int32_t *start = (int32_t *)(cursor + chunks * 128);
      float *scale = (float *)(cursor + chunks * 192);
      cpu_mx8row_quantize(p->x + i * cols, cols, chunks, even, odd, start, scale);
      jobs[k].in[i] = (CpuMx8RowInput){even, odd, start, scale};
      cursor += chunks * 256;
    }
    groups += (p->w->rows + CPU_MX8ROW_GROUP - 1) / CPU_MX8ROW_GROUP;
  }
  jobs[count].first_group = groups;
  CpuMx8RowCtx c = {jobs, count};
  const int64_t pieces = (int64_t)cpu_state(be)->num_threads * CPU_MX8ROW_PIECES_PER_THREAD;
  cpu_parallel(be, groups, serial ? groups : (groups + pieces - 1) / pieces, cpu_mx8row_task, &c);
}
