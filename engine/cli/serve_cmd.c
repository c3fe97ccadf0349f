// serve_cmd.c: `gptoss-engine serve`: vllm-serve-compatible flags -> EngineConfig and ApiOptions,
// weights and backend, the engine thread and the HTTP server; prints the effective configuration
// (defaults included, prefix caching on or off) and the KV capacity; on SIGTERM/SIGINT stops
// accepting, aborts what is in flight, prints the prefix-cache hit rate and the KV blocks still
// in use, and exits 0. Dies with a message naming the flag on bad input, before anything starts.
#include "cli/serve_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "api/api.h"
#include "cli/cli_args.h"
#include "common/check.h"
#include "common/clock.h"
#include "common/fd_limit.h"
#include "core/engine.h"
#include "dist/warm_up.h"
#include "text/tokenizer.h"

typedef struct {
  const char *model;
  const char *host;
  int port;
  const char *served_model_name;
  long max_model_len;          // 0: the model's
  int max_num_batched_tokens;  // 0: the device's default (serve_defaults)
  int max_num_seqs;            // 0: the device's default
  bool async_scheduling;
  bool enable_prefix_caching;    // vLLM v1's default: on
  bool disable_hybrid_kv_cache;  // vLLM's --disable-hybrid-kv-cache-manager
  bool enforce_eager;            // vLLM's: no CUDA graphs
  int cuda_graph_sizes;          // the largest decode batch recorded; 0: min(2 x seqs, 512)
  const char *kv_cache_memory;   // bytes ("4GiB", "2000000000") or a fraction of free memory;
                                 // NULL: the device's default
  int block_size;
  const char *kv_cache_dtype;  // auto | float32 | bfloat16
  const char *load_format;
  const char *weight_format;  // weights_formats_from_name: auto, f32, bf16, q8
  uint64_t seed;
  const char *device;
  const char *api_key;
  const char *attention_backend;
  int tensor_parallel_size;
  int pipeline_parallel_size;
  int num_threads;
} ServeOptions;

static const char USAGE[] =
    "usage: gptoss-engine serve MODEL [options]   (or --model MODEL)\n"
    "  MODEL: a checkpoint folder (config.json + *.safetensors) or, with dummy weights, a preset\n"
    "         (openai/gpt-oss-120b, openai/gpt-oss-20b, gpt-oss-tiny)\n"
    "  --host ADDR (127.0.0.1)  --port N (8000)  --served-model-name NAME (MODEL)  --api-key KEY\n"
    "  --max-model-len N (the model's)  --max-num-batched-tokens N (CPU 2048, CUDA 8192)\n"
    "  --max-num-seqs N (CPU 128, CUDA 1024)  --async-scheduling\n"
    "  --kv-cache-memory BYTES|FRACTION of the memory free after the weights (CPU 0.2, CUDA 0.9;\n"
    "     on CUDA per GPU: each rank's device gets it)\n"
    "  --enable-prefix-caching (the default) | --no-enable-prefix-caching\n"
    "  --disable-hybrid-kv-cache-manager (the sliding-window layers keep every position's KV,\n"
    "     not only their window's)\n"
    "  --enforce-eager (CUDA: no graphs)  --cuda-graph-sizes N (CUDA, -pp 1: decode steps run\n"
    "     as recorded graphs of sizes 1 2 4 8 16 24 .. N, the last cut to --max-num-seqs where\n"
    "     they pass it; N: min(2 x max-num-seqs, 512))\n"
    "  --block-size N (16)  --kv-cache-dtype auto|float32|bfloat16 (auto: bfloat16 on CUDA\n"
    "     unless the weights are f32)  --load-format auto|safetensors|dummy  --seed N (0)\n"
    "  --weight-format auto|f32|bf16|q8 (auto: q8 for dummy weights, f32 for a checkpoint)\n"
    "  --device cpu|cuda|auto (auto)  --attention-backend NAME (or VLLM_ATTENTION_BACKEND)\n"
    "  -tp/--tensor-parallel-size 1  -pp/--pipeline-parallel-size 1  --threads N (all cores,\n"
    "     shared by the ranks: each of the tp x pp ranks is a thread group of its own)\n";

static ServeOptions parse_options(int argc, char **argv) {
  ServeOptions o = {.host = "127.0.0.1",
                    .port = 8000,
                    .enable_prefix_caching = true,
                    .block_size = 16,
                    .kv_cache_dtype = "auto",
                    .load_format = "auto",
                    .weight_format = "auto",
                    .device = "auto",
                    .tensor_parallel_size = 1,
                    .pipeline_parallel_size = 1};
  static const struct option longopts[] = {{"model", required_argument, 0, 'm'},
                                           {"host", required_argument, 0, 'H'},
                                           {"port", required_argument, 0, 'p'},
                                           {"served-model-name", required_argument, 0, 'n'},
                                           {"max-model-len", required_argument, 0, 'L'},
                                           {"max-num-batched-tokens", required_argument, 0, 'B'},
                                           {"max-num-seqs", required_argument, 0, 'S'},
                                           {"async-scheduling", no_argument, 0, 'a'},
                                           {"enable-prefix-caching", no_argument, 0, 'c'},
                                           {"no-enable-prefix-caching", no_argument, 0, 'C'},
                                           {"disable-hybrid-kv-cache-manager", no_argument, 0, 'y'},
                                           {"enforce-eager", no_argument, 0, 'e'},
                                           {"cuda-graph-sizes", required_argument, 0, 'g'},
                                           {"kv-cache-memory", required_argument, 0, 'k'},
                                           {"block-size", required_argument, 0, 'b'},
                                           {"kv-cache-dtype", required_argument, 0, 'D'},
                                           {"load-format", required_argument, 0, 'l'},
                                           {"weight-format", required_argument, 0, 'w'},
                                           {"seed", required_argument, 0, 's'},
                                           {"device", required_argument, 0, 'd'},
                                           {"api-key", required_argument, 0, 'K'},
                                           {"attention-backend", required_argument, 0, 'A'},
                                           {"tensor-parallel-size", required_argument, 0, 'T'},
                                           {"pipeline-parallel-size", required_argument, 0, 'P'},
                                           {"threads", required_argument, 0, 'j'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  cli_short_parallel_flags(argc, argv);
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (c) {
      case 'm': o.model = optarg; break;
      case 'H': o.host = optarg; break;
      case 'p': o.port = (int)cli_parse_long("serve", "--port", optarg, 0, 65535); break;
      case 'n': o.served_model_name = optarg; break;
      case 'L':
        o.max_model_len = cli_parse_long("serve", "--max-model-len", optarg, 1, 1L << 24);
        break;
      case 'B':
        o.max_num_batched_tokens =
            (int)cli_parse_long("serve", "--max-num-batched-tokens", optarg, 1, 1 << 20);
        break;
      case 'S':
        o.max_num_seqs = (int)cli_parse_long("serve", "--max-num-seqs", optarg, 1, 1 << 16);
        break;
      case 'a': o.async_scheduling = true; break;
      case 'c': o.enable_prefix_caching = true; break;
      case 'C': o.enable_prefix_caching = false; break;
      case 'y': o.disable_hybrid_kv_cache = true; break;
      case 'e': o.enforce_eager = true; break;
      case 'g':
        o.cuda_graph_sizes = (int)cli_parse_long("serve", "--cuda-graph-sizes", optarg, 1, 1 << 16);
        break;
      case 'k': o.kv_cache_memory = optarg; break;
      case 'b': o.block_size = (int)cli_parse_long("serve", "--block-size", optarg, 1, 1024); break;
      case 'D': o.kv_cache_dtype = optarg; break;
      case 'l': o.load_format = optarg; break;
      case 'w': o.weight_format = optarg; break;
      case 's':
        o.seed = (uint64_t)cli_parse_long("serve", "--seed", optarg, 0, __LONG_MAX__);
        break;
      case 'd': o.device = optarg; break;
      case 'K': o.api_key = optarg; break;
      case 'A': o.attention_backend = optarg; break;
      case 'T':
        o.tensor_parallel_size =
            (int)cli_parse_long("serve", "--tensor-parallel-size", optarg, 1, 64);
        break;
      case 'P':
        o.pipeline_parallel_size =
            (int)cli_parse_long("serve", "--pipeline-parallel-size", optarg, 1, 64);
        break;
      case 'j': o.num_threads = (int)cli_parse_long("serve", "--threads", optarg, 1, 1024); break;
      case 'h': fputs(USAGE, stdout); exit(0);
      case ':': die("serve: %s needs a value\n%s", argv[optind - 1], USAGE);
      default: die("serve: unknown option '%s'\n%s", argv[optind - 1], USAGE);
    }
  }
  if (optind < argc && !o.model) o.model = argv[optind++];
  if (optind < argc) die("serve: unexpected argument '%s'\n%s", argv[optind], USAGE);
  if (!o.model) die("serve: give the model (gptoss-engine serve MODEL)\n%s", USAGE);
  return o;
}

// Refuses what this engine cannot do, with the reason, before anything is loaded.
static void check_capabilities(ServeOptions *o) {
  if (!o->attention_backend) o->attention_backend = getenv("VLLM_ATTENTION_BACKEND");
  if (o->attention_backend) {
    // vLLM's names. The sink-capable ones all map to our one paged attention with sinks.
    static const char *const with_sinks[] = {"FLASH_ATTN", "FLASH_ATTN_VLLM_V1", "TRITON_ATTN",
                                             "TRITON_ATTN_VLLM_V1", "CPU"};
    static const char *const without_sinks[] = {"FLASHINFER", "XFORMERS", "TORCH_SDPA"};
    for (size_t i = 0; i < sizeof without_sinks / sizeof *without_sinks; i++)
      if (strcasecmp(o->attention_backend, without_sinks[i]) == 0)
        die("serve: attention backend %s does not support attention sinks, which GPT-OSS "
            "requires (every layer adds a learned sink logit); use the default backend",
            o->attention_backend);
    bool known = false;
    for (size_t i = 0; i < sizeof with_sinks / sizeof *with_sinks; i++)
      known |= strcasecmp(o->attention_backend, with_sinks[i]) == 0;
    if (!known)
      die("serve: unknown attention backend '%s' (FLASH_ATTN, TRITON_ATTN and CPU select the "
          "built-in attention with sinks; leave it unset for the same)",
          o->attention_backend);
  }
}

// The defaults of what was not given: vLLM's for the CPU (2048 batched tokens, 128 sequences) and
// for a GPU (8192, 1024; the sequences never above a given budget); the KV cache takes 0.2 of the
// free memory on the CPU (the host's, shared with everything else) and 0.9 of the device's free
// memory on CUDA, as vLLM's --gpu-memory-utilization 0.9 (which counts the weights in; ours is
// what they left free).
static void serve_defaults(ServeOptions *o, DeviceKind device) {
  const bool gpu = device == DEVICE_CUDA;
  if (!o->max_num_batched_tokens) o->max_num_batched_tokens = gpu ? 8192 : 2048;
  if (!o->max_num_seqs) {  // never above a given token budget
    o->max_num_seqs = gpu ? 1024 : 128;
    if (o->max_num_seqs > o->max_num_batched_tokens) o->max_num_seqs = o->max_num_batched_tokens;
  }
  if (!o->kv_cache_memory) o->kv_cache_memory = gpu ? "0.9" : "0.2";
  if (o->max_num_seqs > o->max_num_batched_tokens)
    die("serve: --max-num-seqs %d is above --max-num-batched-tokens %d (every running request "
        "needs at least one token of the step budget)",
        o->max_num_seqs, o->max_num_batched_tokens);
}

// --kv-cache-dtype: auto is bfloat16 on CUDA (as vLLM's cache follows the model's bf16), except
// with f32 weights (the float32 reference path stays float32 throughout), and float32 on the CPU.
static KvDtype kv_dtype_of(const char *name, DeviceKind device, const WeightsOptions *wo) {
  KvDtype d;
  if (strcmp(name, "auto") == 0)
    return device == DEVICE_CUDA && wo->dense_format != WEIGHT_F32 ? KV_BF16 : KV_F32;
  if (!kv_dtype_from_name(name, &d))
    die("serve: --kv-cache-dtype '%s' is unknown; use auto, float32 or bfloat16", name);
  return d;
}

// GPTOSS_TEST_STEP_SLOWDOWN=F (F >= 1): every engine step takes F times as long, for the test
// that proves the CI gate catches a slower engine. Announced on stderr, so no log hides it.
static double test_step_slowdown(void) {
  const char *v = getenv("GPTOSS_TEST_STEP_SLOWDOWN");
  if (!v || !*v) return 0;
  char *end;
  double f = strtod(v, &end);
  if (*end || !(f >= 1 && f <= 1000))
    die("serve: GPTOSS_TEST_STEP_SLOWDOWN='%s' must be a factor from 1 to 1000 (it slows every "
        "step, for testing only; unset it to run at full speed)",
        v);
  fprintf(stderr,
          "gptoss-engine serve: warning: GPTOSS_TEST_STEP_SLOWDOWN=%g: every step is "
          "made %gx slower (for testing only)\n",
          f, f);
  return f;
}

// GPTOSS_HOST_SAMPLING=1: every row of logits is copied to the host and sampled there, even on
// a backend that samples on its device (the CUDA one): for measuring what device sampling saves.
static bool host_sampling(void) {
  const char *v = getenv("GPTOSS_HOST_SAMPLING");
  if (!v || !*v || strcmp(v, "0") == 0) return false;
  if (strcmp(v, "1") != 0)
    die("serve: GPTOSS_HOST_SAMPLING='%s' must be 1 (sample on the host) or 0 (where the logits "
        "are, the default)",
        v);
  return true;
}

// GPTOSS_TEST_FORCED_OUTPUT=TEXT: harmony text (special tokens allowed, e.g.
// "<|channel|>final<|message|>Hi<|return|>") whose ids replace every request's sampled ids,
// position by position (the model still runs; past the script sampling goes on, and a stop token
// in it ends the request): the API tests' scripted model, since dummy weights never emit harmony.
// Announced on stderr like the slowdown.
static void test_forced_output(TokenIds *ids) {
  const char *v = getenv("GPTOSS_TEST_FORCED_OUTPUT");
  if (!v || !*v) return;
  Tokenizer t;
  char err[256];
  if (!tok_init(&t, TOK_O200K_HARMONY, NULL, err, sizeof err)) die("serve: %s", err);
  tok_encode(&t, v, strlen(v), true, ids);
  tok_free(&t);
  fprintf(stderr,
          "gptoss-engine serve: warning: GPTOSS_TEST_FORCED_OUTPUT: every request's "
          "first %zu output tokens are scripted (for testing only)\n",
          ids->len);
}

// --kv-cache-memory: bytes with an optional K/KiB/M/MiB/G/GiB suffix, or a fraction (0, 1] of
// the memory free now (after the weights are loaded): per device on CUDA, where every rank's GPU
// gets them (runner_free_bytes).
static size_t kv_cache_bytes(const char *spec, const Runner *runner) {
  static const struct {
    const char *suffix;
    double scale;
  } UNITS[] = {{"", 1},          {"K", 1 << 10}, {"KiB", 1 << 10}, {"M", 1 << 20},
               {"MiB", 1 << 20}, {"G", 1 << 30}, {"GiB", 1 << 30}};
  char *end;
  errno = 0;
  double v = strtod(spec, &end);
  if (end != spec && errno == 0 && v > 0) {
    if (*end == '\0' && v <= 1) return (size_t)(v * (double)runner_free_bytes(runner));
    for (size_t i = 0; i < sizeof UNITS / sizeof *UNITS; i++)
      if (strcasecmp(end, UNITS[i].suffix) == 0) return (size_t)(v * UNITS[i].scale);
  }
  die("serve: --kv-cache-memory '%s' is neither a byte count (e.g. 4GiB) nor a fraction in (0, 1]",
      spec);
}

static void print_config(const ServeOptions *o, const EngineConfig *c, const Runner *runner,
                         const WeightsOptions *weights, DeviceKind device, const char *name,
                         size_t kv_bytes, KvDtype kv_dtype) {
  printf(
      "gptoss-engine serve: model %s (served as %s), load format %s, weight format %s, "
      "device %s\n",
      o->model, name, o->load_format, o->weight_format, device_name(device));
  printf("  host %s  port %d  api key %s\n", o->host, o->port, o->api_key ? "set" : "none");
  printf(
      "  max-model-len %d  max-num-batched-tokens %d  max-num-seqs %d  async-scheduling %s  "
      "prefix caching %s\n",
      c->max_model_len, c->max_num_batched_tokens, c->max_num_seqs,
      c->async_scheduling ? "on" : "off", c->enable_prefix_caching ? "on" : "off");
  WeightsPlan plan;
  weights_plan(runner_config(runner), weights, &plan);
  printf("  weights %.2f GiB (%s dense, %s experts)\n", (double)plan.loaded_bytes / (1 << 30),
         weight_format_name(weights->dense_format), weight_format_name(weights->expert_format));
  const GptOssConfig *mc = runner_config(runner);
  // each rank's GPU holds its own share of every block
  const char *per = device == DEVICE_CUDA && runner_num_ranks(runner) > 1 ? " per GPU" : "";
  printf("  block-size %d  kv-cache-dtype %s  kv-cache-memory %.2f GiB%s: ", c->block_size,
         kv_dtype_name(kv_dtype), (double)kv_bytes / (1 << 30), per);
  if (engine_hybrid_kv(c, mc))  // a block holds half the layers; a long sequence, 1 per 16 tokens
    printf(
        "%d blocks, hybrid (the sliding layers keep their last %d positions) = %lld tokens of KV "
        "capacity, %lld when every sequence is within its window\n",
        c->num_kv_blocks, mc->sliding_window, (long long)(c->num_kv_blocks - 1) * c->block_size,
        (long long)(c->num_kv_blocks - 1) / 2 * c->block_size);
  else
    printf("%d blocks = %lld tokens of KV capacity\n", c->num_kv_blocks,
           (long long)c->num_kv_blocks * c->block_size);
  printf(
      "  attention backend: built-in (sinks, sliding window)  -tp %d  -pp %d (%d ranks of %d "
      "threads%s)  seed %llu\n",
      o->tensor_parallel_size, o->pipeline_parallel_size, runner_num_ranks(runner),
      runner_threads_per_rank(runner), runner_pinned(runner) ? ", one CPU each" : "",
      (unsigned long long)o->seed);
  fflush(stdout);
}

// CUDA graphs of decode steps (dist/runner.h), unless --enforce-eager: the sizes and their
// buffers before the KV cache's share is measured. False (and says why) when there will be none.
static bool prepare_graphs(const ServeOptions *o, const EngineConfig *c, Runner *runner,
                           bool hybrid) {
  if (o->enforce_eager) {
    printf("gptoss-engine serve: CUDA graphs: off (--enforce-eager)\n");
    return false;
  }
  const int max_size = o->cuda_graph_sizes         ? o->cuda_graph_sizes
                       : 2 * c->max_num_seqs < 512 ? 2 * c->max_num_seqs
                                                   : 512;
  const int max_blocks = (c->max_model_len + c->block_size - 1) / c->block_size;
  char err[512];
  if (runner_prepare_graphs(runner, max_size, max_blocks, hybrid, err, sizeof err)) return true;
  printf("gptoss-engine serve: CUDA graphs: off (%s)\n", err);
  return false;
}

// Records the prepared graphs (the KV cache exists now); says what was recorded.
static void record_graphs(Runner *runner) {
  char err[512];
  const int64_t t0 = clock_now_ns();
  if (!runner_capture_graphs(runner, err, sizeof err)) {
    printf("gptoss-engine serve: CUDA graphs: off (%s)\n", err);
  } else {
    const int n = runner_num_graphs(runner);
    printf(
        "gptoss-engine serve: CUDA graphs: decode steps of %d batch sizes (%d .. %d sequences) "
        "recorded in %.2f s\n",
        n, runner_graph_size(runner, 0), runner_graph_size(runner, n - 1),
        (double)(clock_now_ns() - t0) * 1e-9);
  }
  fflush(stdout);
}

// The prefix cache's hit rate as vLLM counts it (prompt tokens of new requests looked up, and
// found), and the KV blocks still referenced (0 once every request has ended).
static void print_shutdown_stats(Engine *engine, const EngineConfig *c) {
  EngineStats st;
  engine_stats(engine, &st);
  if (c->enable_prefix_caching)
    printf("gptoss-engine serve: prefix cache: %llu queries, %llu hits (hit rate %.1f%%)\n",
           (unsigned long long)st.prefix_cache_queries, (unsigned long long)st.prefix_cache_hits,
           st.prefix_cache_queries
               ? 100.0 * (double)st.prefix_cache_hits / (double)st.prefix_cache_queries
               : 0.0);
  else
    printf("gptoss-engine serve: prefix cache: off\n");
  printf("gptoss-engine serve: KV blocks in use at stop: %d of %d\n", st.num_kv_blocks_used,
         st.num_kv_blocks);
  fflush(stdout);
}

// SIGTERM/SIGINT may land on any thread (OpenBLAS starts its threads before main): the handler
// only writes the signal's number to a pipe that the main thread waits on.
static int stop_pipe[2];

static void on_stop_signal(int signal_number) {
  unsigned char b = (unsigned char)signal_number;
  ssize_t n = write(stop_pipe[1], &b, 1);
  (void)n;
}

static void install_stop_handler(void) {
  CHECK(pipe(stop_pipe) == 0);
  struct sigaction sa = {.sa_handler = on_stop_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
}

static int wait_for_stop_signal(void) {
  unsigned char b = 0;
  while (read(stop_pipe[0], &b, 1) < 0 && errno == EINTR) {
  }
  return b;
}

int serve_cmd_main(int argc, char **argv) {
  ServeOptions o = parse_options(argc, argv);
  check_capabilities(&o);
  install_stop_handler();
  fd_limit_raise(65536);  // thousands of streaming connections, each a file descriptor

  char err[1024];
  WeightsOptions wo = {.seed = o.seed};
  if (!weights_load_format_from_name(o.load_format, &wo.load_format))
    die("serve: --load-format '%s' is unknown; use auto, safetensors or dummy", o.load_format);
  const DeviceKind device =
      cli_device_and_formats("serve", o.device, o.weight_format, o.model, &wo);
  serve_defaults(&o, device);
  RunnerOptions ro = {.model = o.model,
                      .weights = wo,
                      .tensor_parallel = o.tensor_parallel_size,
                      .pipeline_parallel = o.pipeline_parallel_size,
                      .num_threads = o.num_threads,
                      .device = device,
                      .max_num_tokens = o.max_num_batched_tokens,
                      .max_num_logits = o.max_num_seqs,  // a logits row per sampling sequence
                      .kv_dtype = kv_dtype_of(o.kv_cache_dtype, device, &wo)};
  Runner *runner;
  if (!runner_create(&runner, &ro, err, sizeof err)) die("serve: %s", err);
  long model_len = (long)config_max_positions(runner_config(runner));
  if (o.max_model_len > model_len)
    die("serve: --max-model-len %ld is above the model's %ld positions", o.max_model_len,
        model_len);
  const int max_model_len = (int)(o.max_model_len ? o.max_model_len : model_len);
  if (device == DEVICE_CUDA) {  // the device's step buffers at their peak before the KV's share
    const int64_t t0 = clock_now_ns();
    if (!runner_warm_up(runner, o.max_num_seqs, max_model_len, o.block_size, err, sizeof err))
      die("serve: %s", err);
    printf("gptoss-engine serve: warm-up step of %d tokens in %.2f s\n", o.max_num_batched_tokens,
           (double)(clock_now_ns() - t0) * 1e-9);
  }
  EngineConfig config = {.max_num_batched_tokens = o.max_num_batched_tokens,
                         .max_num_seqs = o.max_num_seqs,
                         .max_model_len = max_model_len,
                         .block_size = o.block_size,
                         .async_scheduling = o.async_scheduling,
                         .enable_prefix_caching = o.enable_prefix_caching,
                         .disable_hybrid_kv_cache = o.disable_hybrid_kv_cache,
                         .host_sampling = host_sampling(),
                         .step_slowdown = test_step_slowdown()};
  TokenIds forced = {0};
  test_forced_output(&forced);
  config.forced_output_ids = forced.data;
  config.num_forced_output_ids = forced.len;
  const bool hybrid = engine_hybrid_kv(&config, runner_config(runner));
  const bool graphs = device == DEVICE_CUDA && prepare_graphs(&o, &config, runner, hybrid);
  size_t kv_bytes = kv_cache_bytes(o.kv_cache_memory, runner);
  size_t block_bytes = runner_kv_bytes_per_token(runner, hybrid) * (size_t)o.block_size;
  size_t num_blocks = kv_bytes / block_bytes;
  config.num_kv_blocks = num_blocks > INT32_MAX ? INT32_MAX : (int)num_blocks;
  if (config.num_kv_blocks < 1 + hybrid)
    die("serve: --kv-cache-memory %s holds %d blocks of %d tokens (%zu bytes each), fewer than "
        "%d; give more",
        o.kv_cache_memory ? o.kv_cache_memory : "(default)", config.num_kv_blocks, o.block_size,
        block_bytes, 1 + hybrid);
  const char *name = o.served_model_name ? o.served_model_name : o.model;
  print_config(&o, &config, runner, &wo, device, name, kv_bytes, ro.kv_dtype);

  Engine *engine;
  if (!engine_create(&engine, &config, runner, err, sizeof err)) die("serve: %s", err);
  if (graphs) record_graphs(runner);
  Tokenizer tok;
  if (!tok_init(&tok, TOK_O200K_HARMONY, NULL, err, sizeof err)) die("serve: %s", err);
  engine_start(engine);
  ApiOptions ao;
  api_options_default(&ao);
  ao.host = o.host;
  ao.port = (uint16_t)o.port;
  ao.served_model_name = name;
  ao.api_key = o.api_key;
  ao.max_model_len = config.max_model_len;
  ao.current_date = getenv("GPTOSS_TEST_CURRENT_DATE");  // testing only: a fixed date
  ApiEngine port = api_engine_of(engine);
  ApiServer *server = api_start(&ao, &port, &tok, err, sizeof err);
  if (!server) die("serve: %s", err);
  printf("gptoss-engine serve: listening on http://%s:%u\n", o.host, api_port(server));
  fflush(stdout);

  int signal_number = wait_for_stop_signal();
  printf("gptoss-engine serve: %s: stopping\n", strsignal(signal_number));
  fflush(stdout);
  api_stop(server);
  engine_stop(engine);
  print_shutdown_stats(engine, &config);
  if (graphs) {
    long long steps, graph_steps;
    runner_step_counts(runner, &steps, &graph_steps);
    printf("gptoss-engine serve: CUDA graphs ran %lld of %lld steps (%d graphs held at the end)\n",
           graph_steps, steps, runner_num_graphs(runner));
    fflush(stdout);
  }
  engine_destroy(engine);
  tok_free(&tok);
  token_ids_free(&forced);
  runner_free(runner);
  return 0;
}
