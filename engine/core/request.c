// request.c: creating and freeing a request: one allocation (the struct, then its block ids, then
// its token ids, so that the fields a step touches sit close together, then its block hashes
// for the prefix cache), none afterwards.
#include "core/request.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/clock.h"

Request *req_create(uint64_t id, const EngineRequestParams *p, int block_size) {
  CHECK(p->num_prompt_ids > 0 && p->max_tokens >= 1);
  int max_num_tokens = (int)p->num_prompt_ids + p->max_tokens;
  int max_blocks = blocks_for_tokens(max_num_tokens, block_size);
  Request *r = xcalloc(1, sizeof *r + (size_t)max_blocks * sizeof(int32_t) +
                              (size_t)max_num_tokens * sizeof(uint32_t) +
                              (size_t)max_blocks * sizeof(BlockHash));
  int32_t *block_ids = (int32_t *)(r + 1);
  r->token_ids = (uint32_t *)(block_ids + max_blocks);
  blocks_table_init(&r->blocks, block_ids, (BlockHash *)(r->token_ids + max_num_tokens),
                    max_blocks);
  r->id = id;
  r->num_prompt_tokens = (int)p->num_prompt_ids;
  r->num_tokens = r->num_prompt_tokens;
  r->max_num_tokens = max_num_tokens;
  memcpy(r->token_ids, p->prompt_ids, p->num_prompt_ids * sizeof *r->token_ids);
  r->params = *p;
  r->params.prompt_ids = r->token_ids;
  r->status = REQ_WAITING;
  r->finish = FINISH_NONE;
  sampler_rng_seed(&r->rng, p->seed);
  r->running_index = -1;
  r->last_sample_row = -1;
  r->arrival_ns = clock_now_ns();
  return r;
}

void req_free(Request *r) { free(r); }
