// weights_dummy.h: seeded dummy weights (--load-format dummy), generated as checkpoint bytes
// (bf16 and MXFP4 blocks/scales) so that the loader converts them exactly like a real
// checkpoint: a given seed gives the same model in every kept format.
//
// The scheme. Every value comes from a counter-based generator, so the result does not depend
// on thread count or load order: tensor N's stream key is splitmix64-mix(seed ^ FNV-1a(N's
// checkpoint name)), and its k-th random word is mix(key + (k + 1) * 0x9e3779b97f4a7c15). Float
// tensors are uniform in [center - a, center + a] (a = sqrt(3) * std), rounded to bf16:
//   embedding.weight      std 1                   (the residual stream starts at RMS ~1)
//   qkv, router weights   std 1 / sqrt(hidden)    (q, k, v and router logits ~unit: routing is
//                                                  spread over all experts, token by token)
//   out weight            std 1 / sqrt(q_dim * 2 * num_layers)
//   unembedding.weight    std 1 / sqrt(hidden)    (logits ~unit)
//   norm gains            1 +- 0.1 (uniform)
//   biases                0 +- 0.05 (uniform)
//   sinks                 0 +- 0.5 (uniform)
// The residual branches (attention out, mlp2) are scaled by 1 / sqrt(2 * num_layers), as in
// GPT-2's initialisation, so the residual stream stays O(1) through all layers and every
// activation stays finite. MXFP4 experts: uniformly random bytes of codes (code RMS
// sqrt(8.5625) = 2.93) and scale bytes 127 + round(log2(std / 2.93)) + {-1, 0, +1} (uniform),
// with std 1 / sqrt(hidden) for mlp1 and 1 / sqrt(intermediate * 2 * num_layers) for mlp2.
// Block byte k is byte k % 8 of random word k / 8; a scale byte uses word k.
#ifndef GE_MODEL_WEIGHTS_DUMMY_H
#define GE_MODEL_WEIGHTS_DUMMY_H

#include <stdint.h>

#include "model/checkpoint.h"
#include "model/weights_dummy_values.h"

// Tensor t's law for seed: its stream key, and what its elements are.
WeightsDummyLaw weights_dummy_law(const GptOssConfig *c, const CheckpointTensor *t, uint64_t seed);

// Fills out (t->num_bytes bytes of t->dtype) with tensor t's dummy values for seed.
void weights_dummy_fill(const GptOssConfig *c, const CheckpointTensor *t, uint64_t seed, void *out);

#endif
