// bench_engine.c: prefill and decode throughput of the engine's forward pass (model_forward on
// the CPU backend) on gpt-oss-tiny dummy weights, the shape llama.cpp's figures in docs/PERF.md
// are for: B sequences of PROMPT tokens prefilled (whole prompts packed into forward calls of at
// most CHUNK tokens, logits of each prompt's last token, as the scheduler's chunked prefill
// does), then GEN decode steps of B tokens each, every token sampled greedily as the engine's
// runner samples it (by the backend's sample op where it has one, else on the host). Also
// measures, in the same process, the matrix-product ceiling: the linear op at the unembedding's
// shape in float32 (OpenBLAS sgemm) and in the dense format, and the dense format's kernel on a
// weight slice that stays in cache (for Q8 on AMX-INT8, also the VNNI kernel on that slice), and
// the memory-bandwidth floor of decode at batch 1: the bytes one decode token must read (the
// weights it uses: attention, router, its experts_per_token experts, the unembedding, an
// embedding row; the keys and values it attends to, at the decode's mean context) over the
// streaming read bandwidth of the threads in use: the higher of a parallel read (BENCH_STREAMS
// streams a thread) of a buffer of that many bytes, read again and again as decode reads its
// working set (on a CPU with a large L3 cache part of it stays there, for decode as for this
// read), and the linear op's read of the unembedding for one input row (the floor must not be
// one the engine's own kernel beats). The probe over BENCH_STREAM_BYTES (past any cache) is
// printed beside them. Each the median of several reads: on a shared machine the best read is
// the one that found its data in cache (on the AMX VM the unembedding's best read of 20 was 2x
// their mean).
// Prints "name value" lines; times forward calls and sampling only
// (never loading or setup) and checks nothing (tests/engine does).
//
//   bench_engine [--dense f32|bf16|q8] [--experts f32|bf16|mxfp4] [--batches 1,8,32,64]
//                [--prompt 128] [--gen 64] [--chunk 2048] [--threads N] [--runs 1]
//                [--model gpt-oss-tiny] [--kernels all|avx2|portable]
// --kernels: the backend's kernels as cpu_backend_create (all the CPU has),
// cpu_backend_create_avx2 (AVX2 alone, as on a CPU without AVX-512) or
// cpu_backend_create_portable (none of its own) choose them.
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "common/check.h"
#include "common/clock.h"
#include "common/cpu_cores.h"
#include "core/sampler.h"
#include "model/forward.h"

#define BENCH_BLOCK 16
#define BENCH_MAX_BATCHES 16
#define BENCH_MAX_RUNS 32
#define BENCH_CEILING_ROWS 64                 // input rows of the ceiling's matrix products
#define BENCH_CACHED_BYTES ((size_t)1 << 20)  // weight bytes of the in-cache ceiling slice
#define BENCH_STREAM_BYTES ((size_t)1 << 29)  // the memory probe's buffer (512 MiB)
#define BENCH_STREAM_REPS 5
#define BENCH_STREAMS 8         // streams a thread reads side by side
#define BENCH_PIECE_WORDS 8192  // 64-byte words per piece (512 KiB) of a thread's share

typedef struct {
  const char *model;
  WeightFormat dense, experts;
  int batches[BENCH_MAX_BATCHES];
  int num_batches;
  int prompt_len, gen_len, chunk, num_threads;
  int runs;  // runs per batch size: the fastest and the median are printed
  const char *kernels;
} BenchOptions;

// The arrays behind one forward call's Batch, sized for the largest call.
typedef struct {
  uint32_t *ids;            // [max_tokens]
  int32_t *positions;       // [max_tokens]
  int64_t *slots;           // [max_tokens]
  int32_t *query_start;     // [max_seqs + 1]
  int32_t *seq_lens;        // [max_seqs]
  int32_t *block_tables;    // [max_seqs, blocks_per_seq]
  int32_t *logits_indices;  // [max_seqs]
  int blocks_per_seq;
} BatchArrays;

// Multiply-adds of one forward pass, split by where they happen.
typedef struct {
  double layers;       // the linear layers and experts of every token
  double attention;    // q.k and p.v over each token's visible keys
  double unembedding;  // the logits rows
} MacCount;

static void parse_batches(const char *s, BenchOptions *o) {
  o->num_batches = 0;
  for (const char *p = s; *p;) {
    char *end;
    long b = strtol(p, &end, 10);
    if (end == p || b < 1 || b > 4096 || (*end && *end != ',') ||
        o->num_batches == BENCH_MAX_BATCHES)
      die("--batches '%s': a comma-separated list of at most %d sizes from 1 to 4096", s,
          BENCH_MAX_BATCHES);
    o->batches[o->num_batches++] = (int)b;
    p = *end ? end + 1 : end;
  }
  if (o->num_batches == 0) die("--batches is empty");
}

static int parse_int(const char *flag, const char *v, int lo, int hi) {
  char *end;
  long x = strtol(v, &end, 10);
  if (end == v || *end || x < lo || x > hi)
    die("%s '%s': an integer from %d to %d", flag, v, lo, hi);
  return (int)x;
}

static BenchOptions parse_options(int argc, char **argv) {
  BenchOptions o = {.model = "gpt-oss-tiny",
                    .dense = WEIGHT_Q8,
                    .experts = WEIGHT_MXFP4,
                    .prompt_len = 128,
                    .gen_len = 64,
                    .chunk = 2048,
                    .runs = 1,
                    .kernels = "all"};
  parse_batches("1,8,32,64", &o);
  static const struct option longopts[] = {{"dense", required_argument, 0, 'd'},
                                           {"experts", required_argument, 0, 'e'},
                                           {"batches", required_argument, 0, 'b'},
                                           {"prompt", required_argument, 0, 'p'},
                                           {"gen", required_argument, 0, 'g'},
                                           {"chunk", required_argument, 0, 'c'},
                                           {"threads", required_argument, 0, 't'},
                                           {"model", required_argument, 0, 'm'},
                                           {"runs", required_argument, 0, 'r'},
                                           {"kernels", required_argument, 0, 'k'},
                                           {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
      case 'd':
        if (!weight_format_from_name(optarg, &o.dense) || o.dense == WEIGHT_MXFP4)
          die("--dense '%s': f32, bf16 or q8", optarg);
        break;
      case 'e':
        if (!weight_format_from_name(optarg, &o.experts) || o.experts == WEIGHT_Q8)
          die("--experts '%s': f32, bf16 or mxfp4", optarg);
        break;
      case 'b': parse_batches(optarg, &o); break;
      case 'p': o.prompt_len = parse_int("--prompt", optarg, 1, 65536); break;
      case 'g': o.gen_len = parse_int("--gen", optarg, 1, 65536); break;
      case 'c': o.chunk = parse_int("--chunk", optarg, 1, 1 << 20); break;
      case 't': o.num_threads = parse_int("--threads", optarg, 0, 1024); break;
      case 'm': o.model = optarg; break;
      case 'r': o.runs = parse_int("--runs", optarg, 1, BENCH_MAX_RUNS); break;
      case 'k':
        if (strcmp(optarg, "all") != 0 && strcmp(optarg, "avx2") != 0 &&
            strcmp(optarg, "portable") != 0)
          die("--kernels '%s': all, avx2 or portable", optarg);
        o.kernels = optarg;
        break;
      default: die("usage: see the header of tests/bench/bench_engine.c");
    }
  }
  if (optind < argc) die("unexpected argument '%s'", argv[optind]);
  if (o.chunk < o.prompt_len)
    die("--chunk %d is shorter than one prompt (%d)", o.chunk, o.prompt_len);
  return o;
}

// Multiply-adds per token of the linear layers and experts (the router included).
static double layer_macs_per_token(const GptOssConfig *c) {
  const double d = c->hidden_size, inter = c->intermediate_size;
  const double per_layer = d * config_qkv_dim(c) + (double)config_q_dim(c) * d +
                           d * c->num_experts + c->experts_per_token * (d * 2 * inter + inter * d);
  return per_layer * c->num_layers;
}

// Multiply-adds of attention for a token at position pos (q.k and p.v for every query head).
static double attention_macs(const GptOssConfig *c, int pos) {
  double total = 0;
  for (int l = 0; l < c->num_layers; l++) {
    int keys = pos + 1;
    if (config_layer_is_sliding(c, l) && keys > c->sliding_window) keys = c->sliding_window;
    total += 2.0 * c->num_heads * c->head_dim * keys;
  }
  return total;
}

// Fills a's arrays for the sequences first_seq .. first_seq + num_seqs - 1, each with num tokens
// from position first (prompt tokens from tokens[s], or the one token next[s] when decoding),
// logits for each sequence's last token.   tokens: [B, prompt_len], next: [B]
static Batch make_batch(BatchArrays *a, const BenchOptions *o, const uint32_t *tokens,
                        const uint32_t *next, int first_seq, int num_seqs, int first, int num,
                        MacCount *macs, const GptOssConfig *c) {
  int t = 0;
  for (int i = 0; i < num_seqs; i++) {
    const int s = first_seq + i;
    a->query_start[i] = t;
    a->seq_lens[i] = first + num;
    for (int b = 0; b < a->blocks_per_seq; b++)
      a->block_tables[i * a->blocks_per_seq + b] = s * a->blocks_per_seq + b;
    for (int j = 0; j < num; j++, t++) {
      const int pos = first + j;
      a->ids[t] = next ? next[s] : tokens[(size_t)s * o->prompt_len + pos];
      a->positions[t] = pos;
      a->slots[t] =
          (int64_t)a->block_tables[i * a->blocks_per_seq + pos / BENCH_BLOCK] * BENCH_BLOCK +
          pos % BENCH_BLOCK;
      macs->attention += attention_macs(c, pos);
    }
    a->logits_indices[i] = t - 1;
  }
  a->query_start[num_seqs] = t;
  macs->layers += layer_macs_per_token(c) * t;
  macs->unembedding += (double)c->hidden_size * c->vocab_size * num_seqs;
  return (Batch){.num_seqs = num_seqs,
                 .num_tokens = t,
                 .token_ids = a->ids,
                 .positions = a->positions,
                 .slot_mapping = a->slots,
                 .query_start = a->query_start,
                 .seq_lens = a->seq_lens,
                 .block_tables = a->block_tables,
                 .max_blocks_per_seq = a->blocks_per_seq,
                 .logits_indices = a->logits_indices,
                 .num_logits = num_seqs};
}

// How bench_run samples: on the host (scratch, rng) or by the backend's sample op (rows: all
// greedy, ids), each sized for the largest call before the timed loops.
typedef struct {
  SamplerScratch scratch;
  SamplerRng rng;
  SampleRow *rows;  // [B] temperature 0: greedy
  int32_t *ids;     // [B]
} Sampling;

// Greedy ids of the rows of logits into next[0 .. num_seqs), as the engine's runner picks them:
// by the backend's sample op where it has one, else on the host.  logits: [num_seqs, vocab]
static void sample_rows(Backend *be, const float *logits, int num_seqs, int vocab, uint32_t *next,
                        Sampling *s) {
  const SamplingParams greedy = {.temperature = 0, .top_p = 1};
  if (!be->sample) {
    for (int i = 0; i < num_seqs; i++)
      next[i] = sampler_sample(logits + (size_t)i * vocab, vocab, &greedy, &s->rng, &s->scratch);
    return;
  }
  be->sample(be, logits, num_seqs, vocab, s->rows, s->ids, NULL);
  for (int i = 0; i < num_seqs; i++) next[i] = (uint32_t)s->ids[i];
}

static double gflops(double macs, double secs) { return 2.0 * macs / secs / 1e9; }

static int cmp_double(const void *x, const void *y) {
  const double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Sum of the piece's words, read as BENCH_STREAMS side-by-side streams (several streams a thread,
// as the matrix kernels read weight rows, keep more of the memory's prefetching busy than one):
// 64-byte vectors, so that the AVX-512 clone reads whole lines per load.
typedef uint64_t BenchWords __attribute__((vector_size(64)));
__attribute__((target_clones("avx512f", "default"))) static uint64_t read_piece(
    const BenchWords *piece) {
  const size_t len = BENCH_PIECE_WORDS / BENCH_STREAMS;
  BenchWords sum[BENCH_STREAMS] = {{0}};
  for (size_t j = 0; j < len; j++)
    for (int k = 0; k < BENCH_STREAMS; k++) sum[k] += piece[k * len + j];
  BenchWords all = sum[0];
  for (int k = 1; k < BENCH_STREAMS; k++) all += sum[k];
  return all[0];
}

// GB/s of reading `bytes` (rounded down to whole pieces) with num_threads OpenMP threads, the
// median of BENCH_STREAM_REPS reads after one that faults the pages in.
static double stream_read_gbs(size_t bytes, int num_threads) {
  const size_t n = bytes / sizeof(BenchWords) / BENCH_PIECE_WORDS * BENCH_PIECE_WORDS;
  CHECK(n > 0);
  BenchWords *buf = aligned_alloc(sizeof(BenchWords), n * sizeof *buf);
  CHECK(buf != NULL);
  memset(buf, 1, n * sizeof *buf);
  double gbs[BENCH_STREAM_REPS + 1];
  uint64_t total = 0;
  for (int rep = 0; rep <= BENCH_STREAM_REPS; rep++) {
    const int64_t t0 = clock_now_ns();
#pragma omp parallel for num_threads(num_threads) schedule(static) reduction(+ : total)
    for (size_t i = 0; i < n; i += BENCH_PIECE_WORDS) total += read_piece(buf + i);
    gbs[rep] = (double)(n * sizeof *buf) / (double)(clock_now_ns() - t0);
  }
  free(buf);
  CHECK(total != 0);  // keeps the reads
  return median(gbs + 1, BENCH_STREAM_REPS);
}

// Bytes one decode token at batch 1 reads at context `keys` (see the header).
static double decode_bytes_per_token(const GptOssWeights *w, int keys) {
  const GptOssConfig *c = &w->config;
  double bytes = (double)weight_matrix_bytes(&w->unembedding) +
                 (double)weight_matrix_bytes(&w->embedding) / (double)w->embedding.rows;
  for (int l = 0; l < c->num_layers; l++) {
    const LayerWeights *L = &w->layers[l];
    bytes += (double)(weight_matrix_bytes(&L->qkv) + weight_matrix_bytes(&L->out) +
                      weight_matrix_bytes(&L->gate));
    bytes += (double)c->experts_per_token *
             (double)(weight_matrix_bytes(&L->mlp1[0]) + weight_matrix_bytes(&L->mlp2[0]));
    int visible = keys;
    if (config_layer_is_sliding(c, l) && visible > c->sliding_window) visible = c->sliding_window;
    bytes += 2.0 * visible * c->num_kv_heads * c->head_dim * sizeof(float);  // K and V, fp32
  }
  return bytes;
}

// One run's times and multiply-adds.
typedef struct {
  double prefill_s, decode_s;
  MacCount prefill, decode;
} RunResult;

// Prefill then gen_len decode steps of B sequences, each step's tokens sampled greedily.
static RunResult bench_run(Model *m, const BenchOptions *o, int B, int gen_len, BatchArrays *a,
                           float *logits) {
  const GptOssConfig *c = &m->weights->config;
  char err[512];
  KvCache kv;
  if (!kv_cache_init(&kv, m->backend, c, NULL, KV_F32, B * a->blocks_per_seq, BENCH_BLOCK, false,
                     err, sizeof err))
    die("%s", err);
  uint32_t *tokens = xmalloc((size_t)B * o->prompt_len * sizeof *tokens);  // [B, prompt_len]
  uint32_t *next = xmalloc((size_t)B * sizeof *next);                      // [B]
  uint64_t s = 0x2545f4914f6cdd1dull + (uint64_t)B;
  for (size_t i = 0; i < (size_t)B * o->prompt_len; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    tokens[i] = (uint32_t)(s % (uint64_t)c->vocab_size);
  }
  Sampling sampling = {.rows = xcalloc((size_t)B, sizeof(SampleRow)),
                       .ids = xmalloc((size_t)B * sizeof(int32_t))};
  sampler_rng_seed(&sampling.rng, 1);

  const int seqs_per_call = o->chunk / o->prompt_len;
  RunResult r = {0};
  int64_t t0 = clock_now_ns();
  for (int first = 0; first < B; first += seqs_per_call) {
    const int n = B - first < seqs_per_call ? B - first : seqs_per_call;
    Batch b = make_batch(a, o, tokens, NULL, first, n, 0, o->prompt_len, &r.prefill, c);
    model_forward(m, &b, &kv, logits);
    sample_rows(m->backend, logits, n, c->vocab_size, next + first, &sampling);
  }
  r.prefill_s = (double)(clock_now_ns() - t0) / 1e9;
  t0 = clock_now_ns();
  for (int step = 0; step < gen_len; step++) {
    Batch b = make_batch(a, o, tokens, next, 0, B, o->prompt_len + step, 1, &r.decode, c);
    model_forward(m, &b, &kv, logits);
    sample_rows(m->backend, logits, B, c->vocab_size, next, &sampling);
  }
  r.decode_s = (double)(clock_now_ns() - t0) / 1e9;
  sampler_scratch_free(&sampling.scratch);
  free(sampling.rows), free(sampling.ids);
  free(tokens);
  free(next);
  kv_cache_free(&kv);
  return r;
}

static double total_macs(const MacCount *m) { return m->layers + m->attention + m->unembedding; }

// o->runs runs at batch B; prints b<B>.* lines: tokens/s of the fastest run and the median run
// (prefill and decode each), and the fastest run's GFLOP/s and share of the ceiling.
static void bench_batch(Model *m, const BenchOptions *o, int B, BatchArrays *a, float *logits,
                        double ceiling_gflops, double floor_s_per_token) {
  double prefill_s[BENCH_MAX_RUNS], decode_s[BENCH_MAX_RUNS];
  RunResult r = {0};
  for (int i = 0; i < o->runs; i++) {
    r = bench_run(m, o, B, o->gen_len, a, logits);
    prefill_s[i] = r.prefill_s, decode_s[i] = r.decode_s;
  }
  const double prefill_med = median(prefill_s, o->runs), decode_med = median(decode_s, o->runs);
  const double prefill_best = prefill_s[0], decode_best = decode_s[0];  // sorted by median()
  const int prefill_tokens = B * o->prompt_len, decode_tokens = B * o->gen_len;
  const double prefill_gflops = gflops(total_macs(&r.prefill), prefill_best);
  const double decode_gflops = gflops(total_macs(&r.decode), decode_best);
  printf("b%d.prefill_tokens %d\n", B, prefill_tokens);
  printf("b%d.prefill_tok_s %.1f\n", B, prefill_tokens / prefill_best);
  printf("b%d.prefill_tok_s_median %.1f\n", B, prefill_tokens / prefill_med);
  printf("b%d.prefill_gflops %.2f\n", B, prefill_gflops);
  printf("b%d.prefill_of_ceiling %.3f\n", B, prefill_gflops / ceiling_gflops);
  printf("b%d.decode_tokens %d\n", B, decode_tokens);
  printf("b%d.decode_tok_s %.1f\n", B, decode_tokens / decode_best);
  printf("b%d.decode_tok_s_median %.1f\n", B, decode_tokens / decode_med);
  printf("b%d.decode_gflops %.2f\n", B, decode_gflops);
  printf("b%d.decode_of_ceiling %.3f\n", B, decode_gflops / ceiling_gflops);
  if (B == 1)  // the floor's time per token over the achieved one
    printf("b1.decode_of_bandwidth_floor %.3f\n", floor_s_per_token * decode_tokens / decode_best);
  fflush(stdout);
}

// Seconds of be->linear(w) on rows input rows: the best of reps (at most BENCH_MAX_RUNS) timed
// calls after a warm-up, and their median into *median_s when it is not NULL.
static double linear_seconds(Backend *be, const WeightMatrix *w, int rows, int reps,
                             double *median_s) {
  double secs[BENCH_MAX_RUNS];
  CHECK(reps <= BENCH_MAX_RUNS);
  float *x = xmalloc((size_t)rows * w->cols * sizeof *x);  // [rows, cols]
  float *y = xmalloc((size_t)rows * w->rows * sizeof *y);  // [rows, w->rows]
  for (int64_t i = 0; i < rows * w->cols; i++) x[i] = (float)(i % 13) * 0.0625f - 0.375f;
  be->linear(be, w, NULL, x, rows, y, false);
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    int64_t t0 = clock_now_ns();
    be->linear(be, w, NULL, x, rows, y, false);
    secs[r] = (double)(clock_now_ns() - t0) / 1e9;
    if (secs[r] < best) best = secs[r];
  }
  if (median_s) *median_s = median(secs, reps);
  free(x);
  free(y);
  return best;
}

// GFLOP/s of be->linear(w) on rows input rows (linear_seconds).
static double linear_gflops(Backend *be, const WeightMatrix *w, int rows, int reps) {
  return gflops((double)rows * (double)w->rows * (double)w->cols,
                linear_seconds(be, w, rows, reps, NULL));
}

// The ceiling lines; returns the highest rate measured (the denominator of *_of_ceiling).
static double bench_ceiling(Backend *be, const GptOssWeights *w, const BenchOptions *o) {
  const WeightMatrix *u = &w->unembedding;
  float *f = xmalloc((size_t)u->rows * u->cols * sizeof *f);  // [vocab, hidden]
  for (int64_t i = 0; i < u->rows * u->cols; i++) f[i] = (float)(i % 29) * 0.01f - 0.14f;
  WeightMatrix f32 = {.format = WEIGHT_F32, .rows = u->rows, .cols = u->cols, .data = f};
  const double sgemm = linear_gflops(be, &f32, BENCH_CEILING_ROWS, 3);
  free(f);
  const char *name = weight_format_name(o->dense);
  const double dense = linear_gflops(be, u, BENCH_CEILING_ROWS, 3);
  WeightMatrix slice = *u;  // the first rows of a matrix are a matrix in every dense format
  slice.rows = (int64_t)(BENCH_CACHED_BYTES / (size_t)slice.cols) / 16 * 16;
  const double cached = linear_gflops(be, &slice, BENCH_CEILING_ROWS, 20);
  printf("ceiling.shape m%d.n%lld.k%lld\n", BENCH_CEILING_ROWS, (long long)u->rows,
         (long long)u->cols);
  printf("ceiling.sgemm_gflops %.2f\n", sgemm);
  printf("ceiling.%s_gflops %.2f\n", name, dense);
  printf("ceiling.%s_cached_gflops %.2f\n", name, cached);
  // Q8's kernel, and where it is AMX-INT8 the VNNI kernel's in-cache rate beside it (the AMX
  // ceiling and the AVX-512 one, measured in the same run).
  if (o->dense == WEIGHT_Q8 && cpu_backend_uses_amx(be)) {
    printf("ceiling.q8_kernel amx-int8\n");
    setenv("GPTOSS_CPU_AMX", "0", 1);
    Backend *vnni = cpu_backend_create(o->num_threads);
    unsetenv("GPTOSS_CPU_AMX");
    printf("ceiling.q8_vnni_cached_gflops %.2f\n",
           linear_gflops(vnni, &slice, BENCH_CEILING_ROWS, 20));
    vnni->destroy(vnni);
  } else if (o->dense == WEIGHT_Q8) {  // as cpu_backend.c chooses without AMX
    const bool vnni = strcmp(o->kernels, "all") == 0 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512vnni");
    printf("ceiling.q8_kernel %s\n", vnni                        ? "avx512-vnni"
                                     : cpu_backend_uses_avx2(be) ? "avx2"
                                                                 : "portable");
  }
  double best = sgemm > dense ? sgemm : dense;
  best = best > cached ? best : cached;
  printf("ceiling.gflops %.2f\n", best);
  fflush(stdout);
  return best;
}

int main(int argc, char **argv) {
  check_set_program("bench_engine");
  BenchOptions o = parse_options(argc, argv);
  int max_b = 0;
  for (int i = 0; i < o.num_batches; i++) max_b = o.batches[i] > max_b ? o.batches[i] : max_b;

  char err[1024];
  WeightsOptions wo = {
      .load_format = LOAD_DUMMY, .dense_format = o.dense, .expert_format = o.experts};
  GptOssWeights w;
  int64_t t0 = clock_now_ns();
  if (!weights_load(o.model, &wo, &w, err, sizeof err)) die("%s", err);
  const double load_s = (double)(clock_now_ns() - t0) / 1e9;
  const GptOssConfig *c = &w.config;
  // The bandwidth probes first, while the backend's pool threads do not exist yet to share the
  // CPUs with OpenMP's.
  const int threads = o.num_threads > 0 ? o.num_threads : cpu_cores_usable();  // as the backend
  const double bytes = decode_bytes_per_token(&w, o.prompt_len + o.gen_len / 2);
  const double read_gbs = stream_read_gbs((size_t)bytes, threads);
  const double memory_gbs = stream_read_gbs(BENCH_STREAM_BYTES, threads);
  Backend *be = strcmp(o.kernels, "avx2") == 0       ? cpu_backend_create_avx2(o.num_threads)
                : strcmp(o.kernels, "portable") == 0 ? cpu_backend_create_portable(o.num_threads)
                                                     : cpu_backend_create(o.num_threads);
  if (!be) die("--kernels avx2: this CPU has no AVX2 and FMA");
  const int prefill_seqs = o.chunk / o.prompt_len < max_b ? o.chunk / o.prompt_len : max_b;
  const int max_tokens = prefill_seqs * o.prompt_len > max_b ? prefill_seqs * o.prompt_len : max_b;
  Model m;
  if (!model_init(&m, &w, be, NULL, max_tokens, 0, err, sizeof err)) die("%s", err);

  printf("model %s\n", o.model);
  printf("dense_format %s\n", weight_format_name(o.dense));
  printf("expert_format %s\n", weight_format_name(o.experts));
  printf("threads %d\n", threads);
  printf("kernels %s\n", o.kernels);
  printf("prompt_len %d\n", o.prompt_len);
  printf("gen_len %d\n", o.gen_len);
  printf("load_s %.2f\n", load_s);
  printf("layer_macs_per_token %.0f\n", layer_macs_per_token(c));
  printf("unembedding_macs_per_token %.0f\n", (double)c->hidden_size * c->vocab_size);
  const double ceiling = bench_ceiling(be, &w, &o);
  // The unembedding's weights read by the linear op for one row (the median of 20 reads): a
  // stream the cores in use achieve on real weights, which the probe may not reach.
  double unembedding_s;
  linear_seconds(be, &w.unembedding, 1, 20, &unembedding_s);
  const double unembedding_gbs = (double)weight_matrix_bytes(&w.unembedding) / unembedding_s * 1e-9;
  const double floor_gbs = read_gbs > unembedding_gbs ? read_gbs : unembedding_gbs;
  printf("bandwidth.decode_bytes_per_token %.0f\n", bytes);
  printf("bandwidth.read_gbs %.2f\n", read_gbs);
  printf("bandwidth.memory_read_gbs %.2f\n", memory_gbs);
  printf("bandwidth.unembedding_read_gbs %.2f\n", unembedding_gbs);
  printf("bandwidth.b1_floor_tok_s %.1f\n", floor_gbs * 1e9 / bytes);

  const int max_seqs = max_b;
  BatchArrays a = {.blocks_per_seq = (o.prompt_len + o.gen_len + BENCH_BLOCK - 1) / BENCH_BLOCK};
  a.ids = xmalloc((size_t)max_tokens * sizeof *a.ids);
  a.positions = xmalloc((size_t)max_tokens * sizeof *a.positions);
  a.slots = xmalloc((size_t)max_tokens * sizeof *a.slots);
  a.query_start = xmalloc((size_t)(max_seqs + 1) * sizeof *a.query_start);
  a.seq_lens = xmalloc((size_t)max_seqs * sizeof *a.seq_lens);
  a.block_tables = xmalloc((size_t)max_seqs * a.blocks_per_seq * sizeof *a.block_tables);
  a.logits_indices = xmalloc((size_t)max_seqs * sizeof *a.logits_indices);
  float *logits = be->alloc(be, (size_t)max_b * c->vocab_size * sizeof *logits);  // [B, vocab]
  CHECK(logits != NULL);
  bench_run(&m, &o, 1, 4, &a, logits);  // warm-up: scratch buffers grow, pages fault in
  for (int i = 0; i < o.num_batches; i++)
    bench_batch(&m, &o, o.batches[i], &a, logits, ceiling, bytes / (floor_gbs * 1e9));

  be->free(be, logits);
  free(a.ids), free(a.positions), free(a.slots), free(a.query_start), free(a.seq_lens);
  free(a.block_tables), free(a.logits_indices);
  model_free(&m);
  be->destroy(be);
  weights_free(&w);
  return 0;
}
