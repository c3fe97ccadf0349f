// runner.c: the ranks of a tensor x pipeline parallel model (runner.h): loading each rank's
// shard, the rank threads, and one forward call carried through the stages micro-batch by
// micro-batch. Rank 0 (stage 0, tensor rank 0) runs on the caller's thread; the others wait at
// the start barrier for the next call. Decode steps as graphs are runner_graphs.c's.
#include "dist/runner.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/cpu_cores.h"
#include "dist/runner_internal.h"

// ---------------------------------------------------------------------------------------------
// one rank's part of a call

float *runner_device_logits(Rank *rank, int rows) {
  const size_t row_bytes = (size_t)rank->runner->config.vocab_size * sizeof(float);
  if ((size_t)rows > rank->logits_rows) {
    if (rank->logits) rank->backend->free(rank->backend, rank->logits);
    rank->logits_rows = (size_t)rows;
    rank->logits = rank->backend->alloc(rank->backend, rank->logits_rows * row_bytes);
    if (!rank->logits) die("runner: out of memory for %zu rows of logits", rank->logits_rows);
  }
  return rank->logits;
}

// The call's logprobs from row first (NULL when it takes none).
static PickLogprobs *call_logprobs(Runner *r, int first) {
  return r->logprobs ? r->logprobs + first : NULL;
}

// Rows [first, first + num_rows) of the call's logits, in backend memory at device: the rows a
// device sample op can take are sampled there, the others are copied to the host rows (all of
// them in one copy when none is the device's, as with GPTOSS_HOST_SAMPLING=1).
void runner_logits_to_host(Runner *r, Backend *be, const float *device, int num_rows, int first) {
  const size_t vocab = (size_t)r->config.vocab_size;
  float *host = r->logits + (size_t)first * vocab;
  bool any_on_device = false;
  for (int row = 0; r->sample && row < num_rows && !any_on_device; row++)
    any_on_device = r->sample[first + row].temperature >= 0;
  if (!any_on_device || !be->sample) {
    be->to_host(be, host, device, (size_t)num_rows * vocab * sizeof(float));
    return;
  }
  int32_t *ids = r->sampled + first;
  be->sample(be, device, num_rows, (int)vocab, r->sample + first, ids, call_logprobs(r, first));
  for (int row = 0; row < num_rows; row++)
    if (ids[row] < 0)
      be->to_host(be, host + (size_t)row * vocab, device + (size_t)row * vocab,
                  vocab * sizeof(float));
}

// Micro-batch by micro-batch: receive the hidden states from the previous stage (or embed),
// run the stage's layers, hand the result to the next stage (or write the logits: tensor rank
// 0 of the last stage writes the host rows of the micro-batch).
static void run_rank(Rank *rank) {
  Runner *r = rank->runner;
  const Shard *s = &rank->shard;
  const size_t hidden_bytes = (size_t)r->config.hidden_size * sizeof(float);
  const size_t vocab = (size_t)r->config.vocab_size;
  const bool last = shard_is_last_stage(s);
  for (int part = 0; part < r->micro.num_parts; part++) {
    const Batch *b = &r->micro.parts[part];
    const size_t bytes = (size_t)b->num_tokens * hidden_bytes;
    if (!shard_is_first_stage(s)) rank->pp->recv(rank->pp, rank->model.x, bytes, s->pp_rank - 1);
    float *host =
        last && s->tp_rank == 0 ? r->logits + (size_t)r->micro.first_logit[part] * vocab : NULL;
    float *out =
        host && !rank->backend->host_memory ? runner_device_logits(rank, b->num_logits) : host;
    model_forward(&rank->model, b, &rank->kv, out);
    const int first = r->micro.first_logit[part];
    if (out != host)
      runner_logits_to_host(r, rank->backend, out, b->num_logits, first);
    else if (host && r->sample && rank->backend->sample)  // host memory: sampled where they lie
      rank->backend->sample(rank->backend, host, b->num_logits, (int)vocab, r->sample + first,
                            r->sampled + first, call_logprobs(r, first));
    if (!last) rank->pp->send(rank->pp, rank->model.x, bytes, s->pp_rank + 1);
  }
}

static void *rank_thread(void *arg) {
  Rank *rank = arg;
  Runner *r = rank->runner;
  for (;;) {
    pthread_barrier_wait(&r->start);
    if (r->quit) return NULL;
    r->job(rank);
    pthread_barrier_wait(&r->done);
  }
}

void runner_on_ranks(Runner *r, void (*job)(Rank *rank)) {
  r->job = job;
  if (r->num_ranks > 1) pthread_barrier_wait(&r->start);
  job(&r->ranks[0]);
  if (r->num_ranks > 1) pthread_barrier_wait(&r->done);
}

void runner_set_route_probe(Runner *r, const RouteProbe *probe) {
  CHECK(r->num_ranks == 1 && r->ranks[0].backend->host_memory);
  r->ranks[0].model.route_probe = probe;
}

void runner_call_begin(Runner *r, int num_logits, float *logits, const SampleRow *sample,
                       int32_t *sampled, PickLogprobs *logprobs) {
  r->logits = logits;
  r->sample = sample;
  r->sampled = sampled;
  r->logprobs = logprobs;
  for (int row = 0; sample && row < num_logits; row++) sampled[row] = -1;
}

// runner_forward over at most max_parts micro-batches.
static void forward_parts(Runner *r, const Batch *batch, int max_parts, float *logits,
                          const SampleRow *sample, int32_t *sampled, PickLogprobs *logprobs) {
  microbatches_split(&r->micro, batch, max_parts);
  runner_call_begin(r, batch->num_logits, logits, sample, sampled, logprobs);
  runner_on_ranks(r, run_rank);
}

void runner_forward(Runner *r, const Batch *batch, float *logits, const SampleRow *sample,
                    int32_t *sampled, PickLogprobs *logprobs) {
  r->num_steps++;
  if (runner_forward_graph(r, batch, logits, sample, sampled, logprobs))
    r->num_graph_steps++;
  else
    forward_parts(r, batch, r->pp, logits, sample, sampled, logprobs);
}

void runner_lockstep(Runner *r, bool on) {
  for (int g = 0; g < r->pp + r->tp; g++) nccl_group_lockstep(r->groups[g].nccl, on);
}

void runner_forward_whole(Runner *r, const Batch *batch, float *logits, const SampleRow *sample,
                          int32_t *sampled, PickLogprobs *logprobs) {
  runner_lockstep(r, true);
  forward_parts(r, batch, 1, logits, sample, sampled, logprobs);
  runner_lockstep(r, false);
}

// ---------------------------------------------------------------------------------------------
// setup

// One CPU per thread, rank after rank, when the process may use enough CPUs that are its own:
// its affinity set holds every thread and no cgroup quota caps it lower (under a quota the
// kernel's placement is better than ours). NULL otherwise, and with GPTOSS_CPU_PIN=0.
static int *pinned_cpus(int num_threads) {
  const char *pin = getenv("GPTOSS_CPU_PIN");
  if (pin && strcmp(pin, "0") == 0) return NULL;
  int *cpus = xcalloc(CPU_SETSIZE, sizeof *cpus);
  const int allowed = cpu_cores_allowed(cpus, CPU_SETSIZE);
  const double quota = cpu_cores_quota();
  if (allowed < num_threads || (quota > 0 && quota < allowed)) {
    free(cpus);
    return NULL;
  }
  return cpus;
}

// The caller's thread (rank 0) stays where the kernel puts it: it is the engine's.
static void pin_thread(pthread_t thread, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(thread, sizeof set, &set) != 0)
    fprintf(stderr, "gptoss-engine: warning: a rank thread could not be pinned to CPU %d\n", cpu);
}

// The rank's backend, then its shard of the weights, in the backend's memory.
static bool rank_load(Runner *r, Rank *rank, int index, char *err, size_t err_size) {
  const int *cpus = r->cpus ? r->cpus + (size_t)index * r->threads_per_rank : NULL;
  rank->backend =
      backend_create(r->options.device, index, r->threads_per_rank, cpus, err, err_size);
  if (!rank->backend) return false;
  WeightsOptions wo = r->options.weights;
  wo.shard = &rank->shard;
  if (!rank->backend->upload_weights)
    return weights_load(r->options.model, &wo, &rank->weights, err, err_size);
  if (rank->backend->load_dummy_weights && wo.expert_format == WEIGHT_MXFP4 &&
      weights_are_dummy(r->options.model, wo.load_format))  // generated where they are kept
    return rank->backend->load_dummy_weights(rank->backend, &r->config, &wo, &rank->weights, err,
                                             err_size);
  GptOssWeights host;
  if (!weights_load(r->options.model, &wo, &host, err, err_size)) return false;
  const bool ok =
      rank->backend->upload_weights(rank->backend, &host, &rank->weights, err, err_size);
  weights_free(&host);
  return ok;
}

// The rank's weights, whichever memory they are in.
static void rank_free_weights(Rank *rank) {
  if (rank->backend && rank->backend->free_weights)
    rank->backend->free_weights(rank->backend, &rank->weights);
  else
    weights_free(&rank->weights);
}

// Group g's ranks are runner ranks first, first + stride, ... (size of them); a GPU rank i runs
// on device i.
static bool group_create(Runner *r, Group *g, int size, int first, int stride, char *err,
                         size_t err_size) {
  if (r->options.device != DEVICE_CUDA) {
    g->threads = thread_group_create(size);
    return true;
  }
  int devices[64];
  CHECK(size <= 64);
  for (int k = 0; k < size; k++) devices[k] = first + k * stride;
  g->nccl = nccl_group_create(size, devices, err, err_size);
  return g->nccl != NULL;
}

// Runner rank's handle of group g, where it is rank `rank` (NCCL's calls go on be's queue).
static Comm *group_join(Group *g, int rank, Backend *be) {
  if (g->threads) return comm_threads_join(g->threads, rank);
  CHECK(be->device_queue != NULL);  // a backend of a GPU
  return comm_nccl_join(g->nccl, rank, be->device_queue(be));
}

// Each stage's tensor group (ranks s * tp + t) and each tensor rank's pipeline (ranks
// p * tp + t), where they have more than one rank.
static bool groups_create(Runner *r, char *err, size_t err_size) {
  for (int s = 0; s < r->pp && r->tp > 1; s++)
    if (!group_create(r, &r->groups[s], r->tp, s * r->tp, 1, err, err_size)) return false;
  for (int t = 0; t < r->tp && r->pp > 1; t++)
    if (!group_create(r, &r->groups[r->pp + t], r->pp, t, r->tp, err, err_size)) return false;
  return true;
}

bool runner_create(Runner **out, const RunnerOptions *o, char *err, size_t err_size) {
  *out = NULL;
  if (o->tensor_parallel < 1 || o->pipeline_parallel < 1 ||
      o->pipeline_parallel > MICROBATCH_MAX_PARTS) {
    snprintf(err, err_size, "-tp %d -pp %d: need tp >= 1 and 1 <= pp <= %d", o->tensor_parallel,
             o->pipeline_parallel, MICROBATCH_MAX_PARTS);
    return false;
  }
  if (o->kv_dtype == KV_BF16 && o->device != DEVICE_CUDA) {
    snprintf(err, err_size,
             "--kv-cache-dtype bfloat16 needs the CUDA backend; the CPU keeps its KV cache in "
             "float32 (use float32 or auto)");
    return false;
  }
  GptOssConfig config;
  if (!weights_load_config(o->model, o->weights.load_format, &config, err, err_size) ||
      !shard_check(&config, o->tensor_parallel, o->pipeline_parallel, err, err_size) ||
      !backend_fits_ranks(o->device, o->tensor_parallel * o->pipeline_parallel, err, err_size))
    return false;
  Runner *r = xcalloc(1, sizeof *r);
  r->options = *o;
  r->config = config;
  r->tp = o->tensor_parallel;
  r->pp = o->pipeline_parallel;
  r->num_ranks = r->tp * r->pp;
  const int cores = o->num_threads > 0 ? o->num_threads : cpu_cores_usable();
  r->threads_per_rank = cores / r->num_ranks > 0 ? cores / r->num_ranks : 1;
  if (o->device != DEVICE_CUDA) r->cpus = pinned_cpus(r->num_ranks * r->threads_per_rank);
  r->ranks = xcalloc((size_t)r->num_ranks, sizeof *r->ranks);
  r->groups = xcalloc((size_t)(r->pp + r->tp), sizeof *r->groups);
  microbatches_init(&r->micro);
  bool ok = groups_create(r, err, err_size);
  for (int i = 0; ok && i < r->num_ranks; i++) {
    Rank *rank = &r->ranks[i];
    const int pp_rank = i / r->tp, tp_rank = i % r->tp;
    rank->runner = r;
    rank->shard = shard_of(&r->config, r->tp, r->pp, tp_rank, pp_rank);
    ok = rank_load(r, rank, i, err, err_size);
    if (ok && r->tp > 1) rank->tp = group_join(&r->groups[pp_rank], tp_rank, rank->backend);
    if (ok && r->pp > 1) rank->pp = group_join(&r->groups[r->pp + tp_rank], pp_rank, rank->backend);
    ok = ok && model_init(&rank->model, &rank->weights, rank->backend, rank->tp, o->max_num_tokens,
                          o->max_num_logits, err, err_size);
  }
  if (!ok) {
    runner_free(r);
    return false;
  }
  pthread_barrier_init(&r->start, NULL, (unsigned)r->num_ranks);
  pthread_barrier_init(&r->done, NULL, (unsigned)r->num_ranks);
  for (int i = 1; i < r->num_ranks; i++) {
    CHECK(pthread_create(&r->ranks[i].thread, NULL, rank_thread, &r->ranks[i]) == 0);
    if (r->cpus) pin_thread(r->ranks[i].thread, r->cpus[(size_t)i * r->threads_per_rank]);
  }
  r->threads_started = true;
  *out = r;
  return true;
}

void runner_free(Runner *r) {
  if (!r) return;
  if (r->threads_started) {
    r->quit = true;
    pthread_barrier_wait(&r->start);
    for (int i = 1; i < r->num_ranks; i++) pthread_join(r->ranks[i].thread, NULL);
    pthread_barrier_destroy(&r->start);
    pthread_barrier_destroy(&r->done);
  }
  runner_kv_free(r);  // drops the graphs too
  runner_graphs_free(r);
  for (int i = 0; i < r->num_ranks; i++) {
    Rank *rank = &r->ranks[i];
    model_free(&rank->model);
    rank_free_weights(rank);
    if (rank->backend) {
      if (rank->logits) rank->backend->free(rank->backend, rank->logits);
      rank->backend->destroy(rank->backend);
    }
    if (rank->tp) rank->tp->destroy(rank->tp);
    if (rank->pp) rank->pp->destroy(rank->pp);
  }
  for (int g = 0; g < r->pp + r->tp; g++) {
    thread_group_free(r->groups[g].threads);
    nccl_group_free(r->groups[g].nccl);
  }
  microbatches_free(&r->micro);
  free(r->groups);
  free(r->ranks);
  free(r->cpus);
  free(r);
}

// ---------------------------------------------------------------------------------------------
// queries and the KV cache

const GptOssConfig *runner_config(const Runner *r) { return &r->config; }
int runner_max_num_tokens(const Runner *r) { return r->options.max_num_tokens; }
int runner_num_ranks(const Runner *r) { return r->num_ranks; }
bool runner_pinned(const Runner *r) { return r->cpus != NULL; }

int runner_threads_per_rank(const Runner *r) { return r->threads_per_rank; }

size_t runner_kv_bytes_per_token(const Runner *r, bool hybrid) {
  size_t sum = 0, largest = 0;
  for (int i = 0; i < r->num_ranks; i++) {
    size_t bytes =
        kv_cache_bytes_per_token(&r->config, &r->ranks[i].shard, r->options.kv_dtype, hybrid);
    sum += bytes;
    if (bytes > largest) largest = bytes;
  }
  return r->ranks[0].backend->host_memory ? sum : largest;
}

size_t runner_free_bytes(const Runner *r) {
  if (r->ranks[0].backend->host_memory) return backend_free_bytes(r->ranks[0].backend);
  size_t least = SIZE_MAX;
  for (int i = 0; i < r->num_ranks; i++) {
    size_t bytes = backend_free_bytes(r->ranks[i].backend);
    if (bytes < least) least = bytes;
  }
  return least;
}

bool runner_kv_init(Runner *r, int num_blocks, int block_size, bool hybrid, char *err,
                    size_t err_size) {
  runner_kv_free(r);
  for (int i = 0; i < r->num_ranks; i++) {
    Rank *rank = &r->ranks[i];
    if (!kv_cache_init(&rank->kv, rank->backend, &r->config, &rank->shard, r->options.kv_dtype,
                       num_blocks, block_size, hybrid, err, err_size)) {
      runner_kv_free(r);
      return false;
    }
  }
  return true;
}

void runner_kv_free(Runner *r) {
  if (r->ranks[0].backend) runner_drop_graphs(r);  // they keep the cache's addresses
  for (int i = 0; i < r->num_ranks; i++)
    if (r->ranks[i].kv.backend) kv_cache_free(&r->ranks[i].kv);
}
