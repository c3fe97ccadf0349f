// shard.h: which part of GPT-OSS one rank holds under tensor parallelism (tp) and pipeline
// parallelism (pp): its stage's contiguous layers, and within them its query heads with the KV
// heads they read, its experts and its rows of the unembedding. Pure arithmetic on the config;
// the weights loader, the KV cache and the forward pass read it.
//
// The split (docs/ARCHITECTURE.md, "Parallelism"):
//   attention  query heads in tp equal runs; a rank keeps the KV heads its query heads read: its
//              share when tp <= KV heads, else a copy of the one KV head its heads share (as
//              vLLM does). The attention output projection is split by its input columns, so
//              each rank's product is a partial sum (all-reduced; the bias on rank 0 only).
//   MoE        expert parallel: experts in tp equal runs, whole. The router is replicated, every
//              rank routes every token and runs only its experts' picks; the partial sums are
//              all-reduced. Splitting each expert's intermediate dimension instead would cut
//              MXFP4's 32-wide blocks (gpt-oss's 2880 / 4 = 720 is no multiple of 32) and needs
//              one all-reduce per expert product just the same.
//   vocabulary the unembedding's rows in tp equal runs (all-gathered into whole logits rows);
//              the embedding lives on the first stage whole, the final norm on the last.
//   layers     pp stages of contiguous layers, the first stages one layer longer when pp does
//              not divide the layers.
#ifndef GE_MODEL_SHARD_H
#define GE_MODEL_SHARD_H

#include <stdbool.h>
#include <stddef.h>

#include "model/config.h"

typedef struct {
  int tp_rank, tp_size;        // position in the stage's tensor-parallel group
  int pp_rank, pp_size;        // stage
  int layer_begin, layer_end;  // this stage's layers [begin, end)
  int head_begin, num_heads;   // query heads [head_begin, head_begin + num_heads)
  int kv_head_begin, num_kv_heads;
  int expert_begin, expert_end;
  int vocab_begin, vocab_end;  // unembedding rows (last stage)
} Shard;

// The whole model on one rank.
Shard shard_whole(const GptOssConfig *c);

// Checks that tp and pp divide the model (tp divides the query heads, the experts and the
// vocabulary, and either divides the KV heads or is a multiple of them; 1 <= pp <= layers).
// False with a message that names the count that does not divide and the ones that would.
bool shard_check(const GptOssConfig *c, int tp, int pp, char *err, size_t err_size);

// Rank (tp_rank, pp_rank)'s part; shard_check must have passed.
Shard shard_of(const GptOssConfig *c, int tp, int pp, int tp_rank, int pp_rank);

static inline bool shard_is_first_stage(const Shard *s) { return s->pp_rank == 0; }
static inline bool shard_is_last_stage(const Shard *s) { return s->pp_rank == s->pp_size - 1; }
static inline int shard_num_layers(const Shard *s) { return s->layer_end - s->layer_begin; }

#endif
