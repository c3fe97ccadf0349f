// sharegpt_synth.h: a synthetic stand-in for ShareGPT_V3_unfiltered_cleaned_split.json: the same
// JSON layout, real prose cut at sentence or word ends, and prompt/answer token lengths drawn
// so that vLLM's ShareGPT filter and a 1000-prompt sample land near the study's ShareGPT
// workload (215,312 input tokens, about 196 output tokens per request). It builds the JSON only;
// reading sources and writing the file belong to the caller (dataset_cmd.c).
#ifndef GB_BENCH_SHAREGPT_SYNTH_H
#define GB_BENCH_SHAREGPT_SYNTH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/prose.h"
#include "text/tokenizer.h"

typedef struct {
  size_t num_conversations;  // entries in the list, usable or not
  uint64_t seed;             // same seed, corpus and tokenizer: the same file
} SynthParams;

// A JSON list of {"id": "synth-NNNNN", "conversations": [{"from": "human", "value": ...},
// {"from": "gpt", "value": ...}, ...]} (new reference). Lengths are token targets under tok.
json_t *synth_sharegpt(const SynthParams *p, const ProseCorpus *corpus, const Tokenizer *tok);

#endif
