// fuzz_sweep_file.c: libFuzzer target for sweep files (sweep_file_parse in
// src/sweep/sweep_file.c: inih, the schema, word splitting, each workload's flags through
// bench_options_parse). Input: the file's text (cut at its first NUL, as a file read would be
// by the C string API). An error must name the file; a parsed file must have an engine and a
// workload, labels, and argv that sweep_engine_argv can build.
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "fuzz_util.h"
#include "sweep/sweep_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = xmalloc(size + 1);
  memcpy(text, data, size);
  text[size] = '\0';
  SweepFile f;
  char err[1024] = "";
  if (sweep_file_parse(&f, "fuzz.ini", text, err, sizeof err)) {
    fuzz_require(f.num_engines > 0 && f.num_workloads > 0, "an engine and a workload");
    fuzz_require(f.name && f.repeat >= 1, "a name and a repeat count");
    for (size_t i = 0; i < f.num_engines; i++) {
      fuzz_require(f.engines[i].label != NULL, "engines have labels");
      sweep_argv_free(sweep_engine_argv(&f.engines[i], "gptoss-engine", 8000));
      sweep_argv_free(sweep_engine_argv(&f.engines[i], "gptoss-engine", -1));
    }
    for (size_t i = 0; i < f.num_workloads; i++)
      fuzz_require(f.workloads[i].label && f.workloads[i].dataset_name, "workloads are complete");
    for (size_t i = 0; i < f.num_comparisons; i++)
      fuzz_require(
          f.comparisons[i].base < f.num_engines && f.comparisons[i].candidate < f.num_engines,
          "comparisons name engines");
    sweep_file_free(&f);
  } else {
    fuzz_require(strncmp(err, "fuzz.ini", 8) == 0, "an error names the file");
  }
  free(text);
  return 0;
}
