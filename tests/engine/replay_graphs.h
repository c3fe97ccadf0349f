// replay_graphs.h: graph ops for CPU ranks, so that the runner's CUDA-graph path
// (dist/runner_graphs.c: sizes, padding, which step fits, the fixed upload, recording and
// launching on every rank at once, fallbacks) runs in CPU tests. It stands in for CUDA's
// recording, not for anything the runner does: upload_graph_batch copies the batch into the
// rank's storage laid out by (max_seqs, max_blocks) once, as the CUDA backend's is (tables as
// rows max_blocks wide); graph_begin and graph_end remember the batch size (the CPU runs the ops
// as they are called, here over padding that writes no KV); graph_launch runs the rank's forward
// pass again over its stored batch (a tensor-parallel rank's collectives with the others', on
// their threads), after setting rank 0's logits rows to NaN (a launch that wrote none would pass
// stale ones on), and checks that the stored batch has the recorded size. Static: include it
// once. One runner at a time.
#ifndef GE_TESTS_REPLAY_GRAPHS_H
#define GE_TESTS_REPLAY_GRAPHS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "dist/runner_internal.h"

enum { REPLAY_MAX_RANKS = 8 };

typedef struct {
  Rank *rank;
  int max_seqs, max_blocks;
  uint32_t *ids;
  int32_t *positions, *query_start, *seq_lens, *logits_indices, *tables, *window_tables;
  int64_t *slots, *window_slots;
  Batch batch;
  int recording_size;  // the stored batch's size at graph_begin
  int num_launches;
} ReplayRank;

static ReplayRank g_replay[REPLAY_MAX_RANKS];

static ReplayRank *replay_rank(const Backend *be) {
  for (int i = 0; i < REPLAY_MAX_RANKS; i++)
    if (g_replay[i].rank && g_replay[i].rank->backend == be) return &g_replay[i];
  CHECK(!"replay_graphs: a backend replay_graphs_install did not see");
  return NULL;
}

static const Batch *replay_upload(Backend *be, const Batch *h, int max_seqs, int max_blocks) {
  ReplayRank *g = replay_rank(be);
  if (!g->max_seqs) {  // one layout for the backend's life
    const size_t S = (size_t)max_seqs, W = (size_t)max_blocks;
    g->max_seqs = max_seqs, g->max_blocks = max_blocks;
    g->ids = xcalloc(S, sizeof *g->ids);
    g->positions = xcalloc(S, sizeof(int32_t));
    g->query_start = xcalloc(S + 1, sizeof(int32_t));
    g->seq_lens = xcalloc(S, sizeof(int32_t));
    g->logits_indices = xcalloc(S, sizeof(int32_t));
    g->tables = xcalloc(S * W, sizeof(int32_t));
    g->window_tables = xcalloc(S * W, sizeof(int32_t));
    g->slots = xcalloc(S, sizeof(int64_t));
    g->window_slots = xcalloc(S, sizeof(int64_t));
  }
  CHECK(g->max_seqs == max_seqs && g->max_blocks == max_blocks);
  const int n = h->num_seqs, w = h->max_blocks_per_seq;
  CHECK(n > 0 && n <= max_seqs && w <= max_blocks && h->num_tokens == n && h->num_logits == n);
  memcpy(g->ids, h->token_ids, (size_t)n * sizeof *g->ids);
  memcpy(g->positions, h->positions, (size_t)n * sizeof(int32_t));
  memcpy(g->query_start, h->query_start, (size_t)(n + 1) * sizeof(int32_t));
  memcpy(g->seq_lens, h->seq_lens, (size_t)n * sizeof(int32_t));
  memcpy(g->logits_indices, h->logits_indices, (size_t)n * sizeof(int32_t));
  memcpy(g->slots, h->slot_mapping, (size_t)n * sizeof(int64_t));
  const bool window = h->window_block_tables != NULL;
  if (window) memcpy(g->window_slots, h->window_slot_mapping, (size_t)n * sizeof(int64_t));
  for (int s = 0; s < n; s++) {
    memcpy(g->tables + (size_t)s * max_blocks, h->block_tables + (size_t)s * w,
           (size_t)w * sizeof(int32_t));
    if (window)
      memcpy(g->window_tables + (size_t)s * max_blocks, h->window_block_tables + (size_t)s * w,
             (size_t)w * sizeof(int32_t));
  }
  g->batch = (Batch){.num_seqs = n,
                     .num_tokens = n,
                     .token_ids = g->ids,
                     .positions = g->positions,
                     .slot_mapping = g->slots,
                     .query_start = g->query_start,
                     .seq_lens = g->seq_lens,
                     .block_tables = g->tables,
                     .max_blocks_per_seq = max_blocks,
                     .window_slot_mapping = window ? g->window_slots : NULL,
                     .window_block_tables = window ? g->window_tables : NULL,
                     .logits_indices = g->logits_indices,
                     .num_logits = n};
  return &g->batch;
}

static bool replay_begin(Backend *be, char *err, size_t err_size) {
  (void)err, (void)err_size;
  ReplayRank *g = replay_rank(be);
  g->recording_size = g->batch.num_seqs;
  return true;
}

static void *replay_end(Backend *be, char *err, size_t err_size) {
  (void)err, (void)err_size;
  int *size = xmalloc(sizeof *size);
  *size = replay_rank(be)->recording_size;
  return size;
}

static bool replay_current(const Backend *be, const void *graph) {
  (void)be, (void)graph;
  return true;
}

static void replay_launch(Backend *be, void *graph) {
  ReplayRank *g = replay_rank(be);
  Rank *rank = g->rank;
  CHECK(g->batch.num_seqs == *(int *)graph);
  const size_t n = (size_t)g->batch.num_logits * (size_t)rank->runner->config.vocab_size;
  for (size_t i = 0; rank->logits && i < n; i++) rank->logits[i] = NAN;
  model_forward_uploaded(&rank->model, &g->batch, &rank->kv, rank->logits);
  g->num_launches++;
}

static void replay_free(Backend *be, void *graph) {
  (void)be;
  free(graph);
}

// Gives each of runner's ranks these graph ops (runner_prepare_graphs then gives rank 0 logits
// rows of its own, which a launch writes as on a device: the CPU's op-by-op calls write the host
// rows).
static void replay_graphs_install(Runner *r) {
  CHECK(r->num_ranks <= REPLAY_MAX_RANKS);
  for (int i = 0; i < REPLAY_MAX_RANKS; i++) {
    ReplayRank *g = &g_replay[i];
    free(g->ids), free(g->positions), free(g->query_start), free(g->seq_lens);
    free(g->logits_indices), free(g->tables), free(g->window_tables), free(g->slots);
    free(g->window_slots);
    memset(g, 0, sizeof *g);
  }
  for (int i = 0; i < r->num_ranks; i++) {
    g_replay[i].rank = &r->ranks[i];
    Backend *be = r->ranks[i].backend;
    be->upload_graph_batch = replay_upload;
    be->graph_begin = replay_begin;
    be->graph_end = replay_end;
    be->graph_current = replay_current;
    be->graph_launch = replay_launch;
    be->graph_free = replay_free;
  }
}

#endif
