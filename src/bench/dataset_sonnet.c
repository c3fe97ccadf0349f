// dataset_sonnet.c: vLLM's sonnet dataset (see dataset.h): lines of a poem file behind a fixed
// instruction, a fixed prefix of lines shared by every prompt. Reads the file and builds prompts;
// sends and prints nothing.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/dataset.h"
#include "bench/dataset_internal.h"
#include "common/check.h"
#include "common/file.h"

#define SONNET_BASE_PROMPT "Pick as many lines as you can from these poem lines:\n"
#define SONNET_FILE "datasets/sonnet.txt"
// Draws per wanted prompt before giving up: vLLM redraws forever when no prompt can fit.
#define SONNET_MAX_DRAWS_PER_PROMPT 1000

const char *dataset_default_sonnet_path(void) {
  static char path[4096];
  char dir[3000];
  if (file_exe_dir(dir, sizeof dir)) {  // <root>/build[/...]/bin/<exe>: look in the parents
    char up[16] = "";
    for (int level = 1; level <= 4; level++) {
      strcat(up, "/..");
      snprintf(path, sizeof path, "%s%s/" SONNET_FILE, dir, up);
      if (access(path, R_OK) == 0) return path;
    }
  }
  return SONNET_FILE;
}

// The file's lines, each with its '\n' (Python's readlines): pointers into text.
static size_t split_lines(Buf *text, const char ***lines_out) {
  size_t num = 0, cap = 16;
  const char **lines = xmalloc(cap * sizeof *lines);
  for (size_t at = 0; at < text->len;) {
    const char *nl = memchr(text->data + at, '\n', text->len - at);
    size_t end = nl ? (size_t)(nl - text->data) + 1 : text->len;
    if (num == cap) lines = xrealloc(lines, (cap *= 2) * sizeof *lines);
    lines[num++] = text->data + at;
    at = end;
  }
  *lines_out = lines;
  return num;
}

static size_t line_len(const char *line) {
  const char *nl = strchr(line, '\n');
  return nl ? (size_t)(nl - line) + 1 : strlen(line);
}

// Python's round(x) for the line counts: halves go to the even neighbour (nearbyint's default).
static long round_half_even(double x) { return (long)nearbyint(x); }

static bool layout(const SonnetParams *p, const Tokenizer *tok, const char **lines, size_t num,
                   SonnetLayout *out, char *err, size_t err_size) {
  TokenIds ids = {0};
  Buf fmt = {0};
  double total = 0;
  for (size_t i = 0; i < num; i++) total += dataset_count_tokens(tok, lines[i], line_len(lines[i]), &ids);
  out->mean_line_len = total / (double)num;
  dataset_chat_template(tok, SONNET_BASE_PROMPT, &fmt);
  out->base_offset = dataset_count_tokens(tok, fmt.data, fmt.len, &ids);
  buf_free(&fmt);
  token_ids_free(&ids);
  if (p->input_len <= out->base_offset) {
    snprintf(err, err_size,
             "--sonnet-input-len %u: 'input_len' must be higher than the base prompt length (%u "
             "tokens: the instruction in the chat template)",
             p->input_len, out->base_offset);
    return false;
  }
  long input_lines = round_half_even((p->input_len - (double)out->base_offset) / out->mean_line_len);
  long prefix_lines = round_half_even(((double)p->prefix_len - out->base_offset) / out->mean_line_len);
  out->num_input_lines = (size_t)input_lines;
  out->num_prefix_lines = prefix_lines > 0 ? (size_t)prefix_lines : 0;
  return true;
}

bool dataset_make_sonnet(const SonnetParams *p, const Tokenizer *tok, Dataset *out,
                         SonnetLayout *lay, char *err, size_t err_size) {
  *out = (Dataset){.name = "sonnet"};
  const char *path = p->path ? p->path : dataset_default_sonnet_path();
  Buf text = {0};
  char ferr[512];
  if (!file_read_all(path, &text, ferr, sizeof ferr)) {
    snprintf(err, err_size, "sonnet dataset: %s (give the poem's text file with --dataset-path; "
             SONNET_FILE " is shipped)", ferr);
    return false;
  }
  const char **lines = NULL;
  size_t num_lines = text.len ? split_lines(&text, &lines) : 0;
  bool ok = num_lines > 0;
  if (!ok)
    snprintf(err, err_size, "%s: the file has no lines; the sonnet dataset needs a text file of "
             "poem lines", path);
  ok = ok && layout(p, tok, lines, num_lines, lay, err, err_size);
  if (ok) {
    size_t num_prefix = lay->num_prefix_lines < num_lines ? lay->num_prefix_lines : num_lines;
    size_t num_extra = lay->num_input_lines > lay->num_prefix_lines
                           ? lay->num_input_lines - lay->num_prefix_lines
                           : 0;
    Rng rng;
    rng_seed(&rng, p->seed);
    Buf plain = {0}, fmt = {0};
    TokenIds ids = {0};
    out->requests = xcalloc(p->num_requests + 1, sizeof *out->requests);
    size_t draws = 0, max_draws = p->num_requests * SONNET_MAX_DRAWS_PER_PROMPT;
    while (out->num_requests < p->num_requests && draws++ < max_draws) {
      buf_clear(&plain);
      buf_append_str(&plain, SONNET_BASE_PROMPT);
      for (size_t i = 0; i < num_prefix; i++) buf_append(&plain, lines[i], line_len(lines[i]));
      for (size_t i = 0; i < num_extra; i++) {
        const char *line = lines[rng_below(&rng, num_lines)];
        buf_append(&plain, line, line_len(line));
      }
      dataset_chat_template(tok, plain.data, &fmt);
      uint32_t prompt_len = dataset_count_tokens(tok, fmt.data, fmt.len, &ids);
      if (prompt_len > p->input_len) continue;
      out->requests[out->num_requests++] =
          (BenchRequest){.prompt = xstrdup(p->formatted ? fmt.data : plain.data),
                         .prompt_len = prompt_len,
                         .expected_output_len = p->output_len};
    }
    if (out->num_requests < p->num_requests) {
      snprintf(err, err_size,
               "--sonnet-input-len %u: no prompt of %zu lines (%zu of them the fixed prefix) fit "
               "in %u tokens in %zu draws; raise --sonnet-input-len or lower --sonnet-prefix-len",
               p->input_len, lay->num_input_lines, num_prefix, p->input_len, max_draws);
      ok = false;
    }
    buf_free(&plain);
    buf_free(&fmt);
    token_ids_free(&ids);
  }
  free(lines);
  buf_free(&text);
  if (!ok) dataset_free(out);
  return ok;
}
