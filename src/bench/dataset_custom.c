// dataset_custom.c: vLLM's custom dataset (see dataset.h): a JSONL file of {"prompt": ...}
// objects, shuffled, optionally put through the chat template, oversampled. Reads the file and
// builds prompts; sends and prints nothing.
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/dataset.h"
#include "bench/dataset_internal.h"
#include "common/check.h"
#include "common/file.h"

static const char CUSTOM_FORMAT[] =
    "a custom dataset is a .jsonl file: one JSON object per line with a string \"prompt\", e.g. "
    "{\"prompt\": \"Tell me a story.\"}";

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

// The "prompt" of every non-blank line, in file order (owned copies, NUL bytes as U+FFFD).
static bool read_prompts(const CustomParams *p, char ***out, size_t *num_out, char *err,
                         size_t err_size) {
  Buf text = {0}, prompt = {0};
  char ferr[512];
  if (!file_read_all(p->path, &text, ferr, sizeof ferr)) {
    snprintf(err, err_size, "custom dataset: %s (pass a .jsonl file to --dataset-path; %s)", ferr,
             CUSTOM_FORMAT);
    return false;
  }
  size_t num = 0, cap = 16, line_no = 0;
  char **prompts = xmalloc(cap * sizeof *prompts);
  bool ok = true;
  for (size_t at = 0; ok && at < text.len;) {
    const char *line = text.data + at, *nl = memchr(line, '\n', text.len - at);
    size_t len = nl ? (size_t)(nl - line) : text.len - at;
    at += len + 1;
    line_no++;
    if (strspn(line, " \t\r") >= len) continue;  // a blank line (pandas skips them too)
    json_error_t jerr;
    json_t *obj = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);
    const json_t *value = json_object_get(obj, "prompt");
    if (!json_is_string(value)) {
      snprintf(err, err_size, "%s:%zu: %s; %s", p->path, line_no,
               obj ? "no string \"prompt\" in this object" : jerr.text, CUSTOM_FORMAT);
      ok = false;
    } else {
      dataset_set_text_without_nul(&prompt, json_string_value(value), json_string_length(value));
      if (num == cap) prompts = xrealloc(prompts, (cap *= 2) * sizeof *prompts);
      prompts[num++] = xstrdup(prompt.data);
    }
    json_decref(obj);
  }
  buf_free(&text);
  buf_free(&prompt);
  if (!ok) {
    for (size_t i = 0; i < num; i++) free(prompts[i]);
    free(prompts);
    return false;
  }
  *out = prompts;
  *num_out = num;
  return true;
}

bool dataset_load_custom(const CustomParams *p, const Tokenizer *tok, Dataset *out, char *err,
                         size_t err_size) {
  *out = (Dataset){.name = "custom"};
  if (!ends_with(p->path, ".jsonl")) {
    snprintf(err, err_size, "--dataset-path %s: Only JSONL format is supported for CustomDataset "
             "(vLLM's rule: the name must end in .jsonl); %s", p->path, CUSTOM_FORMAT);
    return false;
  }
  char **prompts = NULL;
  size_t num_prompts = 0;
  if (!read_prompts(p, &prompts, &num_prompts, err, err_size)) return false;
  bool ok = num_prompts > 0 && (num_prompts >= p->num_requests || !p->no_oversample);
  if (!ok)
    snprintf(err, err_size, "%s: %zu prompts found but --num-prompts is %zu; add prompts, lower "
             "--num-prompts%s", p->path, num_prompts, p->num_requests,
             num_prompts ? " or drop --no-oversample to repeat prompts" : "");
  if (ok) {
    Rng rng;
    rng_seed(&rng, p->seed);
    rng_shuffle(&rng, prompts, num_prompts, sizeof *prompts);
    out->requests = xcalloc(p->num_requests + 1, sizeof *out->requests);
    Buf fmt = {0};
    TokenIds ids = {0};
    for (size_t i = 0; i < num_prompts && out->num_requests < p->num_requests; i++) {
      if (!p->skip_chat_template) dataset_chat_template(tok, prompts[i], &fmt);
      const char *prompt = p->skip_chat_template ? prompts[i] : fmt.data;
      out->requests[out->num_requests++] = (BenchRequest){
          .prompt = xstrdup(prompt),
          .prompt_len = dataset_count_tokens(tok, prompt, strlen(prompt), &ids),
          .expected_output_len = p->output_len};
    }
    dataset_oversample(out, p->num_requests, &rng);
    buf_free(&fmt);
    token_ids_free(&ids);
  }
  for (size_t i = 0; i < num_prompts; i++) free(prompts[i]);
  free(prompts);
  return ok;
}
