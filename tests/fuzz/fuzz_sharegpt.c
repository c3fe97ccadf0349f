// fuzz_sharegpt.c: libFuzzer target for the ShareGPT loader (dataset_load_sharegpt in
// src/bench/dataset.c: Jansson, the entry checks, vLLM's filter, oversampling). Input: the
// file's bytes, read through a path (fuzz_util.h's in-memory file). Loaded twice, with
// answer-length filtering and oversampling, then with a fixed output length and no
// oversampling. A load must give the prompts asked for, each inside vLLM's length filter;
// a failure must say why.
#include "bench/dataset.h"
#include "fuzz_util.h"

static void load(const char *path, size_t num_requests, int64_t output_len, bool no_oversample) {
  ShareGptParams p = {.path = path,
                      .num_requests = num_requests,
                      .seed = 1,
                      .output_len = output_len,
                      .no_oversample = no_oversample};
  Dataset d;
  char err[1024] = "";
  if (!dataset_load_sharegpt(&p, fuzz_tokenizer(), &d, err, sizeof err)) {
    fuzz_require(err[0] != '\0', "a failure has a message");
    return;
  }
  fuzz_require(d.num_requests == num_requests, "as many prompts as asked for");
  for (size_t i = 0; i < d.num_requests; i++) {
    const BenchRequest *r = &d.requests[i];
    fuzz_require(r->prompt != NULL, "every request has a prompt");
    fuzz_require(r->prompt_len >= DATASET_MIN_LEN && r->prompt_len <= DATASET_MAX_PROMPT_LEN,
                 "prompt lengths pass the filter");
  }
  dataset_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_input_file(data, size);
  load(path, 3, -1, false);
  load(path, 2, 16, true);
  return 0;
}
