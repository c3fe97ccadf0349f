// request.c: creating and freeing a request: one allocation (the struct, then its block ids, then
// its token ids, so that the fields a step touches sit close together, then its stop ids, the
// record of sampled ids the penalties read, its logit bias, then its block hashes for the prefix
// cache), none afterwards; the stop test and the sampler's view of a request.
#include "core/request.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/clock.h"
#include "text/tokenizer.h"

static const uint32_t HARMONY_STOPS[] = {TOK_RETURN, TOK_CALL, TOK_ENDOFTEXT};
enum { NUM_HARMONY_STOPS = sizeof HARMONY_STOPS / sizeof *HARMONY_STOPS };

static bool penalised(const SamplingParams *p) {
  return (p->repetition_penalty > 0 && p->repetition_penalty != 1) || p->presence_penalty != 0 ||
         p->frequency_penalty != 0;
}

Request *req_create(uint64_t id, const EngineRequestParams *p, int block_size, bool hybrid_kv) {
  CHECK(p->num_prompt_ids > 0 && p->max_tokens >= 1);
  int max_num_tokens = (int)p->num_prompt_ids + p->max_tokens;
  int max_blocks = blocks_for_tokens(max_num_tokens, block_size);
  size_t num_stop = NUM_HARMONY_STOPS + p->num_stop_token_ids;
  size_t num_sampled = penalised(&p->sampling) ? (size_t)p->max_tokens : 0;
  const size_t num_ids = (size_t)max_blocks * (hybrid_kv ? 2 : 1);
  Request *r = xcalloc(1, sizeof *r + num_ids * sizeof(int32_t) +
                              ((size_t)max_num_tokens + num_stop + num_sampled) * sizeof(uint32_t) +
                              p->num_logit_bias * sizeof(SamplerBias) +
                              (size_t)max_blocks * sizeof(BlockHash));
  int32_t *block_ids = (int32_t *)(r + 1);
  r->token_ids = (uint32_t *)(block_ids + num_ids);
  r->stop_ids = r->token_ids + max_num_tokens;
  r->sampled_ids = num_sampled ? r->stop_ids + num_stop : NULL;
  SamplerBias *bias = (SamplerBias *)(r->stop_ids + num_stop + num_sampled);
  blocks_table_init(&r->blocks, block_ids, hybrid_kv ? block_ids + max_blocks : NULL,
                    (BlockHash *)(bias + p->num_logit_bias), max_blocks);
  r->id = id;
  r->num_prompt_tokens = (int)p->num_prompt_ids;
  r->num_tokens = r->num_prompt_tokens;
  r->max_num_tokens = max_num_tokens;
  memcpy(r->token_ids, p->prompt_ids, p->num_prompt_ids * sizeof *r->token_ids);
  memcpy(r->stop_ids, HARMONY_STOPS, sizeof HARMONY_STOPS);
  if (p->num_stop_token_ids)
    memcpy(r->stop_ids + NUM_HARMONY_STOPS, p->stop_token_ids,
           p->num_stop_token_ids * sizeof *r->stop_ids);
  r->num_stop_ids = (int)num_stop;
  if (p->num_logit_bias) memcpy(bias, p->logit_bias, p->num_logit_bias * sizeof *bias);
  r->params = *p;
  r->params.prompt_ids = r->token_ids;
  r->params.stop_token_ids = r->stop_ids + NUM_HARMONY_STOPS;
  r->params.logit_bias = p->num_logit_bias ? bias : NULL;
  r->status = REQ_WAITING;
  r->finish = FINISH_NONE;
  sampler_rng_seed(&r->rng, p->seed);
  r->running_index = -1;
  r->last_sample_row = -1;
  r->arrival_ns = clock_now_ns();
  return r;
}

void req_free(Request *r) { free(r); }

bool req_is_stop_token(const Request *r, uint32_t id) {
  for (int i = r->params.ignore_eos ? NUM_HARMONY_STOPS : 0; i < r->num_stop_ids; i++)
    if (r->stop_ids[i] == id) return true;
  return false;
}

SamplerInputs req_sampler_inputs(const Request *r) {
  return (SamplerInputs){.prompt_ids = r->token_ids,
                         .num_prompt_ids = (size_t)r->num_prompt_tokens,
                         .output_ids = r->sampled_ids,
                         .num_generated = (size_t)r->num_sampled,
                         .bias = r->params.logit_bias,
                         .num_bias = r->params.num_logit_bias,
                         .stop_ids = r->stop_ids,
                         .num_stop_ids = (size_t)r->num_stop_ids};
}

void req_record_sample(Request *r, uint32_t id) {
  if (r->num_sampled >= r->params.max_tokens) return;  // async: a dropped sample after the end
  if (r->sampled_ids) r->sampled_ids[r->num_sampled] = id;
  r->num_sampled++;
}
