// bench_tokenizer.c: encoding throughput of o200k_base (ordinary text, no specials) on one corpus
// file, for `make bench` (scripts/bench.sh builds the corpus). Prints one "name value" line per
// figure (MB = 10^6 bytes). Times tok_encode only: never the file read or tok_init, and it must not
// compare against anything itself (bench.sh runs tiktoken and computes the ratio).
//
//   bench_tokenizer CORPUS_FILE [REPS]     (REPS default 5, after one untimed warm-up)
#include <stdio.h>
#include <stdlib.h>

#include "common/buf.h"
#include "common/check.h"
#include "common/clock.h"
#include "common/file.h"
#include "text/tokenizer.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  check_set_program("bench_tokenizer");
  if (argc < 2 || argc > 3) die("usage: bench_tokenizer CORPUS_FILE [REPS]");
  int reps = argc == 3 ? atoi(argv[2]) : 5;
  if (reps < 1 || reps > 1000) die("REPS '%s' must be an integer in 1..1000", argv[2]);

  char err[1024];
  Buf corpus = {0};
  if (!file_read_all(argv[1], &corpus, err, sizeof err)) die("%s", err);
  if (corpus.len == 0) die("%s is empty; build it with scripts/bench-corpus.sh", argv[1]);
  Tokenizer tok;
  if (!tok_init(&tok, TOK_O200K_BASE, NULL, err, sizeof err)) die("%s", err);

  TokenIds ids = {0};
  tok_encode(&tok, corpus.data, corpus.len, false, &ids);  // warm-up: page faults, caches, ids cap
  size_t num_tokens = ids.len;
  double *mb_s = xmalloc((size_t)reps * sizeof *mb_s);  // [reps]
  double mb = (double)corpus.len / 1e6;
  for (int r = 0; r < reps; r++) {
    ids.len = 0;
    int64_t t0 = clock_now_ns();
    tok_encode(&tok, corpus.data, corpus.len, false, &ids);
    int64_t t1 = clock_now_ns();
    CHECK(ids.len == num_tokens);  // the same text must give the same tokens every time
    mb_s[r] = mb / ((double)(t1 - t0) / 1e9);
  }
  qsort(mb_s, (size_t)reps, sizeof *mb_s, cmp_double);
  double median = reps % 2 ? mb_s[reps / 2] : (mb_s[reps / 2 - 1] + mb_s[reps / 2]) / 2;

  printf("impl gptoss-bench\n");
  printf("encoding o200k_base\n");
  printf("bytes %zu\n", corpus.len);
  printf("mb %.3f\n", mb);
  printf("tokens %zu\n", num_tokens);
  printf("reps %d\n", reps);
  printf("best_mb_s %.3f\n", mb_s[reps - 1]);
  printf("median_mb_s %.3f\n", median);

  free(mb_s);
  token_ids_free(&ids);
  tok_free(&tok);
  buf_free(&corpus);
  return 0;
}
