// bench_cuda_decode.c: a whole decode step of GPT-OSS on the device, op by op and by a recorded
// CUDA graph (what `serve` does on one GPU unless --enforce-eager; dist/runner_graphs.c), so the
// graphs' gain is measured on its own, not through a served run's noise. Dummy weights made on
// the device (bf16 dense, MXFP4 experts), a hybrid bf16 KV cache laid out as serve's is; batches
// of 1 to 256 sequences, each at a 512-token context (its own 32 full blocks, and window blocks
// for the last 128 positions after null ones; the cache holds zeros, which cost what real keys
// cost). Per batch: ms per step op by op ("eager": upload_batch and the ops) and by the
// graph (upload_graph_batch and one launch), the graph's speed-up, and the step's output tokens/s
// by the graph. Prints "cuda.decode.<model>.b<B>.<figure> value" lines, then a table. Times the
// forward pass only (no sampling); checks nothing (test_cuda_ops's test_decode_graph does).
// Without a device it prints "skipped: no CUDA device" and exits 0.
//
//   bench_cuda_decode [REPS [MODEL]]     (REPS default 10; MODEL default openai/gpt-oss-20b)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_backend.h"
#include "common/check.h"
#include "common/clock.h"
#include "dist/decode_batch.h"
#include "model/forward.h"

#define CONTEXT 512  // tokens a sequence has in the cache after the step
#define BLOCK 16
#define WIDTH (CONTEXT / BLOCK)
#define MAX_SEQS 256

static const int BATCHES[] = {1, 8, 32, 64, 256};

// Blocks of the cache: the null block, each sequence's full blocks, each one's window blocks.
#define NUM_BLOCKS (1 + MAX_SEQS * 2 * WIDTH)

// A decode step of n sequences, each with its token at position CONTEXT - 1: sequence s's full
// blocks are 1 + s * WIDTH + j; its window table names the null block (0) for the blocks wholly
// before the last window positions, then blocks of its own after all the full ones.
typedef struct {
  uint32_t ids[MAX_SEQS];
  int32_t positions[MAX_SEQS], query_start[MAX_SEQS + 1], seq_lens[MAX_SEQS];
  int32_t logits_indices[MAX_SEQS], tables[MAX_SEQS * WIDTH], window_tables[MAX_SEQS * WIDTH];
  int64_t slots[MAX_SEQS], window_slots[MAX_SEQS];
  Batch batch;
} Step;

static const Batch *step_build(Step *st, int n, int window) {
  const int first_window_block = (CONTEXT - window) / BLOCK;
  for (int s = 0; s < n; s++) {
    st->ids[s] = (uint32_t)(1000 + 7 * s);
    st->positions[s] = CONTEXT - 1;
    st->query_start[s] = s;
    st->seq_lens[s] = CONTEXT;
    st->logits_indices[s] = s;
    for (int j = 0; j < WIDTH; j++) {
      st->tables[s * WIDTH + j] = 1 + s * WIDTH + j;
      st->window_tables[s * WIDTH + j] =
          j < first_window_block ? 0 : 1 + MAX_SEQS * WIDTH + s * WIDTH + j;
    }
    st->slots[s] = (int64_t)st->tables[s * WIDTH + WIDTH - 1] * BLOCK + BLOCK - 1;
    st->window_slots[s] = (int64_t)st->window_tables[s * WIDTH + WIDTH - 1] * BLOCK + BLOCK - 1;
  }
  st->query_start[n] = n;
  st->batch = (Batch){.num_seqs = n,
                      .num_tokens = n,
                      .token_ids = st->ids,
                      .positions = st->positions,
                      .slot_mapping = st->slots,
                      .query_start = st->query_start,
                      .seq_lens = st->seq_lens,
                      .block_tables = st->tables,
                      .max_blocks_per_seq = WIDTH,
                      .window_slot_mapping = st->window_slots,
                      .window_block_tables = st->window_tables,
                      .logits_indices = st->logits_indices,
                      .num_logits = n};
  return &st->batch;
}

typedef struct {
  Backend *gpu;
  Model model;
  KvCache kv;
  float *logits;
  DecodeBatch pad;
} Decode;

// Seconds per step, op by op (graph NULL) or by the graph: one untimed step, then reps queued
// back to back (each step's batch copy waits only for the one before it).
static double time_steps(Decode *d, const Batch *b, void *graph, int reps) {
  int64_t t0 = 0;
  for (int i = -1; i < reps; i++) {
    if (i == 0) cuda_synchronize(d->gpu), t0 = clock_now_ns();
    if (!graph) {
      model_forward(&d->model, b, &d->kv, d->logits);
      continue;
    }
    d->gpu->upload_graph_batch(d->gpu, decode_batch_pad(&d->pad, b, b->num_seqs), MAX_SEQS, WIDTH);
    if (!d->gpu->graph_current(d->gpu, graph)) die("bench_cuda_decode: the graph is stale");
    d->gpu->graph_launch(d->gpu, graph);
  }
  cuda_synchronize(d->gpu);
  return (double)(clock_now_ns() - t0) * 1e-9 / reps;
}

// The step of n sequences recorded (over padding, after one run of it op by op).
static void *record(Decode *d, int n) {
  char err[512];
  const Batch none = {0};
  const Batch *b =
      d->gpu->upload_graph_batch(d->gpu, decode_batch_pad(&d->pad, &none, n), MAX_SEQS, WIDTH);
  model_forward_uploaded(&d->model, b, &d->kv, d->logits);
  if (!d->gpu->graph_begin(d->gpu, err, sizeof err)) die("bench_cuda_decode: %s", err);
  model_forward_uploaded(&d->model, b, &d->kv, d->logits);
  void *graph = d->gpu->graph_end(d->gpu, err, sizeof err);
  if (!graph) die("bench_cuda_decode: %s", err);
  return graph;
}

static void report(const char *model, int n, const char *figure, double value) {
  printf("cuda.decode.%s.b%d.%s %.4g\n", strchr(model, '/') ? strchr(model, '/') + 1 : model, n,
         figure, value);
}

int main(int argc, char **argv) {
  const int reps = argc > 1 && atoi(argv[1]) > 0 ? atoi(argv[1]) : 10;
  const char *model = argc > 2 ? argv[2] : "openai/gpt-oss-20b";
  if (cuda_device_count() == 0) {
    printf("skipped: no CUDA device\n");
    return 0;
  }
  char err[512];
  GptOssConfig c;
  if (!config_preset(model, &c)) die("bench_cuda_decode: '%s' is no preset", model);
  Decode d = {0};
  d.gpu = cuda_backend_create(0, err, sizeof err);
  if (!d.gpu) die("bench_cuda_decode: %s", err);
  printf("device: %s, model %s\n", cuda_device_name(d.gpu), model);
  WeightsOptions o = {.load_format = LOAD_DUMMY, .seed = 1};
  CHECK(weights_formats_from_name("bf16", model, &o));
  o.expert_format = WEIGHT_MXFP4;
  GptOssWeights w;
  const int64_t t0 = clock_now_ns();
  if (!cuda_weights_dummy(d.gpu, &c, &o, &w, err, sizeof err)) die("bench_cuda_decode: %s", err);
  printf("dummy weights made on the device in %.1f s\n", (double)(clock_now_ns() - t0) * 1e-9);
  if (!model_init(&d.model, &w, d.gpu, NULL, MAX_SEQS, 0, err, sizeof err) ||
      !kv_cache_init(&d.kv, d.gpu, &c, NULL, KV_BF16, NUM_BLOCKS, BLOCK, true, err, sizeof err))
    die("bench_cuda_decode: %s", err);
  d.logits = d.gpu->alloc(d.gpu, (size_t)MAX_SEQS * c.vocab_size * sizeof(float));
  if (!d.logits) die("bench_cuda_decode: out of device memory for the logits");
  decode_batch_init(&d.pad, MAX_SEQS, WIDTH, true);
  const int num_batches = (int)(sizeof BATCHES / sizeof *BATCHES);
  double eager[sizeof BATCHES / sizeof *BATCHES], graph[sizeof BATCHES / sizeof *BATCHES];
  // Recorded largest first, as the runner does (every buffer at its peak before a recording).
  void *graphs[sizeof BATCHES / sizeof *BATCHES];
  for (int i = num_batches - 1; i >= 0; i--) graphs[i] = record(&d, BATCHES[i]);
  Step *st = xcalloc(1, sizeof *st);
  for (int i = 0; i < num_batches; i++) {
    const Batch *b = step_build(st, BATCHES[i], c.sliding_window);
    eager[i] = time_steps(&d, b, NULL, reps);
    graph[i] = time_steps(&d, b, graphs[i], reps);
    report(model, BATCHES[i], "eager_ms", eager[i] * 1e3);
    report(model, BATCHES[i], "graph_ms", graph[i] * 1e3);
    report(model, BATCHES[i], "graph_speedup", eager[i] / graph[i]);
    report(model, BATCHES[i], "graph_tok_s", BATCHES[i] / graph[i]);
  }
  printf("\n%-8s %12s %12s %9s %14s\n", "batch", "eager ms", "graph ms", "speed-up", "graph tok/s");
  for (int i = 0; i < num_batches; i++)
    printf("%-8d %12.3f %12.3f %8.2fx %14.0f\n", BATCHES[i], eager[i] * 1e3, graph[i] * 1e3,
           eager[i] / graph[i], BATCHES[i] / graph[i]);
  for (int i = 0; i < num_batches; i++) d.gpu->graph_free(d.gpu, graphs[i]);
  free(st);
  decode_batch_free(&d.pad);
  d.gpu->free(d.gpu, d.logits);
  kv_cache_free(&d.kv);
  model_free(&d.model);
  cuda_weights_free(d.gpu, &w);
  d.gpu->destroy(d.gpu);
  return 0;
}
