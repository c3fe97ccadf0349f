// bench_parallel.c: serving throughput of gpt-oss-tiny (dummy weights, q8 dense, MXFP4 experts)
// on the CPU under tensor and pipeline parallelism, in the study's per-GPU form: the engine
// (scheduler, batch builder, runner, sampler) in-process, NUM requests of PROMPT random tokens
// each generating GEN tokens (ignore_eos) submitted at once, for each -tp x -pp given; prints
// total tokens/s (prompt + generated over the wall time), tokens/s per rank, and each split's
// ratio to tp 1 x pp 1 measured in the same run. Every rank gets cores / ranks threads. Times the
// serving only (never loading); checks nothing (tests/engine does).
//
//   bench_parallel [--splits 1x1,2x1,1x2] [--requests 64] [--prompt 128] [--gen 32]
//                  [--threads N] [--model gpt-oss-tiny]
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/cpu_backend.h"
#include "common/check.h"
#include "common/clock.h"
#include "core/engine.h"

#define MAX_SPLITS 8

typedef struct {
  const char *model;
  int splits[MAX_SPLITS][2];  // tp, pp
  int num_splits;
  int num_requests, prompt_len, gen_len, num_threads;
} Options;

static Options parse_options(int argc, char **argv) {
  Options o = {.model = "gpt-oss-tiny", .num_requests = 64, .prompt_len = 128, .gen_len = 32};
  const char *splits = "1x1,2x1,1x2";
  static const struct option longopts[] = {{"splits", required_argument, 0, 's'},
                                           {"requests", required_argument, 0, 'n'},
                                           {"prompt", required_argument, 0, 'p'},
                                           {"gen", required_argument, 0, 'g'},
                                           {"threads", required_argument, 0, 't'},
                                           {"model", required_argument, 0, 'm'},
                                           {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
      case 's': splits = optarg; break;
      case 'n': o.num_requests = atoi(optarg); break;
      case 'p': o.prompt_len = atoi(optarg); break;
      case 'g': o.gen_len = atoi(optarg); break;
      case 't': o.num_threads = atoi(optarg); break;
      case 'm': o.model = optarg; break;
      default: die("usage: bench_parallel [--splits 1x1,2x1,1x2] [--requests N] [--prompt N] "
                   "[--gen N] [--threads N] [--model M]");
    }
  }
  for (const char *p = splits; *p && o.num_splits < MAX_SPLITS;) {
    int tp, pp, used;
    if (sscanf(p, "%dx%d%n", &tp, &pp, &used) != 2 || tp < 1 || pp < 1)
      die("bench_parallel: --splits '%s': want TPxPP,... (e.g. 1x1,2x1,1x2)", splits);
    o.splits[o.num_splits][0] = tp;
    o.splits[o.num_splits][1] = pp;
    o.num_splits++;
    p += used;
    if (*p == ',') p++;
  }
  if (o.num_threads <= 0) o.num_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
  return o;
}

// Serves every request at once; returns the wall seconds from the first submit to the last
// token.
static double serve(Runner *runner, const Options *o) {
  const int per_request = o->prompt_len + o->gen_len;
  EngineConfig cfg = {.max_num_batched_tokens = 2048,
                      .max_num_seqs = o->num_requests,
                      .max_model_len = per_request,
                      .block_size = 16,
                      .num_kv_blocks = o->num_requests * ((per_request + 15) / 16),
                      .async_scheduling = true};
  char err[512];
  Engine *e;
  if (!engine_create(&e, &cfg, runner, err, sizeof err)) die("bench_parallel: %s", err);
  engine_start(e);
  const int vocab = runner_config(runner)->vocab_size;
  uint32_t *prompt = xmalloc((size_t)o->prompt_len * sizeof *prompt);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  const int64_t start = clock_now_ns();
  for (int r = 0; r < o->num_requests; r++) {
    for (int i = 0; i < o->prompt_len; i++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      prompt[i] = (uint32_t)(s % (uint64_t)vocab);
    }
    EngineRequestParams p = {.prompt_ids = prompt,
                             .num_prompt_ids = (size_t)o->prompt_len,
                             .max_tokens = o->gen_len,
                             .sampling = {.temperature = 0, .top_p = 1},
                             .ignore_eos = true};
    if (engine_submit(e, &p, err, sizeof err) == 0) die("bench_parallel: %s", err);
  }
  for (int finished = 0; finished < o->num_requests;) {
    TokenEvent ev[256];
    size_t n = engine_poll_events(e, ev, 256, 60 * 1000000000ll);
    if (n == 0) die("bench_parallel: no token for 60 s");
    for (size_t k = 0; k < n; k++) finished += ev[k].finish != FINISH_NONE;
  }
  const double seconds = (double)(clock_now_ns() - start) / 1e9;
  engine_stop(e);
  engine_destroy(e);
  free(prompt);
  return seconds;
}

int main(int argc, char **argv) {
  check_set_program("bench_parallel");
  Options o = parse_options(argc, argv);
  printf("model %s\nthreads %d\nrequests %d\nprompt_len %d\ngen_len %d\n", o.model, o.num_threads,
         o.num_requests, o.prompt_len, o.gen_len);
  double base = 0;
  for (int i = 0; i < o.num_splits; i++) {
    const int tp = o.splits[i][0], pp = o.splits[i][1];
    RunnerOptions ro = {.model = o.model,
                        .weights = {.load_format = LOAD_DUMMY},
                        .tensor_parallel = tp,
                        .pipeline_parallel = pp,
                        .num_threads = o.num_threads,
                        .device = DEVICE_CPU,
                        .max_num_tokens = 2048};
    CHECK(weights_formats_from_name("q8", o.model, &ro.weights));
    char err[512];
    Runner *runner;
    if (!runner_create(&runner, &ro, err, sizeof err)) die("bench_parallel: %s", err);
    serve(runner, &(Options){.num_requests = 4, .prompt_len = 16, .gen_len = 4});  // warm-up
    const double seconds = serve(runner, &o);
    const double total = (double)o.num_requests * (o.prompt_len + o.gen_len) / seconds;
    const int ranks = runner_num_ranks(runner);
    if (i == 0) base = total;
    printf("tp%d_pp%d.ranks %d\n", tp, pp, ranks);
    printf("tp%d_pp%d.threads_per_rank %d\n", tp, pp, runner_threads_per_rank(runner));
    printf("tp%d_pp%d.total_tok_s %.1f\n", tp, pp, total);
    printf("tp%d_pp%d.tok_s_per_rank %.1f\n", tp, pp, total / ranks);
    printf("tp%d_pp%d.ratio_to_first %.3f\n", tp, pp, total / base);
    fflush(stdout);
    runner_free(runner);
  }
  return 0;
}
