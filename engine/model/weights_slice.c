// weights_slice.c: which rows and columns of each checkpoint tensor a shard keeps, and the copy
// (see weights_slice.h).
#include "model/weights_slice.h"

#include <string.h>

static void add_run(WeightsSlice *sl, int64_t begin, int64_t count) {
  sl->row_begin[sl->num_runs] = begin;
  sl->num_rows[sl->num_runs] = count;
  sl->num_runs++;
}

WeightsSlice weights_slice_of(const GptOssConfig *c, const Shard *s, const CheckpointTensor *t) {
  WeightsSlice sl = {0};
  if (s->tp_size == 1) return sl;
  const int64_t hd = c->head_dim, q_dim = config_q_dim(c), kv_dim = config_kv_dim(c);
  switch (t->role) {
    case CKPT_QKV_WEIGHT:
    case CKPT_QKV_BIAS:
      add_run(&sl, s->head_begin * hd, s->num_heads * hd);
      add_run(&sl, q_dim + s->kv_head_begin * hd, s->num_kv_heads * hd);
      add_run(&sl, q_dim + kv_dim + s->kv_head_begin * hd, s->num_kv_heads * hd);
      break;
    case CKPT_SINKS:
      add_run(&sl, s->head_begin, s->num_heads);
      break;
    case CKPT_OUT_WEIGHT:
      add_run(&sl, 0, t->shape[0]);
      sl.col_begin = s->head_begin * hd;
      sl.num_cols = s->num_heads * hd;
      break;
    case CKPT_MLP1_BLOCKS:
    case CKPT_MLP1_SCALES:
    case CKPT_MLP1_BIAS:
    case CKPT_MLP2_BLOCKS:
    case CKPT_MLP2_SCALES:
    case CKPT_MLP2_BIAS:
      add_run(&sl, s->expert_begin, s->expert_end - s->expert_begin);
      break;
    case CKPT_UNEMBEDDING:
      add_run(&sl, s->vocab_begin, s->vocab_end - s->vocab_begin);
      break;
    default:
      break;
  }
  return sl;
}

// Elements in one index of the first dimension.
static int64_t row_elements(const CheckpointTensor *t) {
  int64_t n = 1;
  for (int d = 1; d < t->num_dims; d++) n *= t->shape[d];
  return n;
}

void weights_slice_apply_shape(const WeightsSlice *sl, CheckpointTensor *t) {
  if (sl->num_runs == 0) return;
  const int64_t before = t->num_elements;
  int64_t rows = 0;
  for (int r = 0; r < sl->num_runs; r++) rows += sl->num_rows[r];
  t->shape[0] = rows;
  if (sl->num_cols) t->shape[t->num_dims - 1] = sl->num_cols;
  t->num_elements = rows * row_elements(t);
  t->num_bytes = t->num_bytes / before * t->num_elements;
  t->num_params = t->num_params / before * t->num_elements;
}

void weights_slice_copy(const WeightsSlice *sl, const CheckpointTensor *t, size_t elem_size,
                        const void *src, void *dst) {
  const size_t row_bytes = (size_t)row_elements(t) * elem_size;
  const size_t col_offset = (size_t)sl->col_begin * elem_size;
  const size_t kept_bytes = sl->num_cols ? (size_t)sl->num_cols * elem_size : row_bytes;
  const uint8_t *in = src;
  uint8_t *out = dst;
  for (int r = 0; r < sl->num_runs; r++)
    for (int64_t row = sl->row_begin[r]; row < sl->row_begin[r] + sl->num_rows[r]; row++) {
      memcpy(out, in + (size_t)row * row_bytes + col_offset, kept_bytes);
      out += kept_bytes;
    }
}
