// replay_graphs.h: graph ops for a single CPU rank, so that the runner's CUDA-graph path
// (dist/runner_graphs.c: sizes, padding, which step fits, the fixed upload, launches, fallbacks)
// runs in CPU tests. It stands in for CUDA's recording, not for anything the runner does:
// upload_graph_batch copies the batch into storage laid out by (max_seqs, max_blocks) once, as
// the CUDA backend's is (tables as rows max_blocks wide); graph_begin and graph_end remember the
// batch size (the CPU runs the ops as they are called, here over padding that writes no KV);
// graph_launch runs the rank's forward pass again over the stored batch, after setting its
// logits rows to NaN (a launch that wrote none would pass stale ones on), and checks that the
// stored batch has the recorded size. Static: include it once. One runner at a time.
#ifndef GE_TESTS_REPLAY_GRAPHS_H
#define GE_TESTS_REPLAY_GRAPHS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "dist/runner_internal.h"

static struct {
  Rank *rank;
  int max_seqs, max_blocks;
  uint32_t *ids;
  int32_t *positions, *query_start, *seq_lens, *logits_indices, *tables, *window_tables;
  int64_t *slots, *window_slots;
  Batch batch;
  int recording_size;  // the stored batch's size at graph_begin
  int num_launches;
} g_replay;

static const Batch *replay_upload(Backend *be, const Batch *h, int max_seqs, int max_blocks) {
  (void)be;
  if (!g_replay.max_seqs) {  // one layout for the backend's life
    const size_t S = (size_t)max_seqs, W = (size_t)max_blocks;
    g_replay.max_seqs = max_seqs, g_replay.max_blocks = max_blocks;
    g_replay.ids = xcalloc(S, sizeof *g_replay.ids);
    g_replay.positions = xcalloc(S, sizeof(int32_t));
    g_replay.query_start = xcalloc(S + 1, sizeof(int32_t));
    g_replay.seq_lens = xcalloc(S, sizeof(int32_t));
    g_replay.logits_indices = xcalloc(S, sizeof(int32_t));
    g_replay.tables = xcalloc(S * W, sizeof(int32_t));
    g_replay.window_tables = xcalloc(S * W, sizeof(int32_t));
    g_replay.slots = xcalloc(S, sizeof(int64_t));
    g_replay.window_slots = xcalloc(S, sizeof(int64_t));
  }
  CHECK(g_replay.max_seqs == max_seqs && g_replay.max_blocks == max_blocks);
  const int n = h->num_seqs, w = h->max_blocks_per_seq;
  CHECK(n > 0 && n <= max_seqs && w <= max_blocks && h->num_tokens == n && h->num_logits == n);
  memcpy(g_replay.ids, h->token_ids, (size_t)n * sizeof *g_replay.ids);
  memcpy(g_replay.positions, h->positions, (size_t)n * sizeof(int32_t));
  memcpy(g_replay.query_start, h->query_start, (size_t)(n + 1) * sizeof(int32_t));
  memcpy(g_replay.seq_lens, h->seq_lens, (size_t)n * sizeof(int32_t));
  memcpy(g_replay.logits_indices, h->logits_indices, (size_t)n * sizeof(int32_t));
  memcpy(g_replay.slots, h->slot_mapping, (size_t)n * sizeof(int64_t));
  const bool window = h->window_block_tables != NULL;
  if (window) memcpy(g_replay.window_slots, h->window_slot_mapping, (size_t)n * sizeof(int64_t));
  for (int s = 0; s < n; s++) {
    memcpy(g_replay.tables + (size_t)s * max_blocks, h->block_tables + (size_t)s * w,
           (size_t)w * sizeof(int32_t));
    if (window)
      memcpy(g_replay.window_tables + (size_t)s * max_blocks,
             h->window_block_tables + (size_t)s * w, (size_t)w * sizeof(int32_t));
  }
  g_replay.batch = (Batch){.num_seqs = n,
                           .num_tokens = n,
                           .token_ids = g_replay.ids,
                           .positions = g_replay.positions,
                           .slot_mapping = g_replay.slots,
                           .query_start = g_replay.query_start,
                           .seq_lens = g_replay.seq_lens,
                           .block_tables = g_replay.tables,
                           .max_blocks_per_seq = max_blocks,
                           .window_slot_mapping = window ? g_replay.window_slots : NULL,
                           .window_block_tables = window ? g_replay.window_tables : NULL,
                           .logits_indices = g_replay.logits_indices,
                           .num_logits = n};
  return &g_replay.batch;
}

static bool replay_begin(Backend *be, char *err, size_t err_size) {
  (void)be, (void)err, (void)err_size;
  g_replay.recording_size = g_replay.batch.num_seqs;
  return true;
}

static void *replay_end(Backend *be, char *err, size_t err_size) {
  (void)be, (void)err, (void)err_size;
  int *size = xmalloc(sizeof *size);
  *size = g_replay.recording_size;
  return size;
}

static bool replay_launch(Backend *be, void *graph) {
  (void)be;
  Rank *rank = g_replay.rank;
  CHECK(g_replay.batch.num_seqs == *(int *)graph);
  const size_t n = (size_t)g_replay.batch.num_logits * (size_t)rank->runner->config.vocab_size;
  for (size_t i = 0; i < n; i++) rank->logits[i] = NAN;
  model_forward_uploaded(&rank->model, &g_replay.batch, &rank->kv, rank->logits);
  g_replay.num_launches++;
  return true;
}

static void replay_free(Backend *be, void *graph) {
  (void)be;
  free(graph);
}

// Gives runner's one rank these graph ops (runner_prepare_graphs then gives it logits rows of
// its own, which a launch writes as on a device: the CPU's op-by-op calls write the host rows).
static void replay_graphs_install(Runner *r) {
  CHECK(r->num_ranks == 1);
  free(g_replay.ids), free(g_replay.positions), free(g_replay.query_start);
  free(g_replay.seq_lens), free(g_replay.logits_indices), free(g_replay.tables);
  free(g_replay.window_tables), free(g_replay.slots), free(g_replay.window_slots);
  memset(&g_replay, 0, sizeof g_replay);
  g_replay.rank = &r->ranks[0];
  Backend *be = r->ranks[0].backend;
  be->upload_graph_batch = replay_upload;
  be->graph_begin = replay_begin;
  be->graph_end = replay_end;
  be->graph_launch = replay_launch;
  be->graph_free = replay_free;
}

#endif
