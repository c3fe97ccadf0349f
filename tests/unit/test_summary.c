// test_summary.c: summary.md and summary.csv of tests/fixtures/sweep/run-a against golden text
// written from the fixture numbers (gains: 2400/2/1000-1 = +20.0% per GPU, 3000/2/2000-1 =
// -25.0%; '-' cells and the failed engine's error), the repeat=3 median (min-max) cells, report
// --compare against the study's reference file, export round trip, commands shown without their
// program's folder (summaries and exported files read the same on every machine), and plot's
// .dat/.gp files
// (plus PNG/SVG when gnuplot is installed) and its error naming gnuplot-nox.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/file.h"
#include "sweep/plot.h"
#include "sweep/run_data.h"
#include "sweep/summary.h"

#define FIX "tests/fixtures/sweep/"
#define REFERENCE "results/reference/seed-h100.json"

static void load(RunData *r, const char *path) {
  char err[512];
  if (!run_data_load(r, path, err, sizeof err)) fail_msg("%s", err);
}

static void assert_golden(const Buf *got, const char *golden_path) {
  Buf want = {0};
  char err[256];
  assert_true(file_read_all(golden_path, &want, err, sizeof err));
  if (got->len != want.len || memcmp(got->data, want.data, got->len) != 0)
    fail_msg("%s differs; got:\n%s", golden_path, got->data);
  buf_free(&want);
}

static void test_golden_md_and_csv(void **state) {
  (void)state;
  RunData r;
  load(&r, FIX "run-a");
  Buf md = {0}, csv = {0};
  summary_render_md(&md, &r, NULL);
  summary_render_csv(&csv, &r);
  assert_golden(&md, FIX "run-a.summary.md");
  assert_golden(&csv, FIX "run-a.summary.csv");
  buf_free(&md);
  buf_free(&csv);
  run_data_free(&r);
}

static void test_repeat_cells(void **state) {
  (void)state;
  RunData r;
  load(&r, FIX "run-r3");
  Buf md = {0};
  summary_render_md(&md, &r, NULL);
  assert_non_null(strstr(md.data, "Each pair ran 3 times"));
  assert_non_null(strstr(md.data, "| vLLM | 1 | 1000.00 (900.00-1100.00) | 1000.00 (900.00-1100.00) |"));
  assert_non_null(strstr(md.data, "### vLLM / ShareGPT (repeat 3 of 3)"));
  buf_free(&md);
  run_data_free(&r);
}

static void test_compare_with_reference(void **state) {
  (void)state;
  RunData r, ref;
  load(&r, FIX "run-a");
  load(&ref, REFERENCE);
  Buf md = {0};
  summary_render_md(&md, &r, &ref);
  // The study's own gains beside ours: parallelism 8021.10/6325.41-1, attention backend failed.
  assert_non_null(strstr(md.data, "| option | throughput gain | seed-h100 |"));
  assert_non_null(strstr(md.data, "| parallelism | +20.0% (per GPU) | +26.8% (per GPU) |"));
  assert_non_null(strstr(md.data, "| attention backend | failed: RuntimeError: no attention sinks "
                                  "\\| try flash | failed: RuntimeError: Worker failed"));
  // Baseline vs optimized: the study's change per GPU (16042.19/2/6095.37-1, 31517.47/2/17059.15-1).
  assert_non_null(strstr(md.data, "| ShareGPT | 1000.00 | 10.00 | 2400.00 | 12.00 | +20.0% | +31.6% |"));
  assert_non_null(strstr(md.data, "| short (128/4) | 2000.00 | 20.00 | 3000.00 | 15.00 | -25.0% | -7.6% |"));
  assert_non_null(strstr(md.data, "| vllm | sharegpt | total_token_throughput | 1000.00 | 6095.37 | -83.6% |"));
  buf_free(&md);
  run_data_free(&ref);
  run_data_free(&r);
}

static void test_reference_summary(void **state) {
  (void)state;
  RunData ref;
  load(&ref, REFERENCE);
  Buf md = {0};
  summary_render_md(&md, &ref, NULL);
  // The study's "Summary of options" and baseline-vs-optimized rows, from its data.
  assert_non_null(strstr(md.data, "| engine choice | - |\n| async scheduling | +3.8% |\n"
                                  "| parallelism | +26.8% (per GPU) |\n"));
  assert_non_null(strstr(md.data, "| max batched tokens | - |\n"));
  assert_non_null(strstr(md.data, "| ShareGPT | 6095.37 | 54.10 | 16042.19 | 86.54 | +31.6% |"));
  assert_non_null(strstr(md.data, "| medium (2000/100) | 14385.69 | 41.35 | 34083.02 | 139.32 | +18.5% |"));
  buf_free(&md);
  run_data_free(&ref);
}

static char *temp_dir(void) {
  char *dir = strdup("/tmp/test_summary.XXXXXX");
  assert_non_null(mkdtemp(dir));
  return dir;
}

static bool exists(const char *dir, const char *name) {
  Buf p = {0};
  buf_printf(&p, "%s/%s", dir, name);
  struct stat st;
  bool ok = stat(p.data, &st) == 0 && st.st_size > 0;
  buf_free(&p);
  return ok;
}

static void test_export_round_trip(void **state) {
  (void)state;
  RunData r, back;
  load(&r, FIX "run-a");
  char *dir = temp_dir();
  Buf path = {0};
  buf_printf(&path, "%s/run-a.json", dir);
  json_t *root = run_data_export(&r);
  assert_int_equal(json_dump_file(root, path.data, JSON_INDENT(1)), 0);
  json_decref(root);
  load(&back, path.data);
  Buf a = {0}, b = {0};
  summary_render_md(&a, &r, NULL);
  summary_render_md(&b, &back, NULL);
  assert_string_equal(a.data, b.data);
  unlink(path.data);
  rmdir(dir);
  free(dir);
  buf_free(&a);
  buf_free(&b);
  buf_free(&path);
  run_data_free(&back);
  run_data_free(&r);
}

static void test_command_without_folder(void **state) {
  (void)state;
  assert_string_equal(run_command_without_folder("/x/build/bin/gptoss-engine serve m --port 1"),
                      "gptoss-engine serve m --port 1");
  assert_string_equal(run_command_without_folder("bin/gptoss-engine"), "gptoss-engine");
  // Only the program's folder: a path among the arguments stays.
  assert_string_equal(run_command_without_folder("vllm serve /models/gpt-oss-120b"),
                      "vllm serve /models/gpt-oss-120b");
  assert_string_equal(run_command_without_folder(""), "");
}

static void remove_dir(const char *dir) {
  static const char *const NAMES[] = {"throughput.dat", "ttft.dat", "tpot.dat", "tradeoff.dat",
                                      "throughput.gp", "latency.gp", "tradeoff.gp",
                                      "throughput.png", "latency.png", "tradeoff.png",
                                      "throughput.svg", "latency.svg", "tradeoff.svg"};
  for (size_t i = 0; i < sizeof NAMES / sizeof *NAMES; i++) {
    Buf p = {0};
    buf_printf(&p, "%s/%s", dir, NAMES[i]);
    unlink(p.data);
    buf_free(&p);
  }
  rmdir(dir);
}

static void test_plot_files(void **state) {
  (void)state;
  RunData r;
  load(&r, FIX "run-a");
  char *dir = temp_dir();
  char err[1024];
  // Without gnuplot: the data and scripts are written, the error names the package.
  assert_false(plot_write_dir(&r, dir, "gptoss-no-such-gnuplot", err, sizeof err));
  assert_non_null(strstr(err, "gnuplot-nox"));
  assert_true(exists(dir, "throughput.dat") && exists(dir, "throughput.gp"));
  assert_true(exists(dir, "ttft.dat") && exists(dir, "tpot.dat") && exists(dir, "latency.gp"));
  assert_true(exists(dir, "tradeoff.dat") && exists(dir, "tradeoff.gp"));
  Buf dat = {0};
  Buf path = {0};
  buf_printf(&path, "%s/throughput.dat", dir);
  assert_true(file_read_all(path.data, &dat, err, sizeof err));
  assert_string_equal(dat.data, "engine \"ShareGPT\" \"short (128/4)\"\n"
                                "\"vLLM [baseline]\" 1000.00 2000.00\n"
                                "\"vLLM async -tp 2 [optimized]\" 1200.00 1500.00\n");
  if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
    if (!plot_write_dir(&r, dir, PLOT_GNUPLOT, err, sizeof err)) fail_msg("%s", err);
    assert_true(exists(dir, "throughput.png") && exists(dir, "throughput.svg"));
    assert_true(exists(dir, "latency.png") && exists(dir, "tradeoff.svg"));
  }
  remove_dir(dir);
  free(dir);
  buf_free(&dat);
  buf_free(&path);
  run_data_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_md_and_csv),
      cmocka_unit_test(test_repeat_cells),
      cmocka_unit_test(test_compare_with_reference),
      cmocka_unit_test(test_reference_summary),
      cmocka_unit_test(test_export_round_trip),
      cmocka_unit_test(test_command_without_folder),
      cmocka_unit_test(test_plot_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
