// forward.h: one rank's part of the GPT-OSS forward pass (spec gptoss-model.md section 2) over a
// Batch of mixed prefill chunks and decode tokens: the layers of its pipeline stage with its
// tensor-parallel shard of each (shard.h), writing each token's K/V into its paged cache, and on
// the last stage the logits of the requested positions. Composes backend ops and the
// tensor-parallel group's collectives; computes nothing itself. With the whole model on one rank
// it is the whole forward pass.
#ifndef GE_MODEL_FORWARD_H
#define GE_MODEL_FORWARD_H

#include <stdbool.h>

#include "backend/backend.h"
#include "dist/comm.h"
#include "model/batch.h"
#include "model/kv_cache.h"
#include "model/rope.h"
#include "model/weights.h"

// Router diagnostics over one forward call (MoeProbe per layer), for offline generation on a
// single host-memory rank; never set while serving.
typedef struct {
  float *margins;              // NULL, or host [stage layers, num_tokens of the call]
  int flip_layer, flip_token;  // the stage's layer and the call's token that take their
                               // (k+1)-th expert in place of the k-th; -1, -1: none
} RouteProbe;

typedef struct {
  const GptOssWeights *weights;  // the rank's shard (weights->shard)
  Backend *backend;
  Comm *tp;  // the stage's tensor-parallel group; NULL when tp = 1
  RopeTable rope;
  int max_num_tokens;  // the largest Batch.num_tokens this model accepts
  int max_num_logits;  // the largest Batch.num_logits (<= max_num_tokens)
  // activations, each [max_num_tokens, ...] in backend memory
  float *x;           // [T, hidden] the residual stream (same on every rank of the tp group)
  float *normed;      // [T, hidden]
  float *qkv;         // [T, the shard's qkv rows]
  float *attn;        // [T, the shard's q_dim]
  float *final_rows;  // [T, hidden] rows that get logits
  // tp > 1 only
  float *partial;                 // [T, hidden] this rank's share of an attention or MoE output
  float *logits_part;             // [L, vocab / tp] this rank's vocabulary columns (L:
                                  // max_num_logits; the last stage only)
  float *logits_gathered;         // [tp, L, vocab / tp] every rank's columns
  const RouteProbe *route_probe;  // NULL, or diagnostics of the next forward calls
} Model;

// Sizes the activation buffers for max_num_tokens and, with tensor parallelism on the last
// stage, the gathered logits for max_num_logits rows (0: max_num_tokens); tp is the weights'
// tensor-parallel group (NULL when weights->shard.tp_size is 1). False with a message when out
// of memory.
bool model_init(Model *m, const GptOssWeights *w, Backend *be, Comm *tp, int max_num_tokens,
                int max_num_logits, char *err, size_t err_size);
void model_free(Model *m);

// Runs the rank's part of the batch. On the first stage it starts from the embedding; on later
// ones m->x must already hold the previous stage's output ([num_tokens, hidden]), and m->x holds
// this stage's output afterwards. K/V of the batch's tokens go into kv (the rank's). On the last
// stage, logits of batch->logits_indices go into logits [num_logits, vocab] in backend memory,
// written by tensor-parallel rank 0 (the others pass NULL).
void model_forward(Model *m, const Batch *batch, KvCache *kv, float *logits);

// model_forward over a batch the backend already holds (upload_batch's or upload_graph_batch's
// result): only ops, so a backend with graphs can record it (dist/runner_graphs.c's decode graphs).
void model_forward_uploaded(Model *m, const Batch *b, KvCache *kv, float *logits);

#endif
