// generate.c: one sequence, contiguous KV blocks, prefill then decode. The Batch it builds is
// the same structure the scheduler's runner builds for many sequences.
#include "core/generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "model/kv_cache.h"
#include "text/harmony.h"
#include "text/tokenizer.h"

#define GENERATE_BLOCK_SIZE 16

// The arrays behind one sequence's Batch.
typedef struct {
  int32_t *positions;       // [capacity]
  int64_t *slots;           // [capacity]
  int32_t *logits_indices;  // [capacity]
  int32_t *block_table;     // [num_blocks] block i holds positions 16i .. 16i + 15
  int num_blocks;
  int32_t query_start[2];
  int32_t seq_len;
} SeqBatch;

static void seq_batch_init(SeqBatch *s, int capacity, int num_blocks) {
  s->positions = xmalloc((size_t)capacity * sizeof *s->positions);
  s->slots = xmalloc((size_t)capacity * sizeof *s->slots);
  s->logits_indices = xmalloc((size_t)capacity * sizeof *s->logits_indices);
  s->block_table = xmalloc((size_t)num_blocks * sizeof *s->block_table);
  s->num_blocks = num_blocks;
  for (int b = 0; b < num_blocks; b++) s->block_table[b] = b;
}

static void seq_batch_free(SeqBatch *s) {
  free(s->positions);
  free(s->slots);
  free(s->logits_indices);
  free(s->block_table);
}

// A Batch of the sequence's tokens ids[0..num), at positions first.., with logits for every one
// of them (all_logits) or only the last.
static Batch seq_batch(SeqBatch *s, const uint32_t *ids, int first, int num, bool all_logits) {
  for (int i = 0; i < num; i++) {
    int pos = first + i;
    s->positions[i] = pos;
    s->slots[i] = (int64_t)s->block_table[pos / GENERATE_BLOCK_SIZE] * GENERATE_BLOCK_SIZE +
                  pos % GENERATE_BLOCK_SIZE;
    s->logits_indices[i] = i;
  }
  s->query_start[0] = 0;
  s->query_start[1] = num;
  s->seq_len = first + num;
  return (Batch){.num_seqs = 1,
                 .num_tokens = num,
                 .token_ids = ids,
                 .positions = s->positions,
                 .slot_mapping = s->slots,
                 .query_start = s->query_start,
                 .seq_lens = &s->seq_len,
                 .block_tables = s->block_table,
                 .max_blocks_per_seq = s->num_blocks,
                 .logits_indices = all_logits ? s->logits_indices : s->logits_indices + num - 1,
                 .num_logits = all_logits ? num : 1};
}

static bool check_request(const Runner *runner, const GenerateRequest *r, char *err,
                          size_t err_size) {
  const GptOssConfig *c = runner_config(runner);
  const int max_num_tokens = runner_max_num_tokens(runner);
  if (r->num_prompt_ids == 0) {
    snprintf(err, err_size, "the prompt is empty");
    return false;
  }
  for (size_t i = 0; i < r->num_prompt_ids; i++)
    if (r->prompt_ids[i] >= (uint32_t)c->vocab_size) {
      snprintf(err, err_size, "prompt id %u at index %zu is outside the model's vocabulary (%d)",
               r->prompt_ids[i], i, c->vocab_size);
      return false;
    }
  int64_t total = (int64_t)r->num_prompt_ids + r->max_tokens;
  if (total > config_max_positions(c)) {
    snprintf(err, err_size, "prompt (%zu) + max tokens (%d) exceed the model's context (%lld)",
             r->num_prompt_ids, r->max_tokens, (long long)config_max_positions(c));
    return false;
  }
  if ((int64_t)r->num_prompt_ids > max_num_tokens) {
    snprintf(err, err_size, "the prompt (%zu tokens) is longer than one forward call (%d)",
             r->num_prompt_ids, max_num_tokens);
    return false;
  }
  return true;
}

bool generate_run(Runner *runner, const GenerateRequest *r, GenerateResult *out, char *err,
                  size_t err_size) {
  *out = (GenerateResult){.finish_reason = "length"};
  if (!check_request(runner, r, err, err_size)) return false;
  const GptOssConfig *c = runner_config(runner);
  int num_prompt = (int)r->num_prompt_ids;
  int capacity = num_prompt + r->max_tokens;
  int num_blocks = (capacity + GENERATE_BLOCK_SIZE - 1) / GENERATE_BLOCK_SIZE;
  if (!runner_kv_init(runner, num_blocks, GENERATE_BLOCK_SIZE, false, err, err_size)) return false;
  size_t vocab = (size_t)c->vocab_size;
  bool all_logits = r->prompt_logits != NULL;
  float *row = xmalloc(vocab * sizeof(float));  // one token's logits
  float *prompt_logits = all_logits ? r->prompt_logits : row;
  SeqBatch sb;
  seq_batch_init(&sb, num_prompt, num_blocks);

  Batch prefill = seq_batch(&sb, r->prompt_ids, 0, num_prompt, all_logits);
  if (r->prefill_probe) runner_set_route_probe(runner, r->prefill_probe);
  runner_forward(runner, &prefill, prompt_logits, NULL, NULL, NULL);
  if (r->prefill_probe) runner_set_route_probe(runner, NULL);
  const float *last = prompt_logits + (all_logits ? (size_t)(num_prompt - 1) * vocab : 0);

  SamplerRng rng;
  sampler_rng_seed(&rng, r->seed);
  SamplerScratch scratch = {0};
  for (int step = 0; step < r->max_tokens; step++) {
    uint32_t id = sampler_sample(last, c->vocab_size, &r->sampling, &rng, &scratch);
    token_ids_push(&out->output_ids, id);
    if (!r->ignore_eos && harmony_is_stop_token(id)) {
      out->finish_reason = "stop";
      break;
    }
    if (step + 1 == r->max_tokens) break;
    Batch decode = seq_batch(&sb, &out->output_ids.data[step], num_prompt + step, 1, false);
    runner_forward(runner, &decode, row, NULL, NULL, NULL);
    last = row;
  }
  sampler_scratch_free(&scratch);
  seq_batch_free(&sb);
  free(row);
  runner_kv_free(runner);
  return true;
}
