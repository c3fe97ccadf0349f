// runner_internal.h: what the runner's files share (runner.c: ranks, threads and the forward
// call; runner_graphs.c: decode steps as recorded graphs): the runner's and each rank's state,
// and the pieces of a call both use. Not for use outside engine/dist/runner*.c.
#ifndef GE_DIST_RUNNER_INTERNAL_H
#define GE_DIST_RUNNER_INTERNAL_H

#include <pthread.h>

#include "dist/comm_nccl.h"
#include "dist/comm_threads.h"
#include "dist/decode_batch.h"
#include "dist/microbatch.h"
#include "dist/runner.h"
#include "model/forward.h"
#include "model/kv_cache.h"

// A communicator group: shared memory among CPU ranks, NCCL among GPUs.
typedef struct {
  ThreadGroup *threads;
  NcclGroup *nccl;
} Group;

typedef struct {
  Runner *runner;
  Shard shard;
  GptOssWeights weights;  // in the backend's memory (uploaded when it is not the host's)
  Backend *backend;
  Comm *tp;  // NULL when tp = 1
  Comm *pp;  // NULL when pp = 1; rank pp_rank of the pipeline of this tensor rank
  Model model;
  KvCache kv;
  float *logits;  // backend memory, for a backend whose memory the host cannot read
  size_t logits_rows;
  // runner_graphs.c: this rank's recordings [runner's num_graphs]; while one is recorded, the
  // batch it is recorded over (upload_graph_batch's, uploaded before the recording began) and
  // whether the rank's last graph_begin or graph_end succeeded, with why not
  void **graphs;
  const Batch *graph_uploaded;
  bool graph_ok;
  char graph_err[256];
  pthread_t thread;
} Rank;

struct Runner {
  RunnerOptions options;
  GptOssConfig config;
  int tp, pp, num_ranks, threads_per_rank;
  Rank *ranks;    // [num_ranks] stage-major: rank pp_rank * tp + tp_rank
  Group *groups;  // [pp + tp]: each stage's tensor group, then each pipeline
  pthread_barrier_t start, done;
  bool threads_started;
  void (*job)(Rank *rank);  // what every rank runs between start and done (runner_on_ranks)
  int *cpus;  // [num_ranks * threads_per_rank] the CPU of each rank's threads; NULL: unpinned
  // the current call
  MicroBatches micro;
  float *logits;            // host [num_logits, vocab]
  const SampleRow *sample;  // NULL, or [num_logits]: the rows a device may sample
  int32_t *sampled;         // [num_logits] with sample: the device's ids, -1 for host rows
  PickLogprobs *logprobs;   // [num_logits] with sample: a sampled row's logprobs when it asks
  bool quit;
  // Decode steps as graphs (-pp 1): runner_prepare_graphs chooses graph_sizes[num_sizes]
  // (ascending) and pads into decode; runner_capture_graphs records each rank's graphs[i], a
  // decode batch of graph_sizes[i] sequences with its logits in rank 0's graph_logits
  // (num_graphs: 0 or num_sizes). The ranks' jobs read graph_batch, graph_index and graph_rows
  // (the padded batch, which graph, the call's logits rows); graph_record says whether the end
  // of a recording keeps it.
  DecodeBatch decode;
  int *graph_sizes, num_sizes;
  int num_graphs;
  const float *graph_logits;
  const Batch *graph_batch;
  int graph_index, graph_rows;
  bool graph_record;
  long long num_steps, num_graph_steps;  // runner_forward calls, and those run by a graph
};

// Rank's backend buffer for at least rows rows of logits, for a backend whose memory the host
// cannot read (grows; dies when out of memory).
float *runner_device_logits(Rank *rank, int rows);

// Runs job on every rank at once (rank 0 on the caller's thread) and returns when all have.
void runner_on_ranks(Runner *r, void (*job)(Rank *rank));

// Every NCCL group of the runner in lockstep or not (comm_nccl.h, nccl_group_lockstep), between
// jobs.
void runner_lockstep(Runner *r, bool on);

// A call's outputs, for the ranks (no row sampled yet).
void runner_call_begin(Runner *r, int num_logits, float *logits, const SampleRow *sample,
                       int32_t *sampled, PickLogprobs *logprobs);

// Rows [first, first + num_rows) of the call's logits, in backend memory at device: the rows a
// device sample op can take are sampled there, the others copied to the call's host rows.
void runner_logits_to_host(Runner *r, Backend *be, const float *device, int num_rows, int first);

// runner_graphs.c: runner_forward by a recorded decode step when one fits the batch (false: run
// it op by op), and freeing what runner_prepare_graphs made.
bool runner_forward_graph(Runner *r, const Batch *batch, float *logits, const SampleRow *sample,
                          int32_t *sampled, PickLogprobs *logprobs);
void runner_graphs_free(Runner *r);

#endif
