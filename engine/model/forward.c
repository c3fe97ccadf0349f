// forward.c: one rank's part of the GPT-OSS forward pass as a sequence of backend ops, layer by
// layer, in the reference's exact order (spec gptoss-model.md section 2), with the
// tensor-parallel all-reduces after the attention output projection and after the MoE, and the
// all-gather of the vocabulary columns of the logits. Owns the activation buffers; the
// arithmetic is the backend's, the communication the Comm's.
#include "model/forward.h"

#include <math.h>
#include <stdio.h>

#include "common/check.h"

// The shard's widths.
static int shard_q_dim(const Model *m) {
  return m->weights->shard.num_heads * m->weights->config.head_dim;
}
static int shard_kv_dim(const Model *m) {
  return m->weights->shard.num_kv_heads * m->weights->config.head_dim;
}
static int shard_qkv_dim(const Model *m) { return shard_q_dim(m) + 2 * shard_kv_dim(m); }
static int shard_vocab(const Model *m) {
  return m->weights->shard.vocab_end - m->weights->shard.vocab_begin;
}

bool model_init(Model *m, const GptOssWeights *w, Backend *be, Comm *tp, int max_num_tokens,
                int max_num_logits, char *err, size_t err_size) {
  const GptOssConfig *c = &w->config;
  CHECK(w->shard.tp_size == (tp ? tp->size : 1));
  CHECK(max_num_logits >= 0 && max_num_logits <= max_num_tokens);
  if (max_num_logits == 0) max_num_logits = max_num_tokens;
  *m = (Model){.weights = w,
               .backend = be,
               .tp = tp,
               .max_num_tokens = max_num_tokens,
               .max_num_logits = max_num_logits};
  rope_table_init(&m->rope, c);
  const size_t t = (size_t)max_num_tokens, hidden = (size_t)c->hidden_size * sizeof(float);
  m->x = be->alloc(be, t * hidden);
  m->normed = be->alloc(be, t * hidden);
  m->qkv = be->alloc(be, t * (size_t)shard_qkv_dim(m) * sizeof(float));
  m->attn = be->alloc(be, t * (size_t)shard_q_dim(m) * sizeof(float));
  m->final_rows = be->alloc(be, t * hidden);
  bool ok = m->x && m->normed && m->qkv && m->attn && m->final_rows;
  if (ok && tp) m->partial = be->alloc(be, t * hidden), ok = m->partial != NULL;
  if (ok && tp && shard_is_last_stage(&w->shard)) {  // only the last stage unembeds
    const size_t part = (size_t)max_num_logits * (size_t)shard_vocab(m) * sizeof(float);
    m->logits_part = be->alloc(be, part);
    m->logits_gathered = be->alloc(be, part * (size_t)tp->size);
    ok = m->logits_part && m->logits_gathered;
  }
  if (!ok) {
    snprintf(err, err_size, "out of memory for the activations of %d tokens", max_num_tokens);
    model_free(m);
    return false;
  }
  return true;
}

void model_free(Model *m) {
  Backend *be = m->backend;
  if (!be) return;
  float *buffers[] = {m->x,          m->normed,  m->qkv,         m->attn,
                      m->final_rows, m->partial, m->logits_part, m->logits_gathered};
  for (size_t i = 0; i < sizeof buffers / sizeof *buffers; i++)
    if (buffers[i]) be->free(be, buffers[i]);
  *m = (Model){0};
}

// x += the tensor-parallel group's sum of partial (every rank's share of one output).
static void add_all_reduced(Model *m, int num_tokens) {
  const size_t n = (size_t)num_tokens * (size_t)m->weights->config.hidden_size;
  m->tp->all_reduce_sum(m->tp, m->partial, n);
  m->backend->add(m->backend, m->x, m->partial, n);
}

// x += Attention(RMSNorm(x)) for one layer (index i of the stage, model layer `layer`).
static void attention_block(Model *m, const Batch *b, KvCache *kv, int i, int layer) {
  const GptOssConfig *c = &m->weights->config;
  const Shard *s = &m->weights->shard;
  const LayerWeights *lw = &m->weights->layers[i];
  Backend *be = m->backend;
  int T = b->num_tokens, q_dim = shard_q_dim(m), kv_dim = shard_kv_dim(m);
  int qkv_dim = shard_qkv_dim(m);
  be->rmsnorm(be, m->x, lw->attn_norm, T, c->hidden_size, m->normed);
  be->linear(be, &lw->qkv, lw->qkv_bias, m->normed, T, m->qkv, false);  // rows [q | k | v]
  // the query heads and the key heads after them, in one call (the values are not rotated)
  be->rope(be, m->qkv, T, qkv_dim, s->num_heads + s->num_kv_heads, c->head_dim, b->positions,
           &m->rope);
  // A hybrid cache keeps the sliding layers' KV in the batch's window blocks.
  const bool sliding = config_layer_is_sliding(c, layer);
  Batch window_batch;
  if (sliding && kv->hybrid) {
    CHECK(b->window_slot_mapping && b->window_block_tables);
    window_batch = *b;
    window_batch.slot_mapping = b->window_slot_mapping;
    window_batch.block_tables = b->window_block_tables;
    b = &window_batch;
  }
  be->kv_write(be, kv, i, m->qkv + q_dim, m->qkv + q_dim + kv_dim, qkv_dim, b->slot_mapping, T);
  AttentionArgs a = {
      .q = m->qkv,
      .q_stride = qkv_dim,
      .kv = kv,
      .layer = i,
      .sinks = lw->sinks,
      .batch = b,
      .num_heads = s->num_heads,
      .num_kv_heads = s->num_kv_heads,
      .head_dim = c->head_dim,
      .sliding_window = sliding ? c->sliding_window : 0,
      .scale = 1.0f / sqrtf((float)c->head_dim),
      .out = m->attn,
  };
  be->attention(be, &a);
  if (!m->tp) {
    be->linear(be, &lw->out, lw->out_bias, m->attn, T, m->x, true);
    return;
  }
  be->linear(be, &lw->out, lw->out_bias, m->attn, T, m->partial, false);  // bias: rank 0's
  add_all_reduced(m, T);
}

// x += MoE(RMSNorm(x)) for one layer (index i of the stage).
static void moe_block(Model *m, const Batch *b, int i) {
  const GptOssConfig *c = &m->weights->config;
  const Shard *s = &m->weights->shard;
  Backend *be = m->backend;
  const int T = b->num_tokens;
  be->rmsnorm(be, m->x, m->weights->layers[i].mlp_norm, T, c->hidden_size, m->normed);
  MoeArgs a = {.config = c,
               .layer = &m->weights->layers[i],
               .x = m->normed,
               .num_tokens = T,
               .expert_begin = s->expert_begin,
               .expert_end = s->expert_end,
               .residual = m->tp ? m->partial : m->x};
  const RouteProbe *rp = m->route_probe;
  MoeProbe probe;
  if (rp) {
    probe = (MoeProbe){.margins = rp->margins ? rp->margins + (size_t)i * T : NULL,
                       .flip_token = rp->flip_layer == i ? rp->flip_token : -1};
    a.probe = &probe;
  }
  if (m->tp) be->zero(be, m->partial, (size_t)T * (size_t)c->hidden_size * sizeof(float));
  be->moe(be, &a);
  if (m->tp) add_all_reduced(m, T);
}

// The vocabulary columns of every tensor-parallel rank, gathered and laid out as whole rows of
// logits on rank 0: rank r's [num_logits, part] block becomes columns r * part .. + part of
// every row, by one strided copy per rank in backend memory.   logits: [num_logits, vocab]
static void gather_logits(Model *m, int num_logits, float *logits) {
  const size_t vocab = (size_t)m->weights->config.vocab_size, part = (size_t)shard_vocab(m);
  const size_t n = (size_t)num_logits * part;
  m->tp->all_gather(m->tp, m->logits_part, n, m->logits_gathered);
  if (m->tp->rank != 0) return;
  CHECK(logits != NULL);
  for (int r = 0; r < m->tp->size; r++)
    m->backend->copy_rows(m->backend, logits + (size_t)r * part, vocab * sizeof(float),
                          m->logits_gathered + (size_t)r * n, part * sizeof(float),
                          part * sizeof(float), num_logits);
}

void model_forward(Model *m, const Batch *host_batch, KvCache *kv, float *logits) {
  model_forward_uploaded(m, m->backend->upload_batch(m->backend, host_batch), kv, logits);
}

void model_forward_uploaded(Model *m, const Batch *b, KvCache *kv, float *logits) {
  CHECK(b->num_tokens > 0 && b->num_tokens <= m->max_num_tokens && b->num_logits <= b->num_tokens);
  CHECK(b->num_logits <= m->max_num_logits);
  const GptOssWeights *w = m->weights;
  const GptOssConfig *c = &w->config;
  const Shard *s = &w->shard;
  Backend *be = m->backend;
  if (shard_is_first_stage(s)) be->embed(be, &w->embedding, b->token_ids, b->num_tokens, m->x);
  for (int i = 0; i < shard_num_layers(s); i++) {
    attention_block(m, b, kv, i, s->layer_begin + i);
    moe_block(m, b, i);
  }
  if (!shard_is_last_stage(s) || b->num_logits == 0) return;
  // Only the rows that need logits go through the final norm and the unembedding.
  be->gather_rows(be, m->x, b->logits_indices, b->num_logits, c->hidden_size, m->final_rows);
  be->rmsnorm(be, m->final_rows, w->final_norm, b->num_logits, c->hidden_size, m->final_rows);
  if (!m->tp) {
    be->linear(be, &w->unembedding, NULL, m->final_rows, b->num_logits, logits, false);
    return;
  }
  be->linear(be, &w->unembedding, NULL, m->final_rows, b->num_logits, m->logits_part, false);
  gather_logits(m, b->num_logits, logits);
}
