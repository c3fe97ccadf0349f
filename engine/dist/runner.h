// runner.h: the model as the engine runs it, over tp x pp ranks (tensor x pipeline parallel):
// each rank a thread with its own backend, its shard of the weights (model/shard.h), its KV cache
// and its activations; collectives through a Comm per tensor-parallel group and per pipeline
// (dist/comm.h). With tp = pp = 1 it is the plain single-rank model, run on the caller's thread.
//
// The pipeline schedule: a step's batch is cut at sequence boundaries into pp micro-batches of
// near-equal token counts (microbatch.h); stage s runs micro-batch m as soon as stage s - 1 has
// handed it over, so while stage 1 runs micro-batch 0, stage 0 runs micro-batch 1 (GPipe's
// forward pass: with m micro-batches over s stages each stage idles (s - 1) / (m + s - 1) of a
// step). Steps do not overlap in the pipeline: the next step's decode tokens depend on this
// step's samples. Async scheduling still applies: the engine plans step N + 1 on its own thread
// while the runner executes step N.
#ifndef GE_DIST_RUNNER_H
#define GE_DIST_RUNNER_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backends.h"
#include "model/batch.h"
#include "model/forward.h"
#include "model/weights.h"

typedef struct {
  const char *model;       // weights_load's model (folder or preset)
  WeightsOptions weights;  // formats, load format, seed (the shard is the runner's)
  int tensor_parallel;     // ranks per stage (>= 1)
  int pipeline_parallel;   // stages (>= 1)
  int num_threads;         // CPU threads over all ranks (<= 0: one per CPU this process may
                           // use, common/cpu_cores.h), shared evenly
  DeviceKind device;       // each rank's backend (CUDA: rank r on device r)
  int max_num_tokens;      // the largest Batch.num_tokens a forward call gets
  int max_num_logits;      // the largest Batch.num_logits (0: max_num_tokens; serve: the most
                           // sequences a step runs, one row each)
  KvDtype kv_dtype;        // the KV cache's elements (KV_BF16: CUDA only)
} RunnerOptions;

typedef struct Runner Runner;

// Loads every rank's shard (into its device's memory when the backend's is not the host's) and
// starts the rank threads. False with a message (a tp or pp that does not divide the model, a
// weights error, out of memory, NCCL missing for more than one CUDA rank).
bool runner_create(Runner **out, const RunnerOptions *o, char *err, size_t err_size);
void runner_free(Runner *r);

const GptOssConfig *runner_config(const Runner *r);
int runner_max_num_tokens(const Runner *r);
int runner_num_ranks(const Runner *r);
int runner_threads_per_rank(const Runner *r);
// Whether each thread has its own CPU (runner_create pins them when the process's affinity set
// holds them all and no cgroup quota caps it; GPTOSS_CPU_PIN=0 turns that off).
bool runner_pinned(const Runner *r);
// Bytes of KV cache one token takes, in a block of a hybrid cache (model/kv_cache.h) or not, in
// the memory a KV budget covers: in host memory, which the ranks share, the sum over the ranks
// (a KV head copied on several ranks counts on each); in device memory, where each rank has a
// device of its own, the largest rank's.
size_t runner_kv_bytes_per_token(const Runner *r, bool hybrid);

// Bytes free now for a KV budget: the host's RAM on host-memory backends, else the least free
// on the ranks' devices.
size_t runner_free_bytes(const Runner *r);

// (Re)allocates every rank's KV cache: num_blocks blocks of block_size tokens (the block ids
// of a Batch index these), hybrid or not. False with a message when out of memory.
bool runner_kv_init(Runner *r, int num_blocks, int block_size, bool hybrid, char *err,
                    size_t err_size);
void runner_kv_free(Runner *r);

// Router diagnostics (model/forward.h) for the following forward calls, NULL to stop: only on a
// single rank whose backend's memory is the host's (the caller checks; anything else aborts).
void runner_set_route_probe(Runner *r, const RouteProbe *probe);

// Runs the batch through every rank; the logits of batch->logits_indices go into logits
// [num_logits, vocab] (host memory). With sample (NULL: none) [num_logits], a last stage whose
// backend samples (backend.h, sample; on tensor rank 0, where the ranks' vocabulary columns are
// gathered in its memory) samples the rows whose temperature is >= 0 where the logits are, writes
// their ids into sampled [num_logits] (and the logprobs of those that ask into logprobs
// [num_logits]) and copies only the other rows' logits from a device; every row it did not
// sample gets sampled[row] = -1 and its logits (a sampled row's logits are in logits too when
// the backend's memory is the host's).
void runner_forward(Runner *r, const Batch *batch, float *logits, const SampleRow *sample,
                    int32_t *sampled, PickLogprobs *logprobs);

// CUDA graphs of decode steps (vLLM's cudagraph capture), on one pipeline stage (-pp 1) whose
// ranks' backends have graphs (backend.h), in two calls:
// runner_prepare_graphs chooses the decode batch sizes (decode_graph_sizes up to max_size and
// the tokens a call takes; where they pass the most sequences a step runs, that number is the
// last size) and reserves what every recording will use: each rank's graph batch layout (for
// the largest size and tables max_blocks wide, window arrays exactly when hybrid) and the
// logits rows. Call it before the KV cache's share of the free memory is measured, once.
// runner_capture_graphs, after runner_kv_init, records the forward pass of a decode batch of
// each size on every rank at once (a tensor-parallel rank's graph holds its collectives),
// padded by dist/decode_batch.h; runner_forward then runs a decode step that fits by one launch
// on each rank of the smallest recording that holds it. The recordings keep the cache's and the
// activations' addresses: runner_kv_init and runner_kv_free drop them (capture again after).
// Both false with the reason when there will be no graphs (pipeline stages, a backend without
// them, a recording the backend refused): every step then runs op by op, as before.
bool runner_prepare_graphs(Runner *r, int max_size, int max_blocks, bool hybrid, char *err,
                           size_t err_size);
bool runner_capture_graphs(Runner *r, char *err, size_t err_size);
int runner_num_graphs(const Runner *r);
// runner_forward calls so far, and how many of them ran by a graph.
void runner_step_counts(const Runner *r, long long *steps, long long *graph_steps);
int runner_graph_size(const Runner *r, int i);  // ascending in i
void runner_drop_graphs(Runner *r);

// runner_forward without cutting the batch into micro-batches: with pipeline stages every stage
// gets the whole batch at once, the most one step's parts can hand it (a step's first part may
// hold nearly all its tokens, or nearly all its sequences). For the warm-up (dist/warm_up.h),
// the step whose ops allocate what later steps reuse: GPUs run it in lockstep (comm_nccl.h,
// nccl_group_lockstep: an allocation must not wait for a collective that waits for it).
void runner_forward_whole(Runner *r, const Batch *batch, float *logits, const SampleRow *sample,
                          int32_t *sampled, PickLogprobs *logprobs);

#endif
