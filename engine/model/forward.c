// forward.c: the GPT-OSS forward pass as a sequence of backend ops, layer by layer, in the
// reference's exact order (spec gptoss-model.md section 2). Owns the activation buffers; the
// arithmetic is the backend's.
#include "model/forward.h"

#include <math.h>
#include <stdio.h>

#include "common/check.h"

bool model_init(Model *m, const GptOssWeights *w, Backend *be, int max_num_tokens, char *err,
                size_t err_size) {
  const GptOssConfig *c = &w->config;
  *m = (Model){.weights = w, .backend = be, .max_num_tokens = max_num_tokens};
  rope_table_init(&m->rope, c);
  size_t t = (size_t)max_num_tokens;
  m->x = be->alloc(be, t * (size_t)c->hidden_size * sizeof(float));
  m->normed = be->alloc(be, t * (size_t)c->hidden_size * sizeof(float));
  m->qkv = be->alloc(be, t * (size_t)config_qkv_dim(c) * sizeof(float));
  m->attn = be->alloc(be, t * (size_t)config_q_dim(c) * sizeof(float));
  m->final_rows = be->alloc(be, t * (size_t)c->hidden_size * sizeof(float));
  if (!m->x || !m->normed || !m->qkv || !m->attn || !m->final_rows) {
    snprintf(err, err_size, "out of memory for the activations of %d tokens", max_num_tokens);
    model_free(m);
    return false;
  }
  return true;
}

void model_free(Model *m) {
  Backend *be = m->backend;
  if (!be) return;
  be->free(be, m->x);
  be->free(be, m->normed);
  be->free(be, m->qkv);
  be->free(be, m->attn);
  be->free(be, m->final_rows);
  *m = (Model){0};
}

// x += Attention(RMSNorm(x)) for one layer.
static void attention_block(Model *m, const Batch *b, KvCache *kv, int layer) {
  const GptOssConfig *c = &m->weights->config;
  const LayerWeights *lw = &m->weights->layers[layer];
  Backend *be = m->backend;
  int T = b->num_tokens, q_dim = config_q_dim(c), kv_dim = config_kv_dim(c);
  int qkv_dim = config_qkv_dim(c);
  be->rmsnorm(be, m->x, lw->attn_norm, T, c->hidden_size, m->normed);
  be->linear(be, &lw->qkv, lw->qkv_bias, m->normed, T, m->qkv, false);  // rows [q | k | v]
  be->rope(be, m->qkv, T, qkv_dim, c->num_heads, c->head_dim, b->positions, &m->rope);
  be->rope(be, m->qkv + q_dim, T, qkv_dim, c->num_kv_heads, c->head_dim, b->positions, &m->rope);
  be->kv_write(be, kv, layer, m->qkv + q_dim, m->qkv + q_dim + kv_dim, qkv_dim, b->slot_mapping, T);
  AttentionArgs a = {
      .q = m->qkv,
      .q_stride = qkv_dim,
      .kv = kv,
      .layer = layer,
      .sinks = lw->sinks,
      .batch = b,
      .num_heads = c->num_heads,
      .num_kv_heads = c->num_kv_heads,
      .head_dim = c->head_dim,
      .sliding_window = config_layer_is_sliding(c, layer) ? c->sliding_window : 0,
      .scale = 1.0f / sqrtf((float)c->head_dim),
      .out = m->attn,
  };
  be->attention(be, &a);
  be->linear(be, &lw->out, lw->out_bias, m->attn, T, m->x, true);
}

// x += MoE(RMSNorm(x)) for one layer.
static void moe_block(Model *m, const Batch *b, int layer) {
  const GptOssConfig *c = &m->weights->config;
  Backend *be = m->backend;
  be->rmsnorm(be, m->x, m->weights->layers[layer].mlp_norm, b->num_tokens, c->hidden_size,
              m->normed);
  MoeArgs a = {.config = c,
               .layer = &m->weights->layers[layer],
               .x = m->normed,
               .num_tokens = b->num_tokens,
               .expert_end = c->num_experts,
               .residual = m->x};
  be->moe(be, &a);
}

void model_forward(Model *m, const Batch *b, KvCache *kv, float *logits) {
  CHECK(b->num_tokens > 0 && b->num_tokens <= m->max_num_tokens);
  CHECK(b->num_logits <= b->num_tokens);
  const GptOssWeights *w = m->weights;
  const GptOssConfig *c = &w->config;
  Backend *be = m->backend;
  be->embed(be, &w->embedding, b->token_ids, b->num_tokens, m->x);
  for (int layer = 0; layer < c->num_layers; layer++) {
    attention_block(m, b, kv, layer);
    moe_block(m, b, layer);
  }
  if (b->num_logits == 0) return;
  // Only the rows that need logits go through the final norm and the unembedding.
  be->gather_rows(be, m->x, b->logits_indices, b->num_logits, c->hidden_size, m->final_rows);
  be->rmsnorm(be, m->final_rows, w->final_norm, b->num_logits, c->hidden_size, m->final_rows);
  be->linear(be, &w->unembedding, NULL, m->final_rows, b->num_logits, logits, false);
}
