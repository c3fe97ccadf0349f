// runner_graphs.c: decode steps as recorded graphs (runner.h: runner_prepare_graphs,
// runner_capture_graphs): the sizes, the recordings, and a decode step run by one of them,
// padded by dist/decode_batch.h, its logits then sampled or copied like any call's.
#include <stdio.h>
#include <stdlib.h>

#include "common/check.h"
#include "dist/runner_internal.h"

bool runner_forward_graph(Runner *r, const Batch *batch, float *logits, const SampleRow *sample,
                          int32_t *sampled, PickLogprobs *logprobs) {
  if (r->num_graphs == 0 || !decode_batch_fits(&r->decode, batch)) return false;
  int g = 0;
  while (g < r->num_graphs && r->graph_sizes[g] < batch->num_seqs) g++;
  if (g == r->num_graphs) return false;
  Rank *rank = &r->ranks[0];
  Backend *be = rank->backend;
  const char *moved = rank->logits != r->graph_logits ? "logits rows" : NULL;
  if (!moved) {
    const Batch *padded = decode_batch_pad(&r->decode, batch, r->graph_sizes[g]);
    be->upload_graph_batch(be, padded, r->decode.max_seqs, r->decode.max_blocks);
    if (!be->graph_launch(be, r->graphs[g])) moved = "scratch";
  }
  if (moved) {
    fprintf(stderr,
            "gptoss-engine: warning: the backend's %s moved after the CUDA graphs were recorded "
            "(a step larger than the warm-up's); running every step op by op now\n",
            moved);
    runner_drop_graphs(r);
    return false;
  }
  runner_call_begin(r, batch->num_logits, logits, sample, sampled, logprobs);
  runner_logits_to_host(r, be, rank->logits, batch->num_logits, 0);
  return true;
}

bool runner_prepare_graphs(Runner *r, int max_size, int max_blocks, bool hybrid, char *err,
                           size_t err_size) {
  CHECK(r->num_sizes == 0 && max_size >= 1 && max_blocks >= 1);
  Rank *rank = &r->ranks[0];
  Backend *be = rank->backend;
  if (r->num_ranks > 1) {
    snprintf(err, err_size, "recorded only with -tp 1 -pp 1 (this runner has %d ranks)",
             r->num_ranks);
    return false;
  }
  if (!be->graph_begin) {
    snprintf(err, err_size, "the %s backend records none", be->name);
    return false;
  }
  // Sizes up to the first that holds the most sequences a step runs (a logits row each).
  const int most_seqs =
      r->options.max_num_logits > 0 ? r->options.max_num_logits : r->options.max_num_tokens;
  if (max_size > r->options.max_num_tokens) max_size = r->options.max_num_tokens;
  int *sizes = xcalloc((size_t)max_size, sizeof *sizes);
  int n = decode_graph_sizes(max_size, sizes);
  for (int i = 0; i < n; i++)
    if (sizes[i] >= most_seqs) {
      n = i + 1;
      break;
    }
  r->graph_sizes = sizes, r->num_sizes = n;
  decode_batch_init(&r->decode, sizes[n - 1], max_blocks, hybrid);
  // The batch's device layout and the logits rows, at their peak before the KV cache's share.
  const Batch none = {0};
  be->upload_graph_batch(be, decode_batch_pad(&r->decode, &none, sizes[n - 1]), sizes[n - 1],
                         max_blocks);
  runner_device_logits(rank, most_seqs > sizes[n - 1] ? most_seqs : sizes[n - 1]);
  r->graph_logits = rank->logits;
  return true;
}

// Records graph i over a batch of padding only, after running that batch once op by op (so
// that every kernel, product plan and buffer a step of its size uses exists already).
static bool record_graph(Runner *r, int i, char *err, size_t err_size) {
  Rank *rank = &r->ranks[0];
  Backend *be = rank->backend;
  const Batch none = {0};
  const Batch *padded = decode_batch_pad(&r->decode, &none, r->graph_sizes[i]);
  const Batch *b = be->upload_graph_batch(be, padded, r->decode.max_seqs, r->decode.max_blocks);
  model_forward_uploaded(&rank->model, b, &rank->kv, rank->logits);
  if (!be->graph_begin(be, err, err_size)) return false;
  model_forward_uploaded(&rank->model, b, &rank->kv, rank->logits);
  r->graphs[i] = be->graph_end(be, err, err_size);
  return r->graphs[i] != NULL;
}

bool runner_capture_graphs(Runner *r, char *err, size_t err_size) {
  CHECK(r->num_sizes > 0 && r->ranks[0].kv.backend != NULL);  // prepared, and a cache to keep
  if (r->ranks[0].logits != r->graph_logits) {  // an eager call took more rows than prepared
    snprintf(err, err_size, "the logits rows moved after runner_prepare_graphs");
    return false;
  }
  runner_drop_graphs(r);
  r->graphs = xcalloc((size_t)r->num_sizes, sizeof *r->graphs);
  r->num_graphs = r->num_sizes;  // runner_drop_graphs frees those recorded, should one fail
  // Largest first: any buffer still growing reaches its peak before a recording keeps it.
  for (int i = r->num_sizes - 1; i >= 0; i--)
    if (!record_graph(r, i, err, err_size)) {
      runner_drop_graphs(r);
      return false;
    }
  return true;
}

int runner_num_graphs(const Runner *r) { return r->num_graphs; }

void runner_step_counts(const Runner *r, long long *steps, long long *graph_steps) {
  *steps = r->num_steps, *graph_steps = r->num_graph_steps;
}

int runner_graph_size(const Runner *r, int i) {
  CHECK(i >= 0 && i < r->num_graphs);
  return r->graph_sizes[i];
}

void runner_drop_graphs(Runner *r) {
  Backend *be = r->ranks[0].backend;
  for (int i = 0; r->graphs && i < r->num_graphs; i++)
    if (r->graphs[i]) be->graph_free(be, r->graphs[i]);
  free(r->graphs);
  r->graphs = NULL, r->num_graphs = 0;
}

void runner_graphs_free(Runner *r) {
  if (r->num_sizes) decode_batch_free(&r->decode);
  free(r->graph_sizes);
  r->graph_sizes = NULL, r->num_sizes = 0;
}
