// forward.h: the GPT-OSS forward pass (spec gptoss-model.md section 2) over a Batch of mixed
// prefill chunks and decode tokens, writing each token's K/V into the paged cache and the logits
// of the requested positions. Composes backend ops; computes nothing itself.
#ifndef GE_MODEL_FORWARD_H
#define GE_MODEL_FORWARD_H

#include <stdbool.h>

#include "backend/backend.h"
#include "model/batch.h"
#include "model/kv_cache.h"
#include "model/rope.h"
#include "model/weights.h"

typedef struct {
  const GptOssWeights *weights;
  Backend *backend;
  RopeTable rope;
  int max_num_tokens;  // the largest Batch.num_tokens this model accepts
  // activations, each [max_num_tokens, ...] in backend memory
  float *x;            // [T, hidden] the residual stream
  float *normed;       // [T, hidden]
  float *qkv;          // [T, qkv_dim]
  float *attn;         // [T, q_dim]
  float *final_rows;   // [T, hidden] rows that get logits
} Model;

// Sizes the activation buffers for max_num_tokens. False with a message when out of memory.
bool model_init(Model *m, const GptOssWeights *w, Backend *be, int max_num_tokens, char *err,
                size_t err_size);
void model_free(Model *m);

// Runs the batch: K/V of its tokens go into kv, logits of batch->logits_indices into
// logits [num_logits, vocab] (backend memory).
void model_forward(Model *m, const Batch *batch, KvCache *kv, float *logits);

#endif
