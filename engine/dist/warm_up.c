// warm_up.c: the largest step, run once before the KV cache is sized (warm_up.h). Builds the
// batch on the host, runs it through the runner like any step, and frees what it made.
#include "dist/warm_up.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "common/check.h"

bool runner_warm_up(Runner *r, int max_num_seqs, int max_model_len, int block_size, char *err,
                    size_t err_size) {
  const int T = runner_max_num_tokens(r), S = max_num_seqs < T ? max_num_seqs : T;
  const int W = (max_model_len + block_size - 1) / block_size;
  const int vocab = runner_config(r)->vocab_size;
  CHECK(T > 0 && S > 0 && max_model_len > 0 && block_size > 0);
  if (!runner_kv_init(r, 1, block_size, false, err, err_size)) return false;
  uint32_t *ids = xmalloc((size_t)T * sizeof *ids);
  int32_t *positions = xmalloc((size_t)T * sizeof *positions);
  int64_t *slots = xmalloc((size_t)T * sizeof *slots);
  int32_t *query_start = xmalloc((size_t)(S + 1) * sizeof *query_start);
  int32_t *seq_lens = xmalloc((size_t)S * sizeof *seq_lens);
  int32_t *logits_indices = xmalloc((size_t)S * sizeof *logits_indices);
  int32_t *tables = xcalloc((size_t)S * (size_t)W, sizeof *tables);  // every entry block 0
  SampleRow *sample = xcalloc((size_t)S, sizeof *sample);            // greedy
  int32_t *sampled = xmalloc((size_t)S * sizeof *sampled);
  // Host rows for the logits a device does not sample (none here: only virtual memory).
  float *logits = malloc((size_t)S * (size_t)vocab * sizeof *logits);
  const bool ok = logits != NULL;
  if (!ok) {
    snprintf(err, err_size, "warm-up: out of host memory for %d rows of logits", S);
  } else {
    int t = 0;
    for (int s = 0; s < S; s++) {
      const int n = T / S + (s < T % S);  // the first T % S sequences take one more token
      query_start[s] = t;
      for (int i = 0; i < n; i++, t++) {
        ids[t] = (uint32_t)(t % vocab);
        positions[t] = i % max_model_len;
        slots[t] = -1;  // padding: kv_write skips it
      }
      seq_lens[s] = n < max_model_len ? n : max_model_len;
      logits_indices[s] = t - 1;
    }
    query_start[S] = t;
    const Batch b = {.num_seqs = S,
                     .num_tokens = T,
                     .token_ids = ids,
                     .positions = positions,
                     .slot_mapping = slots,
                     .query_start = query_start,
                     .seq_lens = seq_lens,
                     .block_tables = tables,
                     .max_blocks_per_seq = W,
                     // as a hybrid cache's step has them: a device's staging buffer reaches
                     // its peak here (the cache itself is not hybrid, so they go unread)
                     .window_slot_mapping = slots,
                     .window_block_tables = tables,
                     .logits_indices = logits_indices,
                     .num_logits = S};
    runner_forward_whole(r, &b, logits, sample, sampled, NULL);  // every stage: all of it
  }
  runner_kv_free(r);
  free(ids), free(positions), free(slots), free(query_start), free(seq_lens);
  free(logits_indices), free(tables), free(sample), free(sampled), free(logits);
  return ok;
}
