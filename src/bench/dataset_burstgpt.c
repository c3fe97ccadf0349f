// dataset_burstgpt.c: vLLM's burstgpt dataset (see dataset.h): request and response token counts
// from the BurstGPT trace CSV, prompts of that many consecutive token ids. Reads the CSV and
// builds prompts; sends and prints nothing. The CSV reader is the plain one the trace needs:
// comma-separated fields without quoting.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/dataset.h"
#include "bench/dataset_internal.h"
#include "common/check.h"
#include "common/fields.h"
#include "common/file.h"

static const char BURSTGPT_FORMAT[] =
    "a BurstGPT CSV has a header row naming the columns, among them Model, Request tokens and "
    "Response tokens, then one row per request (e.g. 5,GPT-4,472,18,490,Conversation log)";

typedef struct {
  uint32_t request_tokens, response_tokens;
} TraceRow;

static long find_column(char **names, size_t num, const char *want) {
  for (size_t i = 0; i < num; i++)
    if (strcmp(names[i], want) == 0) return (long)i;
  return -1;
}

static bool parse_count(const char *s, uint32_t *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end || v < 0 || v > 1e7 || v != (double)(uint32_t)v) return false;
  *out = (uint32_t)v;
  return true;
}

#define MAX_FIELDS 64

// The kept rows (Model == "GPT-4", Response tokens > 0), in file order.
static bool read_rows(const char *path, Buf *text, TraceRow **rows_out, size_t *num_out,
                      char *err, size_t err_size) {
  char *fields[MAX_FIELDS], *save = NULL;
  size_t num = 0, cap = 64, line_no = 1;
  TraceRow *rows = xmalloc(cap * sizeof *rows);
  char *line = strtok_r(text->data, "\n", &save);
  size_t num_names = line ? fields_split(line, ',', fields, MAX_FIELDS) : 0;
  for (size_t i = 0; i < num_names; i++) fields[i][strcspn(fields[i], "\r")] = '\0';
  long col_model = find_column(fields, num_names, "Model");
  long col_req = find_column(fields, num_names, "Request tokens");
  long col_resp = find_column(fields, num_names, "Response tokens");
  if (col_model < 0 || col_req < 0 || col_resp < 0) {
    snprintf(err, err_size, "%s:1: the header lacks a Model, Request tokens or Response tokens "
             "column; %s", path, BURSTGPT_FORMAT);
    free(rows);
    return false;
  }
  size_t need = (size_t)(col_model > col_req ? (col_model > col_resp ? col_model : col_resp)
                                             : (col_req > col_resp ? col_req : col_resp)) + 1;
  while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
    line_no++;  // strtok_r skips empty lines, which the trace does not have
    line[strcspn(line, "\r")] = '\0';
    size_t n = fields_split(line, ',', fields, MAX_FIELDS);
    TraceRow r;
    if (n < need || !parse_count(fields[col_req], &r.request_tokens) ||
        !parse_count(fields[col_resp], &r.response_tokens)) {
      snprintf(err, err_size, "%s:%zu: expected %zu comma-separated fields with whole token "
               "counts in Request tokens and Response tokens; %s", path, line_no, num_names,
               BURSTGPT_FORMAT);
      free(rows);
      return false;
    }
    if (strcmp(fields[col_model], "GPT-4") != 0 || r.response_tokens == 0) continue;
    if (num == cap) rows = xrealloc(rows, (cap *= 2) * sizeof *rows);
    rows[num++] = r;
  }
  *rows_out = rows;
  *num_out = num;
  return true;
}

bool dataset_load_burstgpt(const BurstGptParams *p, const Tokenizer *tok, Dataset *out, char *err,
                           size_t err_size) {
  *out = (Dataset){.name = "burstgpt"};
  Buf text = {0};
  char ferr[512];
  if (!file_read_all(p->path, &text, ferr, sizeof ferr)) {
    snprintf(err, err_size, "burstgpt dataset: %s (pass the BurstGPT CSV, e.g. "
             "BurstGPT_without_fails_2.csv, to --dataset-path)", ferr);
    return false;
  }
  TraceRow *rows = NULL;
  size_t num_rows = 0;
  bool ok = text.len > 0 && read_rows(p->path, &text, &rows, &num_rows, err, err_size);
  if (text.len == 0) snprintf(err, err_size, "%s: the file is empty; %s", p->path, BURSTGPT_FORMAT);
  if (ok && num_rows == 0) {
    snprintf(err, err_size, "%s: no row has Model GPT-4 and Response tokens > 0 (vLLM keeps only "
             "those); use the BurstGPT trace or a CSV with such rows", p->path);
    ok = false;
  }
  if (ok) {
    // pandas' sample(n, random_state=seed): without replacement when n fits, else with.
    size_t n = p->num_requests, *pick = xmalloc((num_rows > n ? num_rows : n) * sizeof *pick);
    Rng rng;
    rng_seed(&rng, p->seed);
    for (size_t i = 0; i < num_rows; i++) pick[i] = i;
    if (n <= num_rows) rng_shuffle(&rng, pick, num_rows, sizeof *pick);
    else
      for (size_t i = 0; i < n; i++) pick[i] = rng_below(&rng, num_rows);
    out->requests = xcalloc(n + 1, sizeof *out->requests);
    TokenIds ids = {0};
    Buf prompt = {0};
    for (size_t i = 0; i < n; i++) {
      const TraceRow *r = &rows[pick[i]];
      ids.len = 0;
      for (uint32_t j = 0; j < r->request_tokens; j++)
        token_ids_push(&ids, (uint32_t)((i + j) % DATASET_RANDOM_VOCAB_SIZE));
      dataset_decode_utf8(tok, ids.data, ids.len, &prompt);
      out->requests[i] = (BenchRequest){.prompt = xstrdup(prompt.data),
                                        .prompt_len = r->request_tokens,
                                        .expected_output_len = r->response_tokens};
    }
    out->num_requests = n;
    token_ids_free(&ids);
    buf_free(&prompt);
    free(pick);
  }
  free(rows);
  buf_free(&text);
  return ok;
}
