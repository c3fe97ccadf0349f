// llama_greedy.cpp: greedy decoding with llama.cpp's library (libllama, the peer's own model
// code), for scripts/peer-greedy.py. llama-server cannot serve this: it parses every answer as
// chat text and fails on the invalid UTF-8 that random weights produce.
//
//   llama_greedy MODEL.gguf THREADS NUM_TOKENS < prompts
//
// Each input line is one prompt, token ids separated by commas. For each, the prompt is decoded
// in one batch, then NUM_TOKENS tokens greedily (argmax of the logits, EOS not special), with a
// float32 KV cache and no flash attention, so only the order of float32 sums differs from our
// engine's f32 path. One output line per prompt:
//   {"ids": [...], "top2": [[id, logit, id, logit], ...]}   (top-2 at every generated position)
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

static void quiet_log(ggml_log_level level, const char *text, void *) {
  if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: llama_greedy MODEL.gguf THREADS NUM_TOKENS < prompts\n");
    return 2;
  }
  const int threads = atoi(argv[2]), num_tokens = atoi(argv[3]);
  llama_log_set(quiet_log, nullptr);
  llama_backend_init();
  llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (!model) {
    fprintf(stderr, "llama_greedy: cannot load %s\n", argv[1]);
    return 1;
  }
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 4096;
  cp.n_batch = 4096;
  cp.n_ubatch = 4096;
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context *ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    fprintf(stderr, "llama_greedy: cannot create a context\n");
    return 1;
  }
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<llama_token> tokens;
    std::stringstream in(line);
    for (std::string id; std::getline(in, id, ',');) tokens.push_back(std::stoi(id));
    if (tokens.empty()) continue;
    llama_memory_clear(llama_get_memory(ctx), true);
    std::string ids, top2;
    llama_batch batch = llama_batch_get_one(tokens.data(), (int32_t)tokens.size());
    for (int step = 0; step < num_tokens; step++) {
      if (llama_decode(ctx, batch) != 0) {
        fprintf(stderr, "llama_greedy: llama_decode failed\n");
        return 1;
      }
      const float *logits = llama_get_logits_ith(ctx, -1);
      int best = 0, second = 1;
      if (logits[second] > logits[best]) std::swap(best, second);
      for (int i = 2; i < vocab; i++) {
        if (logits[i] > logits[best]) {
          second = best;
          best = i;
        } else if (logits[i] > logits[second]) {
          second = i;
        }
      }
      char entry[128];
      snprintf(entry, sizeof entry, "%s[%d, %.9g, %d, %.9g]", step ? ", " : "", best, logits[best],
               second, logits[second]);
      top2 += entry;
      ids += (step ? ", " : "") + std::to_string(best);
      tokens.assign(1, best);
      batch = llama_batch_get_one(tokens.data(), 1);
    }
    printf("{\"ids\": [%s], \"top2\": [%s]}\n", ids.c_str(), top2.c_str());
    fflush(stdout);
  }
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
