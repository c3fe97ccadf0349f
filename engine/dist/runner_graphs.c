// runner_graphs.c: decode steps as recorded graphs (runner.h: runner_prepare_graphs,
// runner_capture_graphs): the sizes, the recordings, and a decode step run by one of them,
// padded by dist/decode_batch.h, its logits then sampled or copied like any call's. With -tp > 1
// every rank records and launches its own graph of the same size at once, its collectives in it
// (dist/comm_nccl.c runs them on the backend's queue); rank 0's holds the logits.
#include <stdio.h>
#include <stdlib.h>

#include "common/check.h"
#include "dist/runner_internal.h"

// One rank's part of a graph step: the padded batch into its fixed layout, then its graph;
// rank 0 then samples or copies the call's logits rows.
static void launch_rank_graph(Rank *rank) {
  Runner *r = rank->runner;
  Backend *be = rank->backend;
  be->upload_graph_batch(be, r->graph_batch, r->decode.max_seqs, r->decode.max_blocks);
  be->graph_launch(be, rank->graphs[r->graph_index]);
  if (rank == &r->ranks[0]) runner_logits_to_host(r, be, rank->logits, r->graph_rows, 0);
}

bool runner_forward_graph(Runner *r, const Batch *batch, float *logits, const SampleRow *sample,
                          int32_t *sampled, PickLogprobs *logprobs) {
  if (r->num_graphs == 0 || !decode_batch_fits(&r->decode, batch)) return false;
  int g = 0;
  while (g < r->num_graphs && r->graph_sizes[g] < batch->num_seqs) g++;
  if (g == r->num_graphs) return false;
  // Every rank's graph must launch, or none: a rank's collectives wait for the others'.
  const char *moved = r->ranks[0].logits != r->graph_logits ? "logits rows" : NULL;
  for (int i = 0; i < r->num_ranks && !moved; i++) {
    const Backend *be = r->ranks[i].backend;
    if (!be->graph_current(be, r->ranks[i].graphs[g])) moved = "scratch";
  }
  if (moved) {
    fprintf(stderr,
            "gptoss-engine: warning: the backend's %s moved after the CUDA graphs were recorded "
            "(a step larger than the warm-up's); running every step op by op now\n",
            moved);
    runner_drop_graphs(r);
    return false;
  }
  r->graph_batch = decode_batch_pad(&r->decode, batch, r->graph_sizes[g]);
  r->graph_index = g, r->graph_rows = batch->num_logits;
  runner_call_begin(r, batch->num_logits, logits, sample, sampled, logprobs);
  runner_on_ranks(r, launch_rank_graph);
  return true;
}

bool runner_prepare_graphs(Runner *r, int max_size, int max_blocks, bool hybrid, char *err,
                           size_t err_size) {
  CHECK(r->num_sizes == 0 && max_size >= 1 && max_blocks >= 1);
  if (r->pp > 1) {
    snprintf(err, err_size,
             "recorded only with -pp 1 (the %d stages of a pipeline take a step's micro-batches "
             "in turn)",
             r->pp);
    return false;
  }
  for (int i = 0; i < r->num_ranks; i++)
    if (!r->ranks[i].backend->graph_begin) {
      snprintf(err, err_size, "the %s backend records none", r->ranks[i].backend->name);
      return false;
    }
  if (r->tp > 1 && r->groups[0].nccl && !nccl_records_in_graphs(err, err_size)) return false;
  // Sizes up to the most sequences a step runs (a logits row each), which ends the list.
  const int most_seqs =
      r->options.max_num_logits > 0 ? r->options.max_num_logits : r->options.max_num_tokens;
  if (max_size > r->options.max_num_tokens) max_size = r->options.max_num_tokens;
  int *sizes = xcalloc((size_t)max_size, sizeof *sizes);
  int n = decode_graph_sizes(max_size, sizes);
  for (int i = 0; i < n; i++)
    if (sizes[i] >= most_seqs) {
      sizes[i] = most_seqs, n = i + 1;
      break;
    }
  r->graph_sizes = sizes, r->num_sizes = n;
  decode_batch_init(&r->decode, sizes[n - 1], max_blocks, hybrid);
  // Each rank's batch layout and rank 0's logits rows, at their peak before the KV cache's share.
  const Batch none = {0};
  const Batch *largest = decode_batch_pad(&r->decode, &none, sizes[n - 1]);
  for (int i = 0; i < r->num_ranks; i++) {
    Backend *be = r->ranks[i].backend;
    be->upload_graph_batch(be, largest, sizes[n - 1], max_blocks);
  }
  r->graph_logits = runner_device_logits(&r->ranks[0], most_seqs);
  return true;
}

// Recording graph graph_index on one rank, in three jobs. First the padded batch runs once op by
// op, in lockstep (so that every kernel, product plan and buffer a step of its size uses exists
// already; an allocation then must not wait for a collective: comm_nccl.h).
static void warm_rank_graph(Rank *rank) {
  Runner *r = rank->runner;
  Backend *be = rank->backend;
  rank->graph_uploaded =
      be->upload_graph_batch(be, r->graph_batch, r->decode.max_seqs, r->decode.max_blocks);
  model_forward_uploaded(&rank->model, rank->graph_uploaded, &rank->kv, rank->logits);
}

// Then every rank begins its recording, and only if all could do they record the step: a rank
// that ran its ops while the others recorded theirs would wait for their collectives forever.
static void begin_rank_graph(Rank *rank) {
  Backend *be = rank->backend;
  rank->graph_ok = be->graph_begin(be, rank->graph_err, sizeof rank->graph_err);
}

// End, where the recording began: with graph_record, the batch's ops are recorded and the graph
// kept; without (another rank could not begin), the empty recording is thrown away.
static void end_rank_graph(Rank *rank) {
  Runner *r = rank->runner;
  Backend *be = rank->backend;
  if (!rank->graph_ok) return;
  if (r->graph_record)
    model_forward_uploaded(&rank->model, rank->graph_uploaded, &rank->kv, rank->logits);
  void *graph = be->graph_end(be, rank->graph_err, sizeof rank->graph_err);
  rank->graph_ok = graph != NULL;
  if (r->graph_record)
    rank->graphs[r->graph_index] = graph;
  else if (graph)
    be->graph_free(be, graph);
}

// The first rank whose last begin or end failed, as err; true when none did.
static bool ranks_recorded(const Runner *r, char *err, size_t err_size) {
  for (int i = 0; i < r->num_ranks; i++)
    if (!r->ranks[i].graph_ok) {
      if (r->num_ranks > 1)
        snprintf(err, err_size, "rank %d: %s", i, r->ranks[i].graph_err);
      else
        snprintf(err, err_size, "%s", r->ranks[i].graph_err);
      return false;
    }
  return true;
}

// Records graph i on every rank over a batch of padding only.
static bool record_graph(Runner *r, int i, char *err, size_t err_size) {
  const Batch none = {0};
  r->graph_batch = decode_batch_pad(&r->decode, &none, r->graph_sizes[i]);
  r->graph_index = i;
  runner_lockstep(r, true);
  runner_on_ranks(r, warm_rank_graph);
  runner_lockstep(r, false);
  runner_on_ranks(r, begin_rank_graph);
  r->graph_record = ranks_recorded(r, err, err_size);
  runner_on_ranks(r, end_rank_graph);
  return r->graph_record && ranks_recorded(r, err, err_size);
}

bool runner_capture_graphs(Runner *r, char *err, size_t err_size) {
  CHECK(r->num_sizes > 0 && r->ranks[0].kv.backend != NULL);  // prepared, and a cache to keep
  if (r->ranks[0].logits != r->graph_logits) {  // an eager call took more rows than prepared
    snprintf(err, err_size, "the logits rows moved after runner_prepare_graphs");
    return false;
  }
  runner_drop_graphs(r);
  for (int k = 0; k < r->num_ranks; k++)
    r->ranks[k].graphs = xcalloc((size_t)r->num_sizes, sizeof *r->ranks[k].graphs);
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
  for (int k = 0; k < r->num_ranks; k++) {
    Rank *rank = &r->ranks[k];
    for (int i = 0; rank->graphs && i < r->num_graphs; i++)
      if (rank->graphs[i]) rank->backend->graph_free(rank->backend, rank->graphs[i]);
    free(rank->graphs);
    rank->graphs = NULL;
  }
  r->num_graphs = 0;
}

void runner_graphs_free(Runner *r) {
  if (r->num_sizes) decode_batch_free(&r->decode);
  free(r->graph_sizes);
  r->graph_sizes = NULL, r->num_sizes = 0;
}
