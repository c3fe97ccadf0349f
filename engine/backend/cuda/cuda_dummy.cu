// cuda_dummy.cu: `--load-format dummy` generated on the device: the same bytes as weights_load's
// dummy weights (weights_dummy.h) kept in the CUDA formats (dense BF16 or F32, MXFP4 experts,
// float32 vectors) and uploaded, with nothing of them in host memory (gpt-oss-120b's 61 GiB
// would be generated on the host, then copied). Each checkpoint tensor's kept part (the shard's
// rows and columns, weights_slice.h) is one kernel over its elements: kept element i -> its
// index k in the whole tensor -> weights_dummy_values.h's value of element k (shared with the
// host generator) -> the kept format (MXFP4 expert codes then in the MoE kernels' stored layout,
// as the upload leaves them). Two passes over the shard's tensors, as the upload does:
// the first sizes the one allocation, the second generates into it.
#include <stdio.h>

// First, so that their functions are declared with C linkage.
extern "C" {
#include "model/mxfp4.h"
#include "model/weights.h"
#include "model/weights_dummy.h"
#include "model/weights_slice.h"
}

#include "backend/cuda/cuda_weights.cuh"

// How a generated element is kept.
enum CudaDummyOut {
  CUDA_DUMMY_BYTES,  // MXFP4 blocks or scales: the byte itself
  CUDA_DUMMY_BF16,   // a float element's bf16
  CUDA_DUMMY_F32,    // a float element's bf16, widened to float32
};

// One tensor's kept part: kept element i is row i / kept_row_elems of the kept rows (runs of the
// whole tensor's first dimension, in run order; none: every row), element i % kept_row_elems of
// it from col_begin.
struct CudaDummyPiece {
  WeightsDummyLaw law;
  CudaDummyOut out;
  int64_t n;               // kept elements
  int64_t row_elems;       // elements per row of the whole tensor
  int64_t kept_row_elems;  // of them kept (row_elems unless a column slice)
  int64_t col_begin;
  int num_runs;
  int64_t run_begin[WEIGHTS_SLICE_MAX_RUNS], run_rows[WEIGHTS_SLICE_MAX_RUNS];
};

// Kept element i of the piece into out.
static __host__ __device__ void cuda_dummy_element(const CudaDummyPiece &p, int64_t i, void *out) {
  const int64_t row = i / p.kept_row_elems, within = i % p.kept_row_elems;
  int64_t whole_row = row, rest = row;
  for (int r = 0; r < p.num_runs; r++) {
    if (rest < p.run_rows[r]) {
      whole_row = p.run_begin[r] + rest;
      break;
    }
    rest -= p.run_rows[r];
  }
  const int64_t k = whole_row * p.row_elems + p.col_begin + within;
  switch (p.out) {
    case CUDA_DUMMY_BYTES:
      ((uint8_t *)out)[i] =
          p.law.kind == DUMMY_SCALES ? dummy_scale(&p.law, k) : dummy_block_byte(&p.law, k);
      break;
    case CUDA_DUMMY_BF16:
      ((__nv_bfloat16 *)out)[i] = __float2bfloat16_rn(dummy_float(&p.law, k));
      break;
    case CUDA_DUMMY_F32:
      ((float *)out)[i] = __bfloat162float(__float2bfloat16_rn(dummy_float(&p.law, k)));
      break;
  }
}

__global__ void cuda_dummy_kernel(const CudaDummyPiece p, void *out) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n;
       i += (int64_t)gridDim.x * blockDim.x)
    cuda_dummy_element(p, i, out);
}

// One pass: base NULL sizes it; otherwise each tensor is generated at base + its offset.
struct CudaDummyGen {
  CudaState *st;
  char *base;
  size_t offset;
  const GptOssConfig *c;
  const Shard *s;
  const WeightsOptions *o;
  bool failed;
  char *err;
  size_t err_size;
};

// The shard's part of checkpoint tensor (role, layer; -1 for the model's) kept as out, and its
// kept shape in *kept.
static CudaDummyPiece cuda_dummy_piece(const CudaDummyGen *g, CheckpointRole role, int layer,
                                       CudaDummyOut out, CheckpointTensor *kept) {
  CheckpointTensor t;
  checkpoint_tensor_of(g->c, role, layer, &t);
  const WeightsSlice sl = weights_slice_of(g->c, g->s, &t);
  *kept = t;
  weights_slice_apply_shape(&sl, kept);
  CudaDummyPiece p = {};
  p.law = weights_dummy_law(g->c, &t, g->o->seed);
  p.out = out;
  p.n = kept->num_elements;
  p.row_elems = t.num_elements / t.shape[0];
  p.kept_row_elems = sl.num_cols ? sl.num_cols : p.row_elems;
  p.col_begin = sl.col_begin;
  p.num_runs = sl.num_runs;
  for (int r = 0; r < sl.num_runs; r++)
    p.run_begin[r] = sl.row_begin[r], p.run_rows[r] = sl.num_rows[r];
  return p;
}

// Bytes of one kept element.
static size_t cuda_dummy_elem_size(CudaDummyOut out) {
  return out == CUDA_DUMMY_F32 ? 4 : out == CUDA_DUMMY_BF16 ? 2 : 1;
}

// The piece at the pass's cursor: its device address once generated (NULL while sizing).
static void *cuda_dummy_tensor(CudaDummyGen *g, CheckpointRole role, int layer, CudaDummyOut out,
                               CheckpointTensor *kept) {
  const CudaDummyPiece p = cuda_dummy_piece(g, role, layer, out, kept);
  const size_t at = g->offset;
  g->offset += cuda_round256((size_t)p.n * cuda_dummy_elem_size(out));
  if (!g->base || g->failed) return NULL;
  if (p.n > 0) {
    const unsigned blocks = cuda_stride_blocks((size_t)p.n, 256);
    cuda_dummy_kernel<<<blocks, 256, 0, g->st->stream>>>(p, g->base + at);
    CUDA_CHECK_LAUNCH();
  }
  return g->base + at;
}

static const float *cuda_dummy_vector(CudaDummyGen *g, CheckpointRole role, int layer) {
  CheckpointTensor kept;
  return (const float *)cuda_dummy_tensor(g, role, layer, CUDA_DUMMY_F32, &kept);
}

// A dense matrix in the options' format for it: BF16 or F32 (Q8 is refused, as the upload
// refuses it).
static void cuda_dummy_dense(CudaDummyGen *g, CheckpointRole role, int layer, WeightMatrix *m) {
  const WeightFormat f = weights_dense_format(role, g->o);
  if (f != WEIGHT_BF16 && f != WEIGHT_F32) {
    if (!g->failed)
      snprintf(g->err, g->err_size,
               "the CUDA backend does not take %s weights: use --weight-format bf16 or f32",
               weight_format_name(f));
    g->failed = true;
    return;
  }
  CheckpointTensor kept;
  const void *data =
      cuda_dummy_tensor(g, role, layer, f == WEIGHT_BF16 ? CUDA_DUMMY_BF16 : CUDA_DUMMY_F32, &kept);
  *m = WeightMatrix{f, kept.shape[0], kept.shape[1], data, NULL};
}

// A layer's mlp1 or mlp2 experts (MXFP4): one blocks and one scales tensor, each expert's
// matrix a run of both.   m: [the shard's experts]
static void cuda_dummy_experts(CudaDummyGen *g, CheckpointRole blocks_role,
                               CheckpointRole scales_role, int layer, WeightMatrix *m) {
  CheckpointTensor b, s;
  uint8_t *blocks = (uint8_t *)cuda_dummy_tensor(g, blocks_role, layer, CUDA_DUMMY_BYTES, &b);
  if (blocks) cuda_mxfp4_store(g->st, blocks, (size_t)b.num_elements);  // as the upload stores them
  const uint8_t *scales =
      (const uint8_t *)cuda_dummy_tensor(g, scales_role, layer, CUDA_DUMMY_BYTES, &s);
  const int64_t rows = b.shape[1], groups = b.shape[2];
  for (int64_t e = 0; e < b.shape[0]; e++)
    m[e] = WeightMatrix{WEIGHT_MXFP4, rows, groups * MXFP4_BLOCK_SIZE,
                        blocks ? blocks + e * rows * groups * MXFP4_BLOCK_BYTES : NULL,
                        scales ? scales + e * rows * groups : NULL};
}

// The shard's tensors in one fixed order (both passes visit the same), placed as weights_load
// places them (model/weights.c, load_all and load_layer).
static void cuda_dummy_walk(CudaDummyGen *g, GptOssWeights *d) {
  const Shard *s = g->s;
  if (shard_is_first_stage(s)) cuda_dummy_dense(g, CKPT_EMBEDDING, -1, &d->embedding);
  for (int i = 0; i < shard_num_layers(s); i++) {
    const int l = s->layer_begin + i;
    LayerWeights *dl = &d->layers[i];
    dl->attn_norm = cuda_dummy_vector(g, CKPT_ATTN_NORM, l);
    cuda_dummy_dense(g, CKPT_QKV_WEIGHT, l, &dl->qkv);
    dl->qkv_bias = cuda_dummy_vector(g, CKPT_QKV_BIAS, l);
    dl->sinks = cuda_dummy_vector(g, CKPT_SINKS, l);
    cuda_dummy_dense(g, CKPT_OUT_WEIGHT, l, &dl->out);
    // the attention output's bias is added once, by tensor-parallel rank 0
    dl->out_bias = s->tp_rank == 0 ? cuda_dummy_vector(g, CKPT_OUT_BIAS, l) : NULL;
    dl->mlp_norm = cuda_dummy_vector(g, CKPT_MLP_NORM, l);
    cuda_dummy_dense(g, CKPT_GATE_WEIGHT, l, &dl->gate);
    dl->gate_bias = cuda_dummy_vector(g, CKPT_GATE_BIAS, l);
    cuda_dummy_experts(g, CKPT_MLP1_BLOCKS, CKPT_MLP1_SCALES, l, dl->mlp1);
    dl->mlp1_bias = cuda_dummy_vector(g, CKPT_MLP1_BIAS, l);
    cuda_dummy_experts(g, CKPT_MLP2_BLOCKS, CKPT_MLP2_SCALES, l, dl->mlp2);
    dl->mlp2_bias = cuda_dummy_vector(g, CKPT_MLP2_BIAS, l);
  }
  if (shard_is_last_stage(s)) {
    d->final_norm = cuda_dummy_vector(g, CKPT_FINAL_NORM, -1);
    cuda_dummy_dense(g, CKPT_UNEMBEDDING, -1, &d->unembedding);
  }
}

bool cuda_weights_dummy(Backend *be, const GptOssConfig *c, const WeightsOptions *o,
                        GptOssWeights *device, char *err, size_t err_size) {
  CudaState *st = cuda_enter(be);
  *device = GptOssWeights{};
  if (o->expert_format != WEIGHT_MXFP4) {
    snprintf(err, err_size,
             "dummy weights are generated on the device with MXFP4 experts only (got %s)",
             weight_format_name(o->expert_format));
    return false;
  }
  device->config = *c;
  device->shard = o->shard ? *o->shard : shard_whole(c);
  CudaWeightsOwned *own = cuda_weights_skeleton(device, true);
  CudaDummyGen g = {st, NULL, 0, c, &device->shard, o, false, err, err_size};
  cuda_dummy_walk(&g, device);  // sizes; refuses formats the backend does not take
  if (g.failed || !cuda_weights_alloc(st, own, g.offset, err, err_size)) goto fail;
  g = CudaDummyGen{st, (char *)own->device, 0, c, &device->shard, o, false, err, err_size};
  cuda_dummy_walk(&g, device);
  if (g.failed) goto fail;
  return cuda_weights_finish(be, device, "generating the dummy weights", err, err_size);

fail:
  cuda_weights_free(be, device);
  return false;
}
