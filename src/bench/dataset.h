// dataset.h: the prompts of a workload, as vLLM v0.10.2's `bench serve` builds them (spec
// vllm-bench.md section 5): a ShareGPT file filtered, shuffled and sampled, or the random
// dataset of consecutive token ids. Lengths are counted with the client's tokenizer. Errors
// come back as messages naming the file or flag and the fix; nothing here prints or exits.
//
// Where we differ from vLLM, on purpose:
//  - Shuffles and draws use our Rng (bench/rng.h) seeded with --seed, not CPython's or numpy's
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
  const char *name;        // "sharegpt", "sharegpt-synth" or "random": for the result JSON
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

void dataset_free(Dataset *d);

#endif
