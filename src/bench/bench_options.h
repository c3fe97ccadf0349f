// bench_options.h: the flags of `gptoss-bench bench`, with `vllm bench serve` v0.10.2's names and
// defaults (spec vllm-bench.md section 7), parsed and validated. Knows nothing of how they are used.
#ifndef GB_BENCH_BENCH_OPTIONS_H
#define GB_BENCH_BENCH_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  // target server
  const char *base_url;       // NULL: http://{host}:{port}
  const char *host;           // 127.0.0.1
  int port;                   // 8000
  const char *endpoint;       // /v1/completions
  const char *endpoint_type;  // the request format: openai (completions) | openai-chat |
                              // vllm (= completions); from --backend unless given itself
  const char *backend;        // vllm (default) | openai | openai-chat: picks the format
  const char *model;          // NULL: the first id of GET /v1/models
  const char *served_model_name;
  const char *tokenizer;      // recorded as tokenizer_id; we always count with o200k_harmony
  const char *label;
  // workload
  const char *dataset_name;   // random | sharegpt | sonnet | burstgpt | custom | prefix_repetition
  const char *dataset_path;
  int num_prompts;            // 1000
  int sharegpt_output_len;    // -1: the dataset's answer length
  bool no_oversample;         // too few usable ShareGPT conversations is an error, not a resample
  int random_input_len;       // 1024
  int random_output_len;      // 128
  double random_range_ratio;  // 0.0, in [0, 1)
  int random_prefix_len;      // 0
  int random_batch_size;      // 1 (above 1 is refused: embeddings only)
  int sonnet_input_len;       // 550
  int sonnet_output_len;      // 150
  int sonnet_prefix_len;      // 200
  int custom_output_len;      // 256
  bool custom_skip_chat_template;
  int prefix_repetition_prefix_len;    // 256
  int prefix_repetition_suffix_len;    // 256
  int prefix_repetition_num_prefixes;  // 10
  int prefix_repetition_output_len;    // 128
  uint64_t seed;              // 0
  // traffic
  double request_rate;        // INFINITY: all at once
  double burstiness;          // 1.0: Poisson
  int max_concurrency;        // 0: no cap (vLLM's None)
  const char *ramp_up_strategy;  // NULL | linear | exponential (needs request_rate inf)
  int ramp_up_start_rps;         // -1 when not given
  int ramp_up_end_rps;           // -1 when not given
  // sampling (NAN / -1: not sent)
  bool ignore_eos;
  double temperature;         // unset: 0.0 is sent, as vLLM does
  double top_p;
  int top_k;
  double min_p;
  const char *request_id_prefix;  // benchmark-serving
  int logprobs;               // -1: not given ("logprobs": null is sent, as vLLM does)
  char **header;              // [num_header] --header KEY=VALUE (later vLLM's flag)
  int num_header;
  char **header_lines;        // [num_header] "KEY: VALUE" of each, owned
  // accepted with no effect, as in vLLM for the datasets and tokenizer gptoss-bench uses
  bool no_stream;             // hub datasets' loading mode
  bool use_beam_search;       // unused in vLLM v0.10.2 too
  const char *tokenizer_mode; // auto only
  bool trust_remote_code;     // no tokenizer code is loaded
  // --extra-body JSON or @FILE: a JSON object merged into every request body (its keys replace
  // ours): the flag's value, and the object parsed once, owned (NULL when not given)
  const char *extra_body_arg;
  struct cJSON *extra_body;
  // measurement
  const char *percentile_metrics;  // ttft,tpot,itl
  const char *metric_percentiles;  // 99
  char **goodput;                  // [num_goodput] "ttft:500"
  int num_goodput;
  int num_warmups;                 // 0
  int ready_check_timeout_sec;     // 600 (0: skip the check, as vLLM >= 0.11 does)
  double request_timeout_sec;      // ours: per request, 6 hours like aiohttp's default in vLLM
  int num_client_threads;          // ours: 1
  bool busy_poll;                  // ours: the client spins instead of sleeping (ClientOptions)
  // output
  bool save_result;
  bool save_detailed;
  bool append_result;
  const char *result_dir;
  const char *result_filename;
  char **metadata;  // [num_metadata] "KEY=VALUE"
  int num_metadata;
  bool disable_tqdm;
} BenchOptions;

// Fills o from argv (argv[0] is the subcommand's name). Returns false with a message naming the
// flag and what it accepts. `--x_y` and `--x-y` are the same flag; `--flag=value` works.
bool bench_options_parse(BenchOptions *o, int argc, char **argv, char *err, size_t err_size);
void bench_options_free(BenchOptions *o);

// The usage text.
extern const char BENCH_OPTIONS_USAGE[];

#endif
