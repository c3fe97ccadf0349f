// weights_slice.h: the part of each checkpoint tensor one rank keeps under tensor parallelism
// (shard.h): runs of rows along the first dimension (query heads, KV heads, experts, vocabulary
// rows) and, for the attention output projection, a run of columns; and the copy of that part
// out of a tensor's bytes. Used by the weights loader before it converts a tensor.
#ifndef GE_MODEL_WEIGHTS_SLICE_H
#define GE_MODEL_WEIGHTS_SLICE_H

#include <stddef.h>
#include <stdint.h>

#include "model/checkpoint.h"
#include "model/shard.h"

#define WEIGHTS_SLICE_MAX_RUNS 3  // qkv: the q rows, the k rows, the v rows

typedef struct {
  int num_runs;  // row runs along the first dimension; 0: the tensor is kept whole
  int64_t row_begin[WEIGHTS_SLICE_MAX_RUNS], num_rows[WEIGHTS_SLICE_MAX_RUNS];
  int64_t col_begin, num_cols;  // of a 2-D tensor's columns; num_cols 0: every column
} WeightsSlice;

// The part of tensor t that shard s keeps (num_runs 0 when whole).
WeightsSlice weights_slice_of(const GptOssConfig *c, const Shard *s, const CheckpointTensor *t);

// t's shape, element and byte counts after slicing.
void weights_slice_apply_shape(const WeightsSlice *sl, CheckpointTensor *t);

// Copies the slice of src (a tensor of shape t, before slicing, elem_size bytes per element) to
// dst, rows in run order.
void weights_slice_copy(const WeightsSlice *sl, const CheckpointTensor *t, size_t elem_size,
                        const void *src, void *dst);

#endif
