// warm_up.h: one forward call of the largest step an engine configuration allows, run before the
// KV cache is sized (vLLM's profile run, for the same reason): every backend buffer that grows
// with a step (the CUDA backend's scratch, its uploaded batch and attention tiles, the rows of
// logits, the sampling buffers, cuBLAS's workspace) reaches its peak here, so the memory left
// afterwards can go to the KV cache and no later step allocates device memory. Without it the
// KV cache took 0.9 of the memory that was free, and a step whose scratch outgrew the rest
// aborted the server mid-run.
#ifndef GE_DIST_WARM_UP_H
#define GE_DIST_WARM_UP_H

#include <stdbool.h>
#include <stddef.h>

#include "dist/runner.h"

// Runs runner_max_num_tokens(r) tokens spread evenly over min(max_num_seqs, that) sequences (what
// depends on the split, as CUDA's attention tiles, a backend sizes for the worst one), each
// sequence's block table max_model_len / block_size blocks wide, a greedy logits row per sequence
// sampled where the backend samples, as one batch on every pipeline stage (runner_forward_whole:
// a step's micro-batches are smaller, but its first may hold nearly all its tokens or all but one
// of its sequences). The pass writes no KV (every slot is padding) and reads a
// one-block cache of its own, which it frees: r must have no KV cache (before runner_kv_init),
// and has none after. Its logits mean nothing. False with a message when the one-block cache or
// the host logits do not fit.
bool runner_warm_up(Runner *r, int max_num_seqs, int max_model_len, int block_size, char *err,
                    size_t err_size);

#endif
