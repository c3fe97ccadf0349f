// test_plot_pareto.c: the Pareto front against hand-worked cases, and the Pareto chart's data
// of tests/fixtures/sweep/grid-run.json (two configurations over a grid of three request rates;
// B has 2 GPUs, so its per-GPU throughputs are half its totals): front (150, 8) B, (300, 20) A,
// (500, 50) A, (600, 60) B; (100, 10) and (250, 30) are dominated. Also that a pair the engine
// was never given is no "(no result)" block in the summary, while one it was given is; and the
// summary's grid table with the same per-GPU figures.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/buf.h"
#include "sweep/plot_pareto.h"
#include "sweep/run_data.h"
#include "sweep/summary.h"

static void test_front(void **state) {
  (void)state;
  // (3, 1) dominates (2, 2) and (1, 3); (4, 5) is the fastest; (3, 1) twice: both kept.
  const double x[] = {2, 3, 1, 4, 3}, y[] = {2, 1, 3, 5, 1};
  bool on[5];
  pareto_front(x, y, 5, on);
  assert_false(on[0]);
  assert_true(on[1]);
  assert_false(on[2]);
  assert_true(on[3]);
  assert_true(on[4]);
  pareto_front(x, y, 1, on);  // one point: on the front
  assert_true(on[0]);
}

static void test_grid_chart(void **state) {
  (void)state;
  RunData run;
  char err[512];
  if (!run_data_load(&run, "tests/fixtures/sweep/grid-run.json", err, sizeof err))
    fail_msg("%s", err);
  const char *grids[4];
  assert_int_equal(pareto_grids(&run, grids, 4), 1);  // "other" is no grid
  assert_string_equal(grids[0], "r");
  Buf data = {0}, script = {0};
  pareto_write(&run, "r", &data, &script);
  assert_string_equal(data.data,
                      "# a: per-GPU total tok/s, mean TPOT ms, point\n"
                      "100.00 10.00 \"request-rate=1\"\n"
                      "300.00 20.00 \"request-rate=4\"\n"
                      "500.00 50.00 \"request-rate=inf\"\n"
                      "\n\n# b: per-GPU total tok/s, mean TPOT ms, point\n"
                      "150.00 8.00 \"request-rate=1\"\n"
                      "250.00 30.00 \"request-rate=4\"\n"
                      "600.00 60.00 \"request-rate=inf\"\n"
                      "\n\n# Pareto front: per-GPU total tok/s, mean TPOT ms, configuration\n"
                      "150.00 8.00 \"B two\"\n"
                      "300.00 20.00 \"A\"\n"
                      "500.00 50.00 \"A\"\n"
                      "600.00 60.00 \"B two\"\n");
  assert_non_null(strstr(script.data, "'pareto-r.dat' index 2 using 1:2 with linespoints dt 2"));
  assert_non_null(strstr(script.data, "title \"B two\""));
  assert_non_null(strstr(script.data, "set yrange [0:*]"));
  Buf md = {0};
  summary_render_md(&md, &run, NULL);
  assert_null(strstr(md.data, "### A / other"));  // never given to A
  assert_non_null(strstr(md.data,
                         "## Grid r: per-GPU total tok/s / mean TPOT ms\n"
                         "| configuration | request-rate=1 | request-rate=4 | request-rate=inf |\n"
                         "|---|---|---|---|\n"
                         "| A | 100.00 / 10.00 | 300.00 / 20.00 | 500.00 / 50.00 |\n"
                         "| B two | 150.00 / 8.00 | 250.00 / 30.00 | 600.00 / 60.00 |\n"));
  assert_non_null(strstr(md.data, "### B two / other\n(no result)"));  // given, not measured
  buf_free(&md);
  buf_free(&data);
  buf_free(&script);
  run_data_free(&run);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_front),
      cmocka_unit_test(test_grid_chart),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
