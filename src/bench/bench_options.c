// bench_options.c: table-driven parsing of the `bench` flags. Every value is checked here, so the
// rest of the load generator can trust BenchOptions.
#include "bench/bench_options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench/dataset_select.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/fields.h"
#include "common/file.h"

typedef enum { KIND_STRING, KIND_INT, KIND_DOUBLE, KIND_U64, KIND_FLAG, KIND_LIST } OptionKind;

typedef struct {
  const char *name;  // without the leading "--"
  OptionKind kind;
  size_t offset;     // of the field in BenchOptions (for KIND_LIST: the char ** field)
  size_t count_offset;  // KIND_LIST only: the int count field
  double min, max;   // KIND_INT / KIND_DOUBLE: allowed range (inclusive)
} OptionSpec;

#define STR(flag, field) {flag, KIND_STRING, offsetof(BenchOptions, field), 0, 0, 0}
#define INT(flag, field, lo, hi) {flag, KIND_INT, offsetof(BenchOptions, field), 0, lo, hi}
#define DBL(flag, field, lo, hi) {flag, KIND_DOUBLE, offsetof(BenchOptions, field), 0, lo, hi}
#define FLAG(flag, field) {flag, KIND_FLAG, offsetof(BenchOptions, field), 0, 0, 0}
#define LIST(flag, field, count) \
  {flag, KIND_LIST, offsetof(BenchOptions, field), offsetof(BenchOptions, count), 0, 0}

static const OptionSpec OPTIONS[] = {
    STR("base-url", base_url),
    STR("host", host),
    INT("port", port, 1, 65535),
    STR("endpoint", endpoint),
    STR("endpoint-type", endpoint_type),
    STR("backend", backend),
    STR("model", model),
    STR("served-model-name", served_model_name),
    STR("tokenizer", tokenizer),
    STR("label", label),
    STR("dataset-name", dataset_name),
    STR("dataset-path", dataset_path),
    INT("num-prompts", num_prompts, 1, 1e8),
    INT("sharegpt-output-len", sharegpt_output_len, 1, 1e7),
    FLAG("no-oversample", no_oversample),
    INT("random-input-len", random_input_len, 1, 1e7),
    INT("random-output-len", random_output_len, 1, 1e7),
    DBL("random-range-ratio", random_range_ratio, 0, 0.999999),
    INT("random-prefix-len", random_prefix_len, 0, 1e7),
    INT("random-batch-size", random_batch_size, 1, 1e7),
    INT("sonnet-input-len", sonnet_input_len, 1, 1e7),
    INT("sonnet-output-len", sonnet_output_len, 1, 1e7),
    INT("sonnet-prefix-len", sonnet_prefix_len, 0, 1e7),
    INT("custom-output-len", custom_output_len, 1, 1e7),
    FLAG("custom-skip-chat-template", custom_skip_chat_template),
    INT("prefix-repetition-prefix-len", prefix_repetition_prefix_len, 0, 1e7),
    INT("prefix-repetition-suffix-len", prefix_repetition_suffix_len, 0, 1e7),
    INT("prefix-repetition-num-prefixes", prefix_repetition_num_prefixes, 1, 1e7),
    INT("prefix-repetition-output-len", prefix_repetition_output_len, 1, 1e7),
    {"seed", KIND_U64, offsetof(BenchOptions, seed), 0, 0, 0},
    DBL("request-rate", request_rate, 1e-9, INFINITY),
    DBL("burstiness", burstiness, 1e-9, 1e9),
    INT("max-concurrency", max_concurrency, 1, 1e7),
    STR("ramp-up-strategy", ramp_up_strategy),
    INT("ramp-up-start-rps", ramp_up_start_rps, 0, 1e9),
    INT("ramp-up-end-rps", ramp_up_end_rps, 0, 1e9),
    FLAG("ignore-eos", ignore_eos),
    DBL("temperature", temperature, 0, 1e3),
    DBL("top-p", top_p, 1e-9, 1),
    INT("top-k", top_k, -1, 1e7),
    DBL("min-p", min_p, 0, 1),
    STR("request-id-prefix", request_id_prefix),
    INT("logprobs", logprobs, 0, 1e6),
    LIST("header", header, num_header),
    FLAG("no-stream", no_stream),
    FLAG("use-beam-search", use_beam_search),
    STR("tokenizer-mode", tokenizer_mode),
    FLAG("trust-remote-code", trust_remote_code),
    STR("extra-body", extra_body_arg),
    STR("percentile-metrics", percentile_metrics),
    STR("metric-percentiles", metric_percentiles),
    LIST("goodput", goodput, num_goodput),
    INT("num-warmups", num_warmups, 0, 1e6),
    INT("ready-check-timeout-sec", ready_check_timeout_sec, 0, 1e7),
    DBL("request-timeout-sec", request_timeout_sec, 1e-3, 1e7),
    INT("num-client-threads", num_client_threads, 1, 64),
    FLAG("busy-poll", busy_poll),
    FLAG("save-result", save_result),
    FLAG("save-detailed", save_detailed),
    FLAG("append-result", append_result),
    STR("result-dir", result_dir),
    STR("result-filename", result_filename),
    LIST("metadata", metadata, num_metadata),
    FLAG("disable-tqdm", disable_tqdm),
};
#define NUM_OPTIONS (sizeof OPTIONS / sizeof *OPTIONS)

const char BENCH_OPTIONS_USAGE[] =
    "usage: gptoss-bench bench [options]   (flags and defaults of `vllm bench serve` v0.10.2)\n"
    "target:   --base-url URL | --host H (127.0.0.1) --port P (8000)   --endpoint (/v1/completions)\n"
    "          --backend vllm|openai|openai-chat (vllm: completions; openai-chat: chat)\n"
    "          --endpoint-type (the older spelling of --backend; must agree with it)\n"
    "          --model (default: first of GET /v1/models) --served-model-name --tokenizer --label\n"
    "workload: --dataset-name random|sharegpt|sonnet|burstgpt|custom|prefix_repetition (random)\n"
    "          --dataset-path FILE --num-prompts (1000) --seed (0) --no-oversample\n"
    "          --sharegpt-output-len N --random-input-len (1024) --random-output-len (128)\n"
    "          --random-range-ratio (0.0) --random-prefix-len (0) --random-batch-size (1 only)\n"
    "          --sonnet-input-len (550) --sonnet-output-len (150) --sonnet-prefix-len (200)\n"
    "          --custom-output-len (256) --custom-skip-chat-template\n"
    "          --prefix-repetition-prefix-len (256) --prefix-repetition-suffix-len (256)\n"
    "          --prefix-repetition-num-prefixes (10) --prefix-repetition-output-len (128)\n"
    "traffic:  --request-rate (inf) --burstiness (1.0 = Poisson) --max-concurrency N\n"
    "          --ramp-up-strategy linear|exponential --ramp-up-start-rps N --ramp-up-end-rps N\n"
    "sampling: --ignore-eos --temperature (0.0) --top-p --top-k --min-p --logprobs N\n"
    "          --request-id-prefix --header KEY=VALUE ...\n"
    "          --extra-body JSON|@FILE (an object merged into every request body)\n"
    "no effect, as in vLLM here: --no-stream --use-beam-search --trust-remote-code\n"
    "          --tokenizer-mode auto   (README.md lists every vLLM flag and its status)\n"
    "metrics:  --percentile-metrics (ttft,tpot,itl) --metric-percentiles (99)\n"
    "          --goodput ttft:MS tpot:MS e2el:MS --num-warmups (0) --ready-check-timeout-sec (600)\n"
    "          --request-timeout-sec (21600) --num-client-threads (1) --busy-poll\n"
    "results:  --save-result --save-detailed --append-result --result-dir DIR\n"
    "          --result-filename NAME --metadata KEY=VALUE ... --disable-tqdm\n";

static void set_defaults(BenchOptions *o) {
  *o = (BenchOptions){
      .host = "127.0.0.1",
      .port = 8000,
      .endpoint = "/v1/completions",
      .dataset_name = "random",
      .num_prompts = 1000,
      .sharegpt_output_len = -1,
      .random_input_len = 1024,
      .random_output_len = 128,
      .random_batch_size = 1,
      .sonnet_input_len = 550,
      .sonnet_output_len = 150,
      .sonnet_prefix_len = 200,
      .custom_output_len = 256,
      .prefix_repetition_prefix_len = 256,
      .prefix_repetition_suffix_len = 256,
      .prefix_repetition_num_prefixes = 10,
      .prefix_repetition_output_len = 128,
      .request_rate = INFINITY,
      .burstiness = 1.0,
      .temperature = NAN,
      .top_p = NAN,
      .top_k = -1,
      .min_p = NAN,
      .request_id_prefix = "benchmark-serving",
      .ramp_up_start_rps = -1,
      .ramp_up_end_rps = -1,
      .logprobs = -1,
      .tokenizer_mode = "auto",
      .percentile_metrics = "ttft,tpot,itl",
      .metric_percentiles = "99",
      .ready_check_timeout_sec = 600,
      .request_timeout_sec = 6 * 60 * 60,
      .num_client_threads = 1,
  };
}

// vLLM v0.10.2 flags gptoss-bench refuses, and why (never accepted and ignored).
#define HF_WHY                                                                                   \
  "it belongs to --dataset-name hf, and hub downloads are not supported: vLLM fetches the data " \
  "from the Hugging Face hub, and gptoss-bench has no hub client or network access; use a "      \
  "local file with --dataset-name custom or sharegpt"
#define MM_WHY                                                                               \
  "it belongs to --dataset-name random-mm, and multimodal requests (images, video) are not " \
  "supported: GPT-OSS is text only"
#define SPEC_BENCH_WHY                                                                        \
  "it belongs to --dataset-name spec_bench, which gptoss-bench does not implement; convert " \
  "the questions to {\"prompt\"} lines and use --dataset-name custom --custom-output-len N"
#define BLAZEDIT_WHY                                                                           \
  "it belongs to vLLM's hub dataset vdaita/edit_5k_char (--dataset-name hf), and hub downloads " \
  "are not supported: gptoss-bench has no hub client or network access"
static const struct {
  const char *name, *why;
} REFUSED[] = {
    {"profile", "it starts and stops vLLM's torch profiler through the server's /start_profile "
                "and /stop_profile routes, which gptoss-engine and other servers lack; profile the "
                "server itself (perf, nsys)"},
    {"lora-modules", "LoRA adapters are not benchmarked by gptoss-bench (GPT-OSS serving in the "
                     "study has none); give the adapter's name as --model instead"},
    {"hf-subset", HF_WHY},
    {"hf-split", HF_WHY},
    {"hf-name", HF_WHY},
    {"hf-output-len", HF_WHY},
    {"random-mm-base-items-per-request", MM_WHY},
    {"random-mm-num-mm-items-range-ratio", MM_WHY},
    {"random-mm-limit-mm-per-prompt", MM_WHY},
    {"random-mm-bucket-config", MM_WHY},
    {"spec-bench-output-len", SPEC_BENCH_WHY},
    {"spec-bench-category", SPEC_BENCH_WHY},
    {"blazedit-min-distance", BLAZEDIT_WHY},
    {"blazedit-max-distance", BLAZEDIT_WHY},
};

static bool refused(const char *normal, char *err, size_t err_size) {
  for (size_t i = 0; i < sizeof REFUSED / sizeof *REFUSED; i++)
    if (strcmp(REFUSED[i].name, normal) == 0) {
      snprintf(err, err_size, "--%s is not supported: %s", REFUSED[i].name, REFUSED[i].why);
      return true;
    }
  return false;
}

// name[0, len) with '_' read as '-' (vLLM's --x_y is --x-y) into out; "" when it is too long to
// be any flag.
static void normal_name(const char *name, size_t len, char *out, size_t out_size) {
  if (len >= out_size) len = 0;
  for (size_t i = 0; i < len; i++) out[i] = name[i] == '_' ? '-' : name[i];
  out[len] = '\0';
}

static const OptionSpec *find_option(const char *normal) {
  for (size_t i = 0; i < NUM_OPTIONS; i++)
    if (strcmp(OPTIONS[i].name, normal) == 0) return &OPTIONS[i];
  return NULL;
}

static bool parse_number(const OptionSpec *spec, const char *value, void *field, char *err,
                         size_t err_size) {
  char *end;
  errno = 0;
  if (spec->kind == KIND_U64) {
    unsigned long long v = strtoull(value, &end, 10);
    if (*value == '-' || end == value || *end || errno) goto bad;
    *(uint64_t *)field = v;
    return true;
  }
  double v = strtod(value, &end);
  if (end == value || *end || errno || isnan(v)) goto bad;
  if (spec->kind == KIND_INT && v != floor(v)) goto bad;
  if (v < spec->min || v > spec->max) {
    snprintf(err, err_size, "--%s %s is out of range: use a value from %g to %g", spec->name, value,
             spec->min, spec->max);
    return false;
  }
  if (spec->kind == KIND_INT) *(int *)field = (int)v;
  else *(double *)field = v;
  return true;
bad:
  snprintf(err, err_size, "--%s: '%s' is not %s", spec->name, value,
           spec->kind == KIND_DOUBLE ? "a number" : "a non-negative integer");
  return false;
}

// Whether two request formats are the same: vllm and openai both send completions.
static bool same_format(const char *a, const char *b) {
  const bool chat_a = strcmp(a, "openai-chat") == 0, chat_b = strcmp(b, "openai-chat") == 0;
  return chat_a == chat_b;
}

// --backend picks the request format, as `vllm bench serve --backend openai-chat` does in the
// study's command lines; --endpoint-type is its older spelling. Either may be given, both only
// when they agree; neither: vllm (completions). Sets both fields.
static bool resolve_backend(BenchOptions *o, char *err, size_t err_size) {
  static const char *const supported[] = {"vllm", "openai", "openai-chat"};
  const char *const given[][2] = {{"--backend", o->backend}, {"--endpoint-type", o->endpoint_type}};
  for (size_t g = 0; g < 2; g++) {
    bool ok = given[g][1] == NULL;
    for (size_t i = 0; !ok && i < 3; i++) ok = strcmp(given[g][1], supported[i]) == 0;
    if (!ok) {
      snprintf(err, err_size,
               "%s '%s' is not supported: gptoss-bench speaks the OpenAI-compatible APIs only; use "
               "vllm or openai (completions: prompt) or openai-chat (chat completions: messages)",
               given[g][0], given[g][1]);
      return false;
    }
  }
  if (o->backend && o->endpoint_type && !same_format(o->backend, o->endpoint_type)) {
    snprintf(err, err_size,
             "--backend %s and --endpoint-type %s ask for different request formats: give one "
             "(--endpoint-type is the older name of --backend)",
             o->backend, o->endpoint_type);
    return false;
  }
  if (!o->backend) o->backend = o->endpoint_type ? o->endpoint_type : "vllm";
  if (!o->endpoint_type) o->endpoint_type = strcmp(o->backend, "vllm") == 0 ? "openai" : o->backend;
  return true;
}

static bool check_choices(BenchOptions *o, char *err, size_t err_size) {
  if (!resolve_backend(o, err, err_size)) return false;
  if (!dataset_check_options(o, err, err_size)) return false;
  if (o->endpoint[0] != '/') {
    snprintf(err, err_size, "--endpoint '%s' must start with '/' (e.g. /v1/completions)", o->endpoint);
    return false;
  }
  return true;
}

// --ramp-up-*: vLLM v0.10.2's checks and messages, plus ours: a rate flag without the strategy
// (vLLM ignores it) and linear from 0 (vLLM divides by zero on request 0).
static bool check_ramp_up(const BenchOptions *o, char *err, size_t err_size) {
  const char *why = NULL;
  const bool start = o->ramp_up_start_rps >= 0, end = o->ramp_up_end_rps >= 0;
  if (!o->ramp_up_strategy) {
    if (start || end)
      why = "--ramp-up-start-rps and --ramp-up-end-rps go with --ramp-up-strategy linear|"
            "exponential";
  } else if (strcmp(o->ramp_up_strategy, "linear") != 0 &&
             strcmp(o->ramp_up_strategy, "exponential") != 0) {
    snprintf(err, err_size, "--ramp-up-strategy '%s' is not supported: use linear or exponential",
             o->ramp_up_strategy);
    return false;
  } else if (!isinf(o->request_rate)) {
    why = "When using ramp-up, do not specify --request-rate. The request rate will be "
          "controlled by ramp-up parameters. Please remove the --request-rate argument.";
  } else if (!start || !end) {
    why = "When using --ramp-up-strategy, both --ramp-up-start-rps and --ramp-up-end-rps must "
          "be specified";
  } else if (o->ramp_up_start_rps > o->ramp_up_end_rps) {
    why = "Ramp-up start RPS must be less than end RPS";
  } else if (o->ramp_up_start_rps == 0) {
    why = strcmp(o->ramp_up_strategy, "exponential") == 0
              ? "For exponential ramp-up, the start RPS cannot be 0."
              : "--ramp-up-start-rps 0: request 0 would be paced at 0 requests/s (vLLM v0.10.2 "
                "divides by zero there); start at 1 or more";
  }
  if (why) snprintf(err, err_size, "%s", why);
  return why == NULL;
}

// Flags accepted with no effect must not hide a request for something gptoss-bench cannot do.
static bool check_accepted(const BenchOptions *o, char *err, size_t err_size) {
  if (strcmp(o->tokenizer_mode, "auto") == 0) return true;
  snprintf(err, err_size,
           "--tokenizer-mode %s is not supported: gptoss-bench counts tokens with GPT-OSS's "
           "o200k_harmony tokenizer only (mode auto)",
           o->tokenizer_mode);
  return false;
}

// --header KEY=VALUE -> "KEY: VALUE" lines for the client, split at the first '=' and stripped
// as later vLLM does; a header named like a built-in one (Authorization) replaces it.
static bool make_header_lines(BenchOptions *o, char *err, size_t err_size) {
  if (o->num_header == 0) return true;  // nothing to free then, as before --header existed
  o->header_lines = xcalloc((size_t)o->num_header, sizeof *o->header_lines);
  for (int i = 0; i < o->num_header; i++) {
    const char *h = o->header[i], *eq = strchr(h, '='), *key = h, *value = eq ? eq + 1 : "";
    size_t key_len = eq ? fields_trim(&key, (size_t)(eq - h)) : 0;
    size_t value_len = fields_trim(&value, strlen(value));
    bool ok = key_len > 0;
    for (size_t k = 0; ok && k < key_len; k++) ok = key[k] > ' ' && key[k] < 127 && key[k] != ':';
    if (!ok || strpbrk(h, "\r\n")) {
      snprintf(err, err_size, "--header '%s': use KEY=VALUE (a header name, '=', its value)", h);
      return false;
    }
    Buf line = {0};
    buf_printf(&line, "%.*s: %.*s", (int)key_len, key, (int)value_len, value);
    o->header_lines[i] = line.data;
  }
  return true;
}

// --extra-body: the JSON text (or @FILE's) parsed once into o, which must be one object.
static bool load_extra_body(BenchOptions *o, char *err, size_t err_size) {
  const char *given = o->extra_body_arg;
  if (!given) return true;
  Buf text = {0};
  if (given[0] == '@') {
    char ferr[512];
    if (!file_read_all(given + 1, &text, ferr, sizeof ferr)) {
      snprintf(err, err_size, "--extra-body %s: %s", given, ferr);
      return false;
    }
  } else {
    buf_append_str(&text, given);
  }
  cJSON *root = cJSON_Parse(text.data ? text.data : "");
  buf_free(&text);
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    snprintf(err, err_size,
             "--extra-body %.200s: not a JSON object (give e.g. '{\"logit_bias\": {\"13\": -100}}' "
             "or @FILE holding one)",
             given);
    return false;
  }
  o->extra_body = root;
  return true;
}

bool bench_options_parse(BenchOptions *o, int argc, char **argv, char *err, size_t err_size) {
  set_defaults(o);
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strncmp(arg, "--", 2) != 0) {
      snprintf(err, err_size, "unexpected argument '%s' (flags start with --)", arg);
      return false;
    }
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
    char normal[64];
    normal_name(name, name_len, normal, sizeof normal);
    const OptionSpec *spec = find_option(normal);
    if (!spec && refused(normal, err, err_size)) return false;
    if (!spec) {
      snprintf(err, err_size, "unknown flag '%.*s' (gptoss-bench bench --help lists them)",
               (int)(name_len + 2), arg);
      return false;
    }
    void *field = (char *)o + spec->offset;
    if (spec->kind == KIND_FLAG) {
      if (eq) {
        snprintf(err, err_size, "--%s takes no value", spec->name);
        return false;
      }
      *(bool *)field = true;
      continue;
    }
    if (spec->kind == KIND_LIST) {  // values up to the next flag, like argparse's nargs
      char ***list = field;
      int *count = (int *)((char *)o + spec->count_offset);
      if (eq) {
        *list = xrealloc(*list, (size_t)(*count + 1) * sizeof **list);
        (*list)[(*count)++] = (char *)eq + 1;
      }
      for (; i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0; i++) {
        *list = xrealloc(*list, (size_t)(*count + 1) * sizeof **list);
        (*list)[(*count)++] = argv[i + 1];
      }
      if (*count == 0) {
        snprintf(err, err_size, "--%s needs at least one value", spec->name);
        return false;
      }
      continue;
    }
    const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
    if (!value) {
      snprintf(err, err_size, "--%s needs a value", spec->name);
      return false;
    }
    if (spec->kind == KIND_STRING) *(const char **)field = value;
    else if (!parse_number(spec, value, field, err, err_size)) return false;
  }
  return check_choices(o, err, err_size) && check_ramp_up(o, err, err_size) &&
         check_accepted(o, err, err_size) && make_header_lines(o, err, err_size) &&
         load_extra_body(o, err, err_size);
}

void bench_options_free(BenchOptions *o) {
  free(o->goodput);
  free(o->metadata);
  for (int i = 0; o->header_lines && i < o->num_header; i++) free(o->header_lines[i]);
  free(o->header_lines);
  free(o->header);
  o->header = o->header_lines = NULL;
  o->num_header = 0;
  cJSON_Delete(o->extra_body);
  o->extra_body = NULL;
  o->goodput = o->metadata = NULL;
  o->num_goodput = o->num_metadata = 0;
}
