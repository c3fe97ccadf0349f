// bench_scheduler.c: the scheduler's host time per engine step in steady-state decode: N
// running requests (1024-token prompts, ignore_eos, far from max_tokens), every step one decode
// token each. A step is sched_schedule + batch_build + sched_update + sched_take_events, with
// made-up sampled ids instead of a model (in async mode also batch_patch_tokens, with step N+1
// scheduled before step N's update), over a hybrid block pool (window 128, GPT-OSS's: each
// step also releases the window blocks a request leaves). Prints one "name value" line per figure:
// <mode>.n<N>.us_per_step_{median,best} over REPS windows of WINDOW steps, and the median split
// into .schedule_us, .build_us and .update_us. Target: under 200 us at N = 1024.
//
//   bench_scheduler [REPS]     (REPS default 5, after one untimed warm-up window)
#include <stdio.h>
#include <stdlib.h>

#include "common/check.h"
#include "common/clock.h"
#include "core/batch_builder.h"
#include "core/scheduler.h"

#define PROMPT_LEN 1024
#define WINDOW 200

typedef struct {
  int64_t schedule_ns, build_ns, update_ns;
} StepTimes;

typedef struct {
  EngineConfig config;
  BlockManager blocks;
  Scheduler s;
  SchedOutput outs[2];
  BatchBuilder builders[2];
  uint32_t *sampled[2];  // [max_num_seqs]
  int next;              // async: the output the next step uses
  int last;              // the output of the step just scheduled
  bool in_flight;        // async: outs[1 - next] awaits its update
} Bench;

// Requests of max_tokens outputs each: more than the steps run, so none finishes.
static void bench_init(Bench *b, int num_requests, int max_tokens, bool async) {
  b->config = (EngineConfig){
      .max_num_batched_tokens = 8192,
      .max_num_seqs = num_requests,
      .max_model_len = PROMPT_LEN + max_tokens,
      .block_size = 16,
      // hybrid (GPT-OSS's default): room for every request's blocks in both groups
      .num_kv_blocks = 1 + 2 * num_requests * blocks_for_tokens(PROMPT_LEN + max_tokens, 16),
      .async_scheduling = async,
  };
  blocks_init_hybrid(&b->blocks, b->config.num_kv_blocks, b->config.block_size,
                     b->config.enable_prefix_caching, 128, b->config.max_num_batched_tokens);
  sched_init(&b->s, &b->config, &b->blocks);
  for (int i = 0; i < 2; i++) {
    sched_output_init(&b->outs[i], &b->s);
    batch_builder_init(&b->builders[i], &b->config, true);
    b->sampled[i] = xcalloc((size_t)num_requests, sizeof *b->sampled[i]);
  }
  uint32_t *prompt = xmalloc(PROMPT_LEN * sizeof *prompt);
  for (int i = 0; i < PROMPT_LEN; i++) prompt[i] = 1000 + (uint32_t)i;
  char err[256];
  for (int id = 1; id <= num_requests; id++) {
    EngineRequestParams p = {.prompt_ids = prompt,
                             .num_prompt_ids = PROMPT_LEN,
                             .max_tokens = max_tokens,
                             .seed = (uint64_t)id,
                             .ignore_eos = true};
    if (!sched_check_request(&b->s, &p, err, sizeof err)) die("bench_scheduler: %s", err);
    sched_add(&b->s, req_create((uint64_t)id, &p, b->config.block_size, true));
  }
  free(prompt);
  b->next = 0;
  b->in_flight = false;
}

static void bench_free(Bench *b) {
  sched_free(&b->s);
  for (int i = 0; i < 2; i++) {
    sched_output_free(&b->outs[i]);
    batch_builder_free(&b->builders[i]);
    free(b->sampled[i]);
  }
  blocks_free(&b->blocks);
}

// One step; adds its phases' times to t.
static void bench_step(Bench *b, StepTimes *t) {
  int cur = b->next, prev = 1 - cur;
  int64_t t0 = clock_now_ns();
  sched_schedule(&b->s, &b->outs[cur]);
  int64_t t1 = clock_now_ns();
  batch_build(&b->builders[cur], &b->outs[cur]);
  if (b->in_flight) batch_patch_tokens(&b->builders[cur], b->sampled[prev]);
  int64_t t2 = clock_now_ns();
  for (int k = 0; k < b->outs[cur].num_samples; k++)  // the "model": any ids but stop ids
    b->sampled[cur][k] = 1000 + (uint32_t)((b->outs[cur].step + (uint64_t)k) % 50000);
  int64_t t3 = clock_now_ns();
  if (!b->config.async_scheduling) {
    sched_update(&b->s, &b->outs[cur], b->sampled[cur]);
  } else {
    if (b->in_flight) sched_update(&b->s, &b->outs[prev], b->sampled[prev]);
    b->in_flight = true;
    b->next = prev;
  }
  int num_events;
  sched_take_events(&b->s, &num_events);
  int64_t t4 = clock_now_ns();
  b->last = cur;
  t->schedule_ns += t1 - t0;
  t->build_ns += t2 - t1;
  t->update_ns += t4 - t3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void bench_run(int num_requests, bool async, int reps) {
  Bench b = {0};
  bench_init(&b, num_requests, (reps + 2) * WINDOW, async);
  StepTimes t = {0};
  // Prefill everyone (PROMPT_LEN * N / 8192 steps), then one untimed window of decodes.
  int num_prefill_steps = 0;
  do {
    bench_step(&b, &t);
    if (++num_prefill_steps > 100000) die("bench_scheduler: the prefill does not finish");
  } while (b.outs[b.last].num_tokens != num_requests ||
           b.outs[b.last].num_samples != num_requests);  // until a step is all decodes
  for (int i = 0; i < WINDOW; i++) bench_step(&b, &t);
  double *total = xmalloc((size_t)reps * sizeof *total);
  double *sched = xmalloc((size_t)reps * sizeof *sched);
  double *build = xmalloc((size_t)reps * sizeof *build);
  double *update = xmalloc((size_t)reps * sizeof *update);
  for (int r = 0; r < reps; r++) {
    t = (StepTimes){0};
    int64_t start = clock_now_ns();
    for (int i = 0; i < WINDOW; i++) {
      bench_step(&b, &t);
      CHECK(b.outs[b.last].num_tokens == num_requests);
    }
    total[r] = (double)(clock_now_ns() - start) / 1e3 / WINDOW;
    sched[r] = (double)t.schedule_ns / 1e3 / WINDOW;
    build[r] = (double)t.build_ns / 1e3 / WINDOW;
    update[r] = (double)t.update_ns / 1e3 / WINDOW;
  }
  CHECK(b.s.num_running == num_requests && b.s.num_preemptions == 0);
  qsort(total, (size_t)reps, sizeof *total, cmp_double);
  qsort(sched, (size_t)reps, sizeof *sched, cmp_double);
  qsort(build, (size_t)reps, sizeof *build, cmp_double);
  qsort(update, (size_t)reps, sizeof *update, cmp_double);
  const char *mode = async ? "async" : "sync";
  printf("%s.n%d.us_per_step_median %.1f\n", mode, num_requests, total[reps / 2]);
  printf("%s.n%d.us_per_step_best %.1f\n", mode, num_requests, total[0]);
  printf("%s.n%d.schedule_us %.1f\n", mode, num_requests, sched[reps / 2]);
  printf("%s.n%d.build_us %.1f\n", mode, num_requests, build[reps / 2]);
  printf("%s.n%d.update_us %.1f\n", mode, num_requests, update[reps / 2]);
  free(total), free(sched), free(build), free(update);
  bench_free(&b);
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 5;
  if (reps < 1) die("usage: bench_scheduler [REPS]  (REPS >= 1)");
  const int sizes[] = {256, 1024};
  for (int async = 0; async <= 1; async++)
    for (int i = 0; i < 2; i++) bench_run(sizes[i], async, reps);
  return 0;
}
