// report_cmd.c: `gptoss-bench report RUN [--compare OTHER] [--export FILE]`: flags, loading and
// messages; the tables are summary.c's. Dies with a clear message on any error.
#include "sweep/report_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/file.h"
#include "common/check.h"
#include "sweep/run_data.h"
#include "sweep/summary.h"

static const char USAGE[] =
    "usage: gptoss-bench report RUN [--compare OTHER] [--export FILE]\n"
    "  RUN              a run folder (writes RUN/summary.md and RUN/summary.csv) or a result\n"
    "                   file such as results/reference/seed-h100.json (summary.md to stdout)\n"
    "  --compare OTHER  put another run folder or result file beside it\n"
    "  --export FILE    write RUN as a result file (the schema of results/reference/*.json),\n"
    "                   e.g. a CI baseline, instead of the summary\n";

static void export_run(const char *run_path, const char *file) {
  char err[1024];
  RunData run;
  if (!run_data_load(&run, run_path, err, sizeof err)) die("%s", err);
  json_t *root = run_data_export(&run);
  char *text = json_dumps(root, JSON_INDENT(1));
  if (!text) die("%s: cannot serialise the result file", file);
  Buf b = {0};
  buf_printf(&b, "%s\n", text);
  if (!file_write_atomic(file, b.data, b.len, err, sizeof err)) die("%s", err);
  printf("wrote %s\n", file);
  free(text);
  buf_free(&b);
  json_decref(root);
  run_data_free(&run);
}

int report_cmd_main(int argc, char **argv) {
  const char *run_path = NULL, *compare = NULL, *export_file = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(USAGE, stdout);
      return 0;
    } else if ((strcmp(argv[i], "--compare") == 0 || strcmp(argv[i], "--export") == 0) &&
               i + 1 < argc) {
      *(argv[i][2] == 'c' ? &compare : &export_file) = argv[i + 1];
      i++;
    } else if (argv[i][0] != '-' && !run_path) {
      run_path = argv[i];
    } else {
      fprintf(stderr, "report: unexpected argument '%s'\n%s", argv[i], USAGE);
      return 2;
    }
  }
  if (!run_path) {
    fprintf(stderr, "report: which run? %s", USAGE);
    return 2;
  }
  if (export_file) {
    export_run(run_path, export_file);
    return 0;
  }
  char err[1024];
  struct stat st;
  if (stat(run_path, &st) == 0 && S_ISDIR(st.st_mode)) {
    if (!summary_write(run_path, compare, err, sizeof err)) die("%s", err);
    printf("wrote %s/summary.md and %s/summary.csv\n", run_path, run_path);
    return 0;
  }
  RunData run, other;
  memset(&other, 0, sizeof other);
  if (!run_data_load(&run, run_path, err, sizeof err)) die("%s", err);
  if (compare && !run_data_load(&other, compare, err, sizeof err)) die("%s", err);
  Buf md = {0};
  summary_render_md(&md, &run, compare ? &other : NULL);
  fputs(md.data, stdout);
  buf_free(&md);
  run_data_free(&other);
  run_data_free(&run);
  return 0;
}
