// bench_cuda_kernels.c: how close the CUDA backend's MoE and attention kernels come to the
// device's limits. Measures the two references first (device-to-device copy bandwidth, counting
// read + write; the bf16 cuBLAS rate through the linear op on an 8192 x 8192 x 4096 product),
// then the MoE op at GPT-OSS shapes (hidden and intermediate 2880, top-4 of 32 or 128 MXFP4
// experts) from 1 to 8192 tokens, on the backend's choice of expert kernel and on each kernel
// forced (figures ".tile", ".wide", ".wide32"), and paged attention (64 query / 8 KV heads of 64)
// for decode batches and a prefill chunk over a float32 and a bf16 cache: achieved GB/s (bytes that
// must be read: the routed experts' weights; the visible K/V) and TFLOP/s, each as a share of its
// reference; then the sample op on 64 and 1,024 rows of 201,088 logits (greedy, temperature,
// top-k 50 with top-p 0.9, greedy with 5 logprobs). Prints one "cuda.<name> value" line per figure,
// then a table. Times only the ops (after one untimed call); checks nothing (test_cuda_ops does).
// Without a device it prints "skipped: no CUDA device" and exits 0. With FILTER, only the MoE and
// attention figures whose name holds it run (the references always do): one shape for a profiler,
// say.
//
//   bench_cuda_kernels [REPS [FILTER]]     (REPS default 10; e.g. 1 moe.gpt-oss-120b.e128.t1024)
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "common/check.h"
#include "common/clock.h"
#include "model/bf16.h"

static int g_reps = 10;
static const char *g_filter;  // NULL: every figure

static bool wanted(const char *name) { return !g_filter || strstr(name, g_filter); }
static double g_copy_gbs, g_bf16_tflops;  // the references

typedef void (*BenchOp)(void *ctx);

// Seconds per call of op: one untimed call, then g_reps calls queued back to back.
static double time_op(Backend *gpu, BenchOp op, void *ctx) {
  op(ctx);
  cuda_synchronize(gpu);
  const int64_t t0 = clock_now_ns();
  for (int i = 0; i < g_reps; i++) op(ctx);
  cuda_synchronize(gpu);
  return (double)(clock_now_ns() - t0) * 1e-9 / g_reps;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
  return g_rng;
}
static float rnd_float(float scale) {
  return ((float)(rnd() >> 40) / (float)(1 << 24) * 2 - 1) * scale;
}

static float *host_floats(size_t n, float scale) {
  float *x = xmalloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) x[i] = rnd_float(scale);
  return x;
}

static void *dev_floats(Backend *gpu, size_t n, float scale) {
  float *h = host_floats(n, scale);
  void *d = gpu->alloc(gpu, n * sizeof(float));
  if (!d) die("bench_cuda_kernels: out of device memory for %zu floats", n);
  cuda_to_device(gpu, d, h, n * sizeof(float));
  free(h);
  return d;
}

static void upload(Backend *gpu, const GptOssWeights *host, GptOssWeights *dev) {
  char err[512];
  if (!cuda_weights_upload(gpu, host, dev, err, sizeof err)) die("bench_cuda_kernels: %s", err);
}

static void report(const char *name, double value) { printf("cuda.%s %.4g\n", name, value); }

// ---------------------------------------------------------------------------------------------
// References

typedef struct {
  Backend *gpu;
  void *dst, *src;
  size_t bytes;
} CopyCtx;

static void copy_op(void *ctx) {
  CopyCtx *c = ctx;
  cuda_copy_device(c->gpu, c->dst, c->src, c->bytes);
}

typedef struct {
  Backend *gpu;
  const WeightMatrix *w;
  const float *x;
  int rows;
  float *y;
} LinearCtx;

static void linear_op(void *ctx) {
  LinearCtx *c = ctx;
  c->gpu->linear(c->gpu, c->w, NULL, c->x, c->rows, c->y, false);
}

static void bench_references(Backend *gpu) {
  CopyCtx c = {gpu, NULL, NULL, (size_t)1 << 30};
  c.dst = gpu->alloc(gpu, c.bytes);
  c.src = gpu->alloc(gpu, c.bytes);
  if (!c.dst || !c.src) die("bench_cuda_kernels: out of device memory for 2 GiB of copies");
  const double t = time_op(gpu, copy_op, &c);
  g_copy_gbs = 2.0 * (double)c.bytes / t * 1e-9;
  report("copy_d2d.gb_s", g_copy_gbs);
  gpu->free(gpu, c.dst), gpu->free(gpu, c.src);

  const int n = 8192, k = 8192, m = 4096;
  uint16_t *wh = xmalloc((size_t)n * k * sizeof(uint16_t));
  for (size_t i = 0; i < (size_t)n * k; i++) wh[i] = bf16_from_f32(rnd_float(0.05f));
  GptOssWeights host = {.unembedding = {WEIGHT_BF16, n, k, wh, NULL}}, dev;
  upload(gpu, &host, &dev);
  free(wh);
  LinearCtx l = {gpu, &dev.unembedding, dev_floats(gpu, (size_t)m * k, 1.0f), m, NULL};
  l.y = gpu->alloc(gpu, (size_t)m * n * sizeof(float));
  const double tl = time_op(gpu, linear_op, &l);
  g_bf16_tflops = 2.0 * m * n * k / tl * 1e-12;
  report("linear_bf16.m4096.n8192.k8192.tflops", g_bf16_tflops);
  gpu->free(gpu, (void *)l.x), gpu->free(gpu, l.y);
  cuda_weights_free(gpu, &dev);
}

// ---------------------------------------------------------------------------------------------
// MoE

typedef struct {
  Backend *gpu;
  MoeArgs a;
} MoeCtx;

static void moe_op(void *ctx) {
  MoeCtx *c = ctx;
  c->gpu->moe(c->gpu, &c->a);
}

// Experts picked by any of the tokens (the CPU routes them the same way the GPU does).
static int distinct_experts(Backend *cpu, const LayerWeights *L, const GptOssConfig *c,
                            const float *x, int num_tokens) {
  const int E = c->num_experts, k = c->experts_per_token;
  float *logits = xmalloc((size_t)num_tokens * E * sizeof(float));
  cpu->linear(cpu, &L->gate, L->gate_bias, x, num_tokens, logits, false);
  bool *used = xcalloc((size_t)E, sizeof(bool));
  for (int t = 0; t < num_tokens; t++) {
    const float *l = logits + (size_t)t * E;
    bool picked[1024] = {false};
    for (int r = 0; r < k; r++) {
      int best = -1;
      for (int e = 0; e < E; e++)
        if (!picked[e] && (best < 0 || l[e] > l[best])) best = e;
      picked[best] = used[best] = true;
    }
  }
  int n = 0;
  for (int e = 0; e < E; e++) n += used[e];
  free(logits), free(used);
  return n;
}

#define BENCH_MOE_SHAPES 7
static const int BENCH_MOE_TOKENS[BENCH_MOE_SHAPES] = {1, 16, 64, 256, 1024, 4096, 8192};

// Each MoE shape runs on the backend's own choice of expert kernel and on each kernel forced
// (GPTOSS_CUDA_MOE_KERNEL), so that one run shows where the wide kernel and the cuBLAS path
// start to pay.
#define BENCH_MOE_KERNELS 5
static struct {
  const char *env;     // GPTOSS_CUDA_MOE_KERNEL
  const char *suffix;  // of the figures' names
  Backend *backend;
} g_moe_kernels[BENCH_MOE_KERNELS] = {{"auto", "", NULL},
                                      {"tile", ".tile", NULL},
                                      {"wide", ".wide", NULL},
                                      {"wide32", ".wide32", NULL},
                                      {"cublas", ".cublas", NULL}};

// "moe.<model without its org>.e<experts>.t<tokens>"
static void moe_name(char *name, size_t size, const char *model, int experts, int tokens) {
  snprintf(name, size, "moe.%s.e%d.t%d", strchr(model, '/') ? strchr(model, '/') + 1 : model,
           experts, tokens);
}

static void bench_moe(Backend *gpu, Backend *cpu, const char *model, int num_experts) {
  bool any = false;  // of this model's shapes (else its weights need not be made)
  for (int i = 0; i < BENCH_MOE_SHAPES; i++) {
    char name[96];
    moe_name(name, sizeof name, model, num_experts, BENCH_MOE_TOKENS[i]);
    any = any || wanted(name);
  }
  if (!any) return;
  GptOssConfig c;
  if (!config_preset(model, &c)) die("bench_cuda_kernels: no preset %s", model);
  c.num_layers = 1;
  const int H = c.hidden_size, I = c.intermediate_size, E = num_experts;
  c.num_experts = E;
  LayerWeights L = {0};
  float *gate = host_floats((size_t)E * H, 0.05f);
  L.gate = (WeightMatrix){WEIGHT_F32, E, H, gate, NULL};
  L.gate_bias = host_floats((size_t)E, 0.1f);
  WeightMatrix *w1 = xcalloc((size_t)E, sizeof(WeightMatrix)),
               *w2 = xcalloc((size_t)E, sizeof(WeightMatrix));
  const size_t n1 = (size_t)2 * I * H, n2 = (size_t)H * I;
  uint8_t *blocks = xmalloc((n1 + n2) / 2), *scales = xmalloc((n1 + n2) / 32);
  for (size_t i = 0; i < (n1 + n2) / 2; i++) blocks[i] = (uint8_t)rnd();
  for (size_t i = 0; i < (n1 + n2) / 32; i++) scales[i] = (uint8_t)(118 + rnd() % 4);
  for (int e = 0; e < E; e++) {  // every expert shares the same bytes on the host
    w1[e] = (WeightMatrix){WEIGHT_MXFP4, 2 * I, H, blocks, scales};
    w2[e] = (WeightMatrix){WEIGHT_MXFP4, H, I, blocks + n1 / 2, scales + n1 / 32};
  }
  L.mlp1 = w1, L.mlp2 = w2;
  L.mlp1_bias = host_floats((size_t)E * 2 * I, 0.1f);
  L.mlp2_bias = host_floats((size_t)E * H, 0.1f);
  GptOssWeights host = {.config = c, .shard = shard_whole(&c), .layers = &L}, dev;
  upload(gpu, &host, &dev);
  const double expert_bytes = (double)(n1 + n2) / 2 + (double)(n1 + n2) / 32;

  for (int i = 0; i < BENCH_MOE_SHAPES; i++) {
    const int T = BENCH_MOE_TOKENS[i];
    char shape[96];
    moe_name(shape, sizeof shape, model, E, T);
    float *xh = NULL, *x = NULL, *residual = NULL;
    int used = 0;
    for (int v = 0; v < BENCH_MOE_KERNELS; v++) {
      char name[128];
      snprintf(name, sizeof name, "%s%s", shape, g_moe_kernels[v].suffix);
      if (!wanted(name)) continue;
      if (!xh) {
        xh = host_floats((size_t)T * H, 1.0f);
        used = distinct_experts(cpu, &L, &c, xh, T);
        x = gpu->alloc(gpu, (size_t)T * H * sizeof(float));
        residual = gpu->alloc(gpu, (size_t)T * H * sizeof(float));
        cuda_to_device(gpu, x, xh, (size_t)T * H * sizeof(float));
      }
      // Another backend of the same device reads the same device weights and buffers.
      Backend *be = g_moe_kernels[v].backend;
      MoeCtx m = {be, {&c, &dev.layers[0], x, T, 0, E, residual, NULL}};
      const double t = time_op(be, moe_op, &m);
      const double bytes = used * expert_bytes + (double)T * H * 4 * 3;
      const double flops =
          (double)T * c.experts_per_token * 2.0 * ((double)n1 + n2) + 2.0 * T * E * H;
      printf(
          "%-45s %9.1f us %8.0f GB/s (%3.0f%% of copy) %7.1f TFLOP/s (%3.0f%% of bf16 GEMM), %d "
          "experts used\n",
          name, t * 1e6, bytes / t * 1e-9, 100 * bytes / t * 1e-9 / g_copy_gbs, flops / t * 1e-12,
          100 * flops / t * 1e-12 / g_bf16_tflops, used);
      char fig[160];
      snprintf(fig, sizeof fig, "%s.us", name), report(fig, t * 1e6);
      snprintf(fig, sizeof fig, "%s.gb_s", name), report(fig, bytes / t * 1e-9);
      snprintf(fig, sizeof fig, "%s.tflops", name), report(fig, flops / t * 1e-12);
    }
    if (xh) gpu->free(gpu, x), gpu->free(gpu, residual), free(xh);
  }
  cuda_weights_free(gpu, &dev);
  free(gate), free((void *)L.gate_bias), free(w1), free(w2), free(blocks), free(scales);
  free((void *)L.mlp1_bias), free((void *)L.mlp2_bias);
}

// ---------------------------------------------------------------------------------------------
// Attention

typedef struct {
  Backend *gpu;
  AttentionArgs a;
} AttnCtx;

static void attn_op(void *ctx) {
  AttnCtx *c = ctx;
  c->gpu->attention(c->gpu, &c->a);
}

// num_seqs sequences of ctx_len tokens each, of which the last `fresh` are this call's queries
// (1: decode; ctx_len: a prefill from scratch), in contiguous blocks of 16, over a cache of dtype
// (the figures of a bf16 cache end in ".bf16").
static void bench_attention_kv(Backend *gpu, const char *label, int num_seqs, int ctx_len,
                               int fresh, int window, KvDtype dtype) {
  if (!wanted(label)) return;
  const int heads = 64, kv_heads = 8, hd = 64, bs = 16, kv_dim = kv_heads * hd;
  const int blocks_per_seq = (ctx_len + bs - 1) / bs, T = num_seqs * fresh;
  KvCache kv = {.backend = gpu,
                .num_layers = 1,
                .num_blocks = num_seqs * blocks_per_seq,
                .block_size = bs,
                .num_kv_heads = kv_heads,
                .head_dim = hd,
                .dtype = dtype,
                .k = xcalloc(1, sizeof(void *)),
                .v = xcalloc(1, sizeof(void *))};
  const size_t elem = kv_dtype_size(dtype);
  const size_t cache_bytes = (size_t)kv.num_blocks * bs * kv_dim * elem;
  kv.k[0] = gpu->alloc(gpu, cache_bytes);
  kv.v[0] = gpu->alloc(gpu, cache_bytes);
  if (!kv.k[0] || !kv.v[0]) die("bench_cuda_kernels: out of device memory for the KV cache");
  uint32_t *ids = xcalloc((size_t)T, sizeof(uint32_t));
  int32_t *pos = xmalloc((size_t)T * sizeof(int32_t)),
          *qs = xmalloc((size_t)(num_seqs + 1) * sizeof(int32_t));
  int32_t *lens = xmalloc((size_t)num_seqs * sizeof(int32_t));
  int32_t *tables = xmalloc((size_t)num_seqs * blocks_per_seq * sizeof(int32_t));
  int64_t *slots = xmalloc((size_t)T * sizeof(int64_t));
  double keys = 0, flops = 0;
  for (int s = 0; s < num_seqs; s++) {
    qs[s] = s * fresh, lens[s] = ctx_len;
    for (int b = 0; b < blocks_per_seq; b++)
      tables[s * blocks_per_seq + b] = s * blocks_per_seq + b;
    for (int i = 0; i < fresh; i++) {
      const int p = ctx_len - fresh + i, visible = window > 0 && p + 1 > window ? window : p + 1;
      pos[s * fresh + i] = p;
      slots[s * fresh + i] = (int64_t)s * blocks_per_seq * bs + p;
      flops += 4.0 * heads * hd * visible;
    }
    const int first = ctx_len - fresh;  // the first query's position: it sees the most keys
    keys += ctx_len - (window > 0 && first + 1 > window ? first + 1 - window : 0);
  }
  qs[num_seqs] = T;
  const Batch hb = {.num_seqs = num_seqs,
                    .num_tokens = T,
                    .token_ids = ids,
                    .positions = pos,
                    .slot_mapping = slots,
                    .query_start = qs,
                    .seq_lens = lens,
                    .block_tables = tables,
                    .max_blocks_per_seq = blocks_per_seq};
  AttnCtx c = {gpu,
               {dev_floats(gpu, (size_t)T * heads * hd, 1.0f), heads * hd, &kv, 0,
                dev_floats(gpu, heads, 1.0f), gpu->upload_batch(gpu, &hb), heads, kv_heads, hd,
                window, 0.125f, NULL}};
  c.a.out = gpu->alloc(gpu, (size_t)T * heads * hd * sizeof(float));
  const double t = time_op(gpu, attn_op, &c);
  const double bytes = keys * kv_dim * (double)elem * 2;  // K and V each read once per sequence
  printf("%-40s %9.1f us %8.0f GB/s (%3.0f%% of copy) %7.2f TFLOP/s (fp32 CUDA cores)\n", label,
         t * 1e6, bytes / t * 1e-9, 100 * bytes / t * 1e-9 / g_copy_gbs, flops / t * 1e-12);
  char fig[128];
  snprintf(fig, sizeof fig, "%s.us", label), report(fig, t * 1e6);
  snprintf(fig, sizeof fig, "%s.gb_s", label), report(fig, bytes / t * 1e-9);
  snprintf(fig, sizeof fig, "%s.tflops", label), report(fig, flops / t * 1e-12);
  gpu->free(gpu, (void *)c.a.q), gpu->free(gpu, (void *)c.a.sinks), gpu->free(gpu, c.a.out);
  gpu->free(gpu, kv.k[0]), gpu->free(gpu, kv.v[0]);
  free(kv.k), free(kv.v), free(ids), free(pos), free(qs), free(lens), free(tables), free(slots);
}

static void bench_attention(Backend *gpu, const char *label, int num_seqs, int ctx_len, int fresh,
                            int window) {
  char bf16_label[96];
  snprintf(bf16_label, sizeof bf16_label, "%s.bf16", label);
  bench_attention_kv(gpu, label, num_seqs, ctx_len, fresh, window, KV_F32);
  bench_attention_kv(gpu, bf16_label, num_seqs, ctx_len, fresh, window, KV_BF16);
}

// ---------------------------------------------------------------------------------------------
// Sampling: the sample op on rows of GPT-OSS's 201,088 logits

typedef struct {
  Backend *gpu;
  const float *logits;
  int rows;
  const SampleRow *plan;
  int32_t *ids;
  PickLogprobs *logprobs;
} SampleCtx;

static void sample_op(void *ctx) {
  SampleCtx *c = ctx;
  c->gpu->sample(c->gpu, c->logits, c->rows, 201088, c->plan, c->ids, c->logprobs);
}

// rows rows sampled as `row` says (each its own draw): us per call (the op waits for its ids) and
// GB/s of logits read once, as a share of the copy bandwidth (a top-k / top-p row reads its
// logits about 19 times, a logprobs row 1 + its top N times more).
static void bench_sample(Backend *gpu, const char *label, int rows, SampleRow row) {
  if (!wanted(label)) return;
  const int vocab = 201088;
  SampleRow *plan = xmalloc((size_t)rows * sizeof *plan);
  for (int i = 0; i < rows; i++) plan[i] = row, plan[i].draw = (double)(rnd() >> 11) * 0x1p-53;
  SampleCtx c = {gpu,
                 dev_floats(gpu, (size_t)rows * vocab, 8.0f),
                 rows,
                 plan,
                 xmalloc((size_t)rows * sizeof(int32_t)),
                 xmalloc((size_t)rows * sizeof(PickLogprobs))};
  const double t = time_op(gpu, sample_op, &c);
  const double bytes = (double)rows * vocab * sizeof(float);
  printf("%-40s %9.1f us %8.0f GB/s (%3.0f%% of copy) of logits read once\n", label, t * 1e6,
         bytes / t * 1e-9, 100 * bytes / t * 1e-9 / g_copy_gbs);
  char fig[128];
  snprintf(fig, sizeof fig, "%s.us", label), report(fig, t * 1e6);
  gpu->free(gpu, (void *)c.logits);
  free(plan), free(c.ids), free(c.logprobs);
}

int main(int argc, char **argv) {
  if (argc > 1) g_reps = atoi(argv[1]) > 0 ? atoi(argv[1]) : g_reps;
  if (argc > 2) g_filter = argv[2];
  if (cuda_device_count() == 0) {
    printf("skipped: no CUDA device\n");
    return 0;
  }
  char err[512];
  Backend *gpu = cuda_backend_create(0, err, sizeof err);
  if (!gpu) die("bench_cuda_kernels: %s", err);
  Backend *cpu = cpu_backend_create(0);
  printf("device: %s\n", cuda_device_name(gpu));
  bench_references(gpu);
  printf("references: copy %.0f GB/s (read + write), bf16 GEMM %.1f TFLOP/s\n", g_copy_gbs,
         g_bf16_tflops);
  for (int v = 0; v < BENCH_MOE_KERNELS; v++) {
    setenv("GPTOSS_CUDA_MOE_KERNEL", g_moe_kernels[v].env, 1);
    g_moe_kernels[v].backend = cuda_backend_create(0, err, sizeof err);
    if (!g_moe_kernels[v].backend) die("bench_cuda_kernels: %s", err);
  }
  unsetenv("GPTOSS_CUDA_MOE_KERNEL");
  bench_moe(gpu, cpu, "openai/gpt-oss-20b", 32);
  bench_moe(gpu, cpu, "openai/gpt-oss-120b", 128);
  for (int v = 0; v < BENCH_MOE_KERNELS; v++)
    g_moe_kernels[v].backend->destroy(g_moe_kernels[v].backend);
  bench_attention(gpu, "attn.decode.s64.ctx1024", 64, 1024, 1, 0);
  bench_attention(gpu, "attn.decode.s256.ctx2048", 256, 2048, 1, 0);
  bench_attention(gpu, "attn.decode.s256.ctx2048.w128", 256, 2048, 1, 128);
  bench_attention(gpu, "attn.decode.s32.ctx16384", 32, 16384, 1, 0);
  // a ShareGPT decode step of gpt-oss-120b x1000: about 1,000 sequences of ~400-token contexts
  bench_attention(gpu, "attn.decode.s1024.ctx512", 1024, 512, 1, 0);
  bench_attention(gpu, "attn.decode.s1024.ctx512.w128", 1024, 512, 1, 128);
  bench_attention(gpu, "attn.prefill.s1.t2048", 1, 2048, 2048, 0);
  bench_attention(gpu, "attn.prefill.s4.t2048.w128", 4, 2048, 2048, 128);
  for (int rows = 64; rows <= 1024; rows *= 16) {
    char label[64];
    snprintf(label, sizeof label, "sample.greedy.r%d", rows);
    bench_sample(gpu, label, rows, (SampleRow){.temperature = 0, .top_p = 1});
    snprintf(label, sizeof label, "sample.t1.r%d", rows);
    bench_sample(gpu, label, rows, (SampleRow){.temperature = 1, .top_p = 1});
    snprintf(label, sizeof label, "sample.t1.k50.p0.9.r%d", rows);
    bench_sample(gpu, label, rows, (SampleRow){.temperature = 1, .top_k = 50, .top_p = 0.9f});
    snprintf(label, sizeof label, "sample.greedy.logprobs5.r%d", rows);
    bench_sample(
        gpu, label, rows,
        (SampleRow){.temperature = 0, .top_p = 1, .logprobs = true, .num_top_logprobs = 5});
  }
  gpu->destroy(gpu);
  cpu->destroy(cpu);
  return 0;
}
