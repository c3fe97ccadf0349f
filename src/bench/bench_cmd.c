// bench_cmd.c: `gptoss-bench bench`: flags -> bench_run (bench_run.c does the run and prints
// vLLM's lines). Dies with a clear message on bad input or a failed run.
#include "bench/bench_cmd.h"

#include <stdio.h>
#include <string.h>

#include "bench/bench_options.h"
#include "bench/bench_run.h"
#include "common/check.h"
#include "text/tokenizer.h"

int bench_cmd_main(int argc, char **argv) {
  BenchOptions o;
  char err[1024];
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(BENCH_OPTIONS_USAGE, stdout);
      return 0;
    }
  if (!bench_options_parse(&o, argc, argv, err, sizeof err))
    die("bench: %s\n%s", err, BENCH_OPTIONS_USAGE);
  Tokenizer tok;
  if (!tok_init(&tok, TOK_O200K_HARMONY, NULL, err, sizeof err)) die("bench: %s", err);
  BenchRunIo io = {.out = stdout, .tok = &tok};
  if (!bench_run(&o, &io, err, sizeof err)) die("%s", err);
  bench_options_free(&o);
  tok_free(&tok);
  return 0;
}
