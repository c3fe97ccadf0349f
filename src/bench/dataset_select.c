// dataset_select.c: picks the dataset loader for --dataset-name, fills its parameters from the
// flags and prints vLLM's lines about the workload (see dataset_select.h). Knows no dataset's
// rules: those are in dataset*.c.
#include "bench/dataset_select.h"

#include <string.h>

static const char *const NEED_PATH[] = {"sharegpt", "burstgpt", "custom"};

// Dataset names of vLLM v0.10.2 that gptoss-bench refuses, and why.
static const struct {
  const char *name, *why;
} REFUSED[] = {
    {"hf", "hub downloads are not supported: vLLM's hf dataset downloads a known Hugging Face hub "
           "id (--dataset-path ID with --hf-subset/--hf-split/--hf-name) through the datasets "
           "library, and gptoss-bench has neither a hub client nor network access on the study's "
           "machines; convert the data to a local file and use --dataset-name custom (JSONL of "
           "{\"prompt\"}) or sharegpt"},
    {"random-mm", "multimodal requests (synthetic images and videos) are not supported: "
                  "GPT-OSS is text only"},
    {"spec_bench", "not implemented in gptoss-bench: convert Spec-Bench's question.jsonl to "
                   "{\"prompt\"} lines and use --dataset-name custom"},
};

bool dataset_check_options(const BenchOptions *o, char *err, size_t err_size) {
  static const char *const supported[] = {"random", "sharegpt", "sonnet", "burstgpt", "custom",
                                          "prefix_repetition"};
  const char *name = o->dataset_name;
  for (size_t i = 0; i < sizeof REFUSED / sizeof *REFUSED; i++)
    if (strcmp(name, REFUSED[i].name) == 0) {
      snprintf(err, err_size, "--dataset-name %s is not supported: %s", name, REFUSED[i].why);
      return false;
    }
  bool known = false;
  for (size_t i = 0; i < sizeof supported / sizeof *supported; i++)
    known = known || strcmp(name, supported[i]) == 0;
  if (!known) {
    snprintf(err, err_size, "--dataset-name '%s' is not supported: use random, sharegpt, sonnet, "
             "burstgpt, custom or prefix_repetition", name);
    return false;
  }
  for (size_t i = 0; i < sizeof NEED_PATH / sizeof *NEED_PATH; i++)
    if (strcmp(name, NEED_PATH[i]) == 0 && !o->dataset_path) {
      snprintf(err, err_size, "--dataset-name %s needs --dataset-path FILE (datasets/README.md "
               "says where to get one)", name);
      return false;
    }
  if (o->random_batch_size > 1) {
    snprintf(err, err_size, "--random-batch-size %d is not supported: vLLM batches prompts only "
             "for the embeddings endpoint, which gptoss-bench does not benchmark; leave it at 1",
             o->random_batch_size);
    return false;
  }
  return true;
}

static bool load_random(const BenchOptions *o, const Tokenizer *tok, FILE *out, Dataset *d,
                        char *err, size_t err_size) {
  RandomParams p = {.num_requests = (size_t)o->num_prompts,
                    .input_len = (uint32_t)o->random_input_len,
                    .output_len = (uint32_t)o->random_output_len,
                    .range_ratio = o->random_range_ratio,
                    .prefix_len = (uint32_t)o->random_prefix_len,
                    .seed = o->seed};
  RandomBounds b;
  if (!dataset_random_bounds(&p, &b, err, err_size)) return false;
  fprintf(out, "Sampling input_len from [%u, %u] and output_len from [%u, %u]\n", b.input_lo,
          b.input_hi, b.output_lo, b.output_hi);
  return dataset_make_random(&p, tok, d, err, err_size);
}

bool dataset_from_options(const BenchOptions *o, const Tokenizer *tok, FILE *out, Dataset *d,
                          char *err, size_t err_size) {
  const char *name = o->dataset_name;
  const size_t n = (size_t)o->num_prompts;
  bool ok;
  if (strcmp(name, "sharegpt") == 0) {
    ShareGptParams p = {.path = o->dataset_path, .num_requests = n, .seed = o->seed,
                        .output_len = o->sharegpt_output_len, .no_oversample = o->no_oversample};
    ok = dataset_load_sharegpt(&p, tok, d, err, err_size);
  } else if (strcmp(name, "sonnet") == 0) {
    SonnetParams p = {.path = o->dataset_path, .num_requests = n,
                      .input_len = (uint32_t)o->sonnet_input_len,
                      .output_len = (uint32_t)o->sonnet_output_len,
                      .prefix_len = (uint32_t)o->sonnet_prefix_len,
                      .formatted = strcmp(o->endpoint_type, "openai-chat") != 0, .seed = o->seed};
    SonnetLayout lay;
    ok = dataset_make_sonnet(&p, tok, d, &lay, err, err_size);
  } else if (strcmp(name, "burstgpt") == 0) {
    BurstGptParams p = {.path = o->dataset_path, .num_requests = n, .seed = o->seed};
    ok = dataset_load_burstgpt(&p, tok, d, err, err_size);
  } else if (strcmp(name, "custom") == 0) {
    CustomParams p = {.path = o->dataset_path, .num_requests = n,
                      .output_len = (uint32_t)o->custom_output_len,
                      .skip_chat_template = o->custom_skip_chat_template,
                      .no_oversample = o->no_oversample, .seed = o->seed};
    ok = dataset_load_custom(&p, tok, d, err, err_size);
  } else if (strcmp(name, "prefix_repetition") == 0) {
    PrefixRepetitionParams p = {.num_requests = n,
                                .prefix_len = (uint32_t)o->prefix_repetition_prefix_len,
                                .suffix_len = (uint32_t)o->prefix_repetition_suffix_len,
                                .num_prefixes = (uint32_t)o->prefix_repetition_num_prefixes,
                                .output_len = (uint32_t)o->prefix_repetition_output_len,
                                .seed = o->seed};
    ok = dataset_make_prefix_repetition(&p, tok, d, err, err_size);
  } else {
    ok = load_random(o, tok, out, d, err, err_size);
  }
  if (ok && d->num_oversampled)
    fprintf(out, "Oversampled requests to reach %d total samples.\n", o->num_prompts);
  return ok;
}
