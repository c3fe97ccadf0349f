// generate_cmd.c: `gptoss-engine generate`: flags -> the runner (weights, backends, ranks) -> one
// generation -> {"prompt_ids", "output_ids", "text", "finish_reason"} on stdout, and optionally
// the prompt's logits and the router's margins as .npy. Dies with a message naming the flag on
// bad input.
#include "cli/generate_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_conversation.h"
#include "cli/cli_args.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/npy.h"
#include "core/generate.h"
#include "text/stream_decoder.h"
#include "text/tokenizer.h"

typedef struct {
  const char *model;
  const char *load_format;
  const char *weight_format;  // weights_formats_from_name
  const char *prompt_ids;  // "1,2,3"
  const char *prompt;      // plain text
  const char *chat;        // one user message, rendered with harmony
  int max_tokens;
  double temperature;
  double top_p;
  int top_k;
  uint64_t seed;
  bool ignore_eos;
  const char *logits_out;
  const char *route_margins_out;
  int flip_layer, flip_position;  // --flip-route LAYER:POSITION; -1, -1: none
  const char *device;
  int num_threads;
  int tensor_parallel, pipeline_parallel;
} GenerateOptions;

static const char USAGE[] =
    "usage: gptoss-engine generate --model M [--load-format auto|safetensors|dummy]\n"
    "         [--weight-format auto|f32|bf16|q8]\n"
    "         (--prompt-ids 1,2,3 | --prompt TEXT | --chat TEXT) --max-tokens N\n"
    "         [--temperature T] [--top-p P] [--top-k K] [--seed S] [--ignore-eos]\n"
    "         [--logits-out FILE.npy] [--route-margins-out FILE.npy] [--flip-route L:P]\n"
    "         [--device auto|cpu|cuda] [--threads N]\n"
    "         [--tensor-parallel-size|-tp N] [--pipeline-parallel-size|-pp N]\n"
    "  M: a checkpoint folder (config.json + *.safetensors, OpenAI's original/ layout) or, with\n"
    "     dummy weights, a preset: openai/gpt-oss-120b, openai/gpt-oss-20b, gpt-oss-tiny.\n"
    "  --weight-format: how weights are kept: f32 (exact), bf16 (bf16 dense, MXFP4 experts), q8\n"
    "     (8-bit dense, MXFP4 experts: the fastest); auto (default): q8 for dummy weights, f32\n"
    "     for a checkpoint folder.\n"
    "  Prints one JSON line {\"prompt_ids\", \"output_ids\", \"text\", \"finish_reason\"}.\n"
    "  --logits-out writes the logits at every prompt position (float32 [prompt, vocab]).\n"
    "  --route-margins-out writes, per layer and prompt position, the router's k-th largest\n"
    "     logit minus its (k+1)-th (float32 [layers, prompt]): how close each expert choice was.\n"
    "  --flip-route L:P: at layer L and prompt position P (0-based) the router takes its\n"
    "     (k+1)-th expert in place of the k-th (what another engine's rounding would have done).\n"
    "     Both diagnostics need one rank on the CPU.\n"
    "  -tp/-pp: tensor and pipeline parallel ranks (threads on the CPU; --threads is shared).\n";

static void parse_flip_route(const char *value, GenerateOptions *o) {
  int layer, position, end = 0;
  if (sscanf(value, "%d:%d%n", &layer, &position, &end) != 2 || value[end] || layer < 0 ||
      position < 0)
    die("generate: --flip-route '%s' is not LAYER:POSITION (two 0-based integers, e.g. 3:5)",
        value);
  o->flip_layer = layer;
  o->flip_position = position;
}

static GenerateOptions parse_options(int argc, char **argv) {
  GenerateOptions o = {.load_format = "auto",
                       .weight_format = "auto",
                       .max_tokens = -1,
                       .top_p = 1,
                       .device = "auto",
                       .tensor_parallel = 1,
                       .pipeline_parallel = 1,
                       .flip_layer = -1,
                       .flip_position = -1};
  static const struct option longopts[] = {{"model", required_argument, 0, 'm'},
                                           {"load-format", required_argument, 0, 'l'},
                                           {"weight-format", required_argument, 0, 'w'},
                                           {"prompt-ids", required_argument, 0, 'i'},
                                           {"prompt", required_argument, 0, 'p'},
                                           {"chat", required_argument, 0, 'c'},
                                           {"max-tokens", required_argument, 0, 'n'},
                                           {"temperature", required_argument, 0, 't'},
                                           {"top-p", required_argument, 0, 'P'},
                                           {"top-k", required_argument, 0, 'k'},
                                           {"seed", required_argument, 0, 's'},
                                           {"ignore-eos", no_argument, 0, 'e'},
                                           {"logits-out", required_argument, 0, 'o'},
                                           {"route-margins-out", required_argument, 0, 'R'},
                                           {"flip-route", required_argument, 0, 'F'},
                                           {"device", required_argument, 0, 'd'},
                                           {"threads", required_argument, 0, 'T'},
                                           {"tensor-parallel-size", required_argument, 0, 'X'},
                                           {"pipeline-parallel-size", required_argument, 0, 'Y'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  opterr = 0;
  cli_short_parallel_flags(argc, argv);
  int c;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (c) {
      case 'm': o.model = optarg; break;
      case 'l': o.load_format = optarg; break;
      case 'w': o.weight_format = optarg; break;
      case 'i': o.prompt_ids = optarg; break;
      case 'p': o.prompt = optarg; break;
      case 'c': o.chat = optarg; break;
      case 'n':
        o.max_tokens = (int)cli_parse_long("generate", "--max-tokens", optarg, 1, 1 << 20);
        break;
      case 't':
        o.temperature = cli_parse_double("generate", "--temperature", optarg, 0, 100);
        break;
      case 'P': o.top_p = cli_parse_double("generate", "--top-p", optarg, 1e-9, 1); break;
      case 'k': o.top_k = (int)cli_parse_long("generate", "--top-k", optarg, 0, 1 << 30); break;
      case 's':
        o.seed = (uint64_t)cli_parse_long("generate", "--seed", optarg, 0, __LONG_MAX__);
        break;
      case 'e': o.ignore_eos = true; break;
      case 'o': o.logits_out = optarg; break;
      case 'R': o.route_margins_out = optarg; break;
      case 'F': parse_flip_route(optarg, &o); break;
      case 'd': o.device = optarg; break;
      case 'T':
        o.num_threads = (int)cli_parse_long("generate", "--threads", optarg, 1, 1024);
        break;
      case 'X':
        o.tensor_parallel = (int)cli_parse_long("generate", "-tp", optarg, 1, 64);
        break;
      case 'Y':
        o.pipeline_parallel = (int)cli_parse_long("generate", "-pp", optarg, 1, 16);
        break;
      case 'h': fputs(USAGE, stdout); exit(0);
      case ':': die("generate: %s needs a value\n%s", argv[optind - 1], USAGE);
      default: die("generate: unknown option '%s'\n%s", argv[optind - 1], USAGE);
    }
  }
  if (optind < argc) die("generate: unexpected argument '%s'\n%s", argv[optind], USAGE);
  if (!o.model) die("generate: --model is required\n%s", USAGE);
  if ((o.prompt_ids != NULL) + (o.prompt != NULL) + (o.chat != NULL) != 1)
    die("generate: give exactly one of --prompt-ids, --prompt and --chat");
  if (o.max_tokens < 0) die("generate: --max-tokens is required");
  return o;
}


// --chat: the prompt serve renders for one user message (vLLM's system message, today's date or
// GPTOSS_TEST_CURRENT_DATE as in serve), so generate's ids are what serve would produce.
static void chat_prompt(const Tokenizer *tok, const char *user, TokenIds *ids) {
  ApiConversation conv = {0};
  api_conv_add(&conv, "user", NULL, NULL, NULL, user);
  api_conv_render(&conv, &(ApiPreamble){.current_date = getenv("GPTOSS_TEST_CURRENT_DATE")}, tok,
                  ids);
  api_conv_free(&conv);
}
static void prompt_tokens(const GenerateOptions *o, const Tokenizer *tok, TokenIds *ids) {
  if (o->prompt_ids) {
    const char *p = o->prompt_ids;
    while (*p) {
      char *end;
      errno = 0;
      unsigned long id = strtoul(p, &end, 10);
      if (end == p || errno || id > UINT32_MAX || (*end && *end != ','))
        die("generate: --prompt-ids: '%s' is not a comma-separated list of token ids",
            o->prompt_ids);
      token_ids_push(ids, (uint32_t)id);
      p = *end ? end + 1 : end;
    }
    return;
  }
  if (o->prompt)
    tok_encode(tok, o->prompt, strlen(o->prompt), false, ids);
  else
    chat_prompt(tok, o->chat, ids);
}

static void print_result(const Tokenizer *tok, const TokenIds *prompt, const GenerateResult *r) {
  Buf text = {0};
  stream_decoder_decode_all(tok, r->output_ids.data, r->output_ids.len, &text);
  json_t *p = json_array(), *out = json_array();
  for (size_t i = 0; i < prompt->len; i++) json_array_append_new(p, json_integer(prompt->data[i]));
  for (size_t i = 0; i < r->output_ids.len; i++)
    json_array_append_new(out, json_integer(r->output_ids.data[i]));
  json_t *line = json_pack("{s:o, s:o, s:s%, s:s}", "prompt_ids", p, "output_ids", out, "text",
                           text.data, text.len, "finish_reason", r->finish_reason);
  CHECK(line != NULL);
  char *s = json_dumps(line, JSON_COMPACT);
  puts(s);
  free(s);
  json_decref(line);
  buf_free(&text);
}

// The router diagnostics the flags ask for, checked against the runner and the prompt: false
// when none. probe->margins is allocated [layers, prompt] for --route-margins-out.
static bool route_probe(const GenerateOptions *o, DeviceKind device, const GptOssConfig *c,
                        size_t prompt_len, RouteProbe *probe) {
  if (!o->route_margins_out && o->flip_layer < 0) return false;
  if (device == DEVICE_CUDA || o->tensor_parallel * o->pipeline_parallel != 1)
    die("generate: --route-margins-out and --flip-route need one rank on the CPU: use "
        "--device cpu without -tp/-pp");
  if (o->flip_layer >= c->num_layers || o->flip_position >= (int64_t)prompt_len)
    die("generate: --flip-route %d:%d is outside the model (%d layers) or the prompt (%zu "
        "tokens)", o->flip_layer, o->flip_position, c->num_layers, prompt_len);
  *probe = (RouteProbe){.flip_layer = o->flip_layer, .flip_token = o->flip_position};
  if (o->route_margins_out)
    probe->margins = xmalloc((size_t)c->num_layers * prompt_len * sizeof *probe->margins);
  return true;
}

int generate_cmd_main(int argc, char **argv) {
  GenerateOptions o = parse_options(argc, argv);
  WeightsOptions wo = {.seed = o.seed};
  if (!weights_load_format_from_name(o.load_format, &wo.load_format))
    die("generate: --load-format '%s' is unknown; use auto, safetensors or dummy", o.load_format);
  const DeviceKind device =
      cli_device_and_formats("generate", o.device, o.weight_format, o.model, &wo);
  TokenIds prompt = {0};
  char err[1024];
  Tokenizer tok;  // loaded once: it encodes the prompt and decodes the output
  if (!tok_init(&tok, TOK_O200K_HARMONY, NULL, err, sizeof err)) die("generate: %s", err);
  prompt_tokens(&o, &tok, &prompt);

  RunnerOptions ro = {.model = o.model,
                      .weights = wo,
                      .tensor_parallel = o.tensor_parallel,
                      .pipeline_parallel = o.pipeline_parallel,
                      .num_threads = o.num_threads,
                      .device = device,
                      .max_num_tokens = prompt.len ? (int)prompt.len : 1};
  Runner *runner;
  if (!runner_create(&runner, &ro, err, sizeof err)) die("generate: %s", err);
  const int vocab = runner_config(runner)->vocab_size;
  float *logits = NULL;
  if (o.logits_out) logits = xmalloc(prompt.len * (size_t)vocab * sizeof *logits);
  RouteProbe probe;
  const bool probed = route_probe(&o, device, runner_config(runner), prompt.len, &probe);
  GenerateRequest req = {
      .prompt_ids = prompt.data,
      .num_prompt_ids = prompt.len,
      .max_tokens = o.max_tokens,
      .sampling = {.temperature = (float)o.temperature, .top_p = (float)o.top_p, .top_k = o.top_k},
      .seed = o.seed,
      .ignore_eos = o.ignore_eos,
      .prompt_logits = logits,
      .prefill_probe = probed ? &probe : NULL};
  GenerateResult result;
  if (!generate_run(runner, &req, &result, err, sizeof err)) die("generate: %s", err);
  if (o.logits_out &&
      !npy_write_f32(o.logits_out, logits, (int64_t)prompt.len, vocab, err, sizeof err))
    die("generate: --logits-out: %s", err);
  if (o.route_margins_out &&
      !npy_write_f32(o.route_margins_out, probe.margins, runner_config(runner)->num_layers,
                     (int64_t)prompt.len, err, sizeof err))
    die("generate: --route-margins-out: %s", err);
  print_result(&tok, &prompt, &result);
  tok_free(&tok);

  free(logits);
  if (probed) free(probe.margins);
  token_ids_free(&result.output_ids);
  token_ids_free(&prompt);
  runner_free(runner);
  return fflush(stdout) == 0 ? 0 : 1;
}
