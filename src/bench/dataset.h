// dataset.h: the prompts of a workload, as vLLM v0.10.2's `bench serve` builds them (spec
// vllm-bench.md section 5): a ShareGPT file filtered, shuffled and sampled, the random dataset of
// consecutive token ids, and the sonnet, burstgpt, custom and prefix_repetition datasets
// (dataset_sonnet.c, dataset_burstgpt.c, dataset_custom.c, dataset_prefix_repetition.c). Lengths are counted with the client's tokenizer. Errors
// come back as messages naming the file or flag and the fix; nothing here prints or exits.
//
// Where we differ from vLLM, on purpose:
//  - Shuffles and draws (CPython's random.shuffle/choices, numpy's randint, pandas' sample) use
//    our Rng (bench/rng.h) seeded with --seed, not CPython's or numpy's
//    generators: the same seed always picks the same prompts here, but not the ones vLLM picks.
//  - --no-oversample with too few usable conversations is an error that says how many were
//    found (vLLM quietly sends fewer); without it, missing prompts are drawn with replacement
//    from the usable ones, as vLLM does, and num_oversampled says how many.
//  - The tokenizer is o200k_harmony (GPT-OSS's), which adds no BOS: add_special_tokens=True
//    adds nothing, and special-token text inside a prompt counts as one token, as in HF.
#ifndef GB_BENCH_DATASET_H
#define GB_BENCH_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/bench_types.h"
#include "text/tokenizer.h"

// Conversation ids of `gptoss-bench dataset sharegpt-synth` files start with this; a workload
// made only of such conversations is named "sharegpt-synth" so that its results say so.
#define DATASET_SYNTH_ID_PREFIX "synth-"

// vLLM's ShareGPT filter (is_valid_sequence): prompts and answers under 4 tokens, prompts over
// 1024 and prompt + answer over 2048 are dropped.
enum {
  DATASET_MIN_LEN = 4,
  DATASET_MAX_PROMPT_LEN = 1024,
  DATASET_MAX_TOTAL_LEN = 2048,
};

typedef struct {
  BenchRequest *requests;  // [num_requests] (owned), request i gets id <prefix><i>
  size_t num_requests;
  size_t num_oversampled;  // the last ones repeat earlier ones (vLLM's oversampling); usually 0
  const char *name;        // "sharegpt", "sharegpt-synth", "random", "sonnet", "burstgpt",
                           // "custom" or "prefix_repetition": for the result JSON
} Dataset;

typedef struct {
  const char *path;     // --dataset-path: ShareGPT JSON (a list of {"id", "conversations"})
  size_t num_requests;  // --num-prompts
  uint64_t seed;        // --seed
  int64_t output_len;   // --sharegpt-output-len; < 0: each conversation's answer length
  bool no_oversample;   // --no-oversample
} ShareGptParams;

typedef struct {
  size_t num_requests;  // --num-prompts
  uint32_t input_len;   // --random-input-len (vLLM default 1024)
  uint32_t output_len;  // --random-output-len (128)
  double range_ratio;   // --random-range-ratio, in [0, 1) (0)
  uint32_t prefix_len;  // --random-prefix-len (0)
  uint64_t seed;        // --seed
} RandomParams;

// Inclusive length bounds the random dataset draws from (vLLM logs them before sampling).
typedef struct {
  uint32_t input_lo, input_hi;
  uint32_t output_lo, output_hi;
} RandomBounds;

// Ids the random dataset draws from: [0, DATASET_RANDOM_VOCAB_SIZE), HF's tokenizer.vocab_size
// for GPT-OSS (the 199,998 ordinary ranks; special tokens excluded).
#define DATASET_RANDOM_VOCAB_SIZE ((uint32_t)TOK_STARTOFTEXT)

// ShareGPT, vLLM's steps: keep entries with at least two turns; shuffle them with seed; walk
// them taking turn 0 as the prompt and turn 1 as the answer (the "from" roles are not checked),
// dropping pairs that fail the filter above, until num_requests are kept.
bool dataset_load_sharegpt(const ShareGptParams *p, const Tokenizer *tok, Dataset *out, char *err,
                           size_t err_size);

// False (with a message naming the flag) when range_ratio is outside [0, 1) or output_len is 0.
bool dataset_random_bounds(const RandomParams *p, RandomBounds *out, char *err, size_t err_size);

// Random: request i is prefix + the ids (offset_i + i + j) mod DATASET_RANDOM_VOCAB_SIZE for
// j < input_len_i (consecutive ids from a random start), decoded to text, re-encoded, cut to
// prefix_len + input_len_i tokens and decoded again; prompt_len is the length of that cut, which
// can be below the target when re-encoding merges tokens (v0.10.2 does not pad). Draw order:
// all input lengths, all output lengths, all offsets, then the prefix ids.
bool dataset_make_random(const RandomParams *p, const Tokenizer *tok, Dataset *out, char *err,
                         size_t err_size);

// Sonnet (vLLM's SonnetDataset): the poem's lines (each with its "\n"), their mean token count,
// and base = "Pick as many lines as you can from these poem lines:\n". base_offset is the token
// count of base in the chat template; input_len must exceed it. Each prompt is base, the first
// round((prefix_len - base_offset) / mean) lines (at least 0), then round((input_len -
// base_offset) / mean) minus that many lines drawn with replacement; a prompt whose templated
// form has more than input_len tokens is drawn again. prompt_len is the templated form's count;
// the prompt sent is the templated text when formatted (vLLM: every endpoint but openai-chat),
// else the plain text. Python's round() rounds halves to even, and so do we.
typedef struct {
  const char *path;     // --dataset-path, else dataset_default_sonnet_path()
  size_t num_requests;  // --num-prompts
  uint32_t input_len;   // --sonnet-input-len (550)
  uint32_t output_len;  // --sonnet-output-len (150)
  uint32_t prefix_len;  // --sonnet-prefix-len (200)
  bool formatted;       // send the chat-templated text (vLLM: all but --backend openai-chat)
  uint64_t seed;        // --seed
} SonnetParams;

// Lines a sonnet prompt is built from (dataset_sonnet_layout, for the log and the tests).
typedef struct {
  double mean_line_len;     // tokens per line, averaged over the file
  uint32_t base_offset;     // tokens of the templated instruction alone
  size_t num_input_lines;   // lines in each prompt
  size_t num_prefix_lines;  // of which the fixed first lines of the file
} SonnetLayout;

// datasets/sonnet.txt next to the binary (found like the tokenizer file), else that relative path.
const char *dataset_default_sonnet_path(void);
bool dataset_make_sonnet(const SonnetParams *p, const Tokenizer *tok, Dataset *out,
                         SonnetLayout *layout, char *err, size_t err_size);

// BurstGPT (vLLM's BurstGPTDataset): a CSV with a header naming the columns "Model",
// "Request tokens" and "Response tokens"; rows with Model == "GPT-4" and Response tokens > 0 are
// kept; num_requests of them are drawn without replacement (with replacement when there are
// fewer), like pandas' DataFrame.sample; request i's prompt is the ids (i + j) mod
// DATASET_RANDOM_VOCAB_SIZE for j < Request tokens, decoded, with prompt_len = Request tokens
// (not re-counted, as in vLLM) and expected_output_len = Response tokens.
typedef struct {
  const char *path;     // --dataset-path
  size_t num_requests;  // --num-prompts
  uint64_t seed;        // --seed
} BurstGptParams;

bool dataset_load_burstgpt(const BurstGptParams *p, const Tokenizer *tok, Dataset *out, char *err,
                           size_t err_size);

// Custom (vLLM's CustomDataset): a .jsonl file, one object with a string "prompt" per line;
// shuffled with seed, each prompt put through the chat template unless skip_chat_template, its
// tokens counted, expected_output_len = output_len; no filter; oversampled as ShareGPT is.
typedef struct {
  const char *path;         // --dataset-path, must end in .jsonl (vLLM's rule)
  size_t num_requests;      // --num-prompts
  uint32_t output_len;      // --custom-output-len (256)
  bool skip_chat_template;  // --custom-skip-chat-template
  bool no_oversample;       // --no-oversample
  uint64_t seed;            // --seed
} CustomParams;

bool dataset_load_custom(const CustomParams *p, const Tokenizer *tok, Dataset *out, char *err,
                         size_t err_size);

// Prefix repetition (vLLM's PrefixRepetitionRandomDataset): num_prefixes prefixes of prefix_len
// tokens, each followed by num_requests / num_prefixes (floor; at least 1) suffixes of suffix_len
// tokens; the requests are then shuffled. A piece of n tokens: n ids uniform in
// [0, DATASET_RANDOM_VOCAB_SIZE), decoded and re-encoded; more than n tokens are cut to n, fewer
// are topped up by a new piece of the missing length. prompt = decode(prefix + suffix) and
// prompt_len = prefix_len + suffix_len. So num_prefixes * floor(num_requests / num_prefixes)
// requests are made, which can be fewer than num_requests (vLLM does the same).
typedef struct {
  size_t num_requests;    // --num-prompts
  uint32_t prefix_len;    // --prefix-repetition-prefix-len (256)
  uint32_t suffix_len;    // --prefix-repetition-suffix-len (256)
  uint32_t num_prefixes;  // --prefix-repetition-num-prefixes (10)
  uint32_t output_len;    // --prefix-repetition-output-len (128)
  uint64_t seed;          // --seed
} PrefixRepetitionParams;

bool dataset_make_prefix_repetition(const PrefixRepetitionParams *p, const Tokenizer *tok,
                                    Dataset *out, char *err, size_t err_size);

void dataset_free(Dataset *d);

#endif
