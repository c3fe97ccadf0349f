// test_progress_bar.c: src/common/progress_bar.c: the text of a bar in place and of a log line,
// and in line mode (not a terminal) one line per quarter reached, plus a final line when the
// work stopped short; in place, "\r" redraws and one newline at the end.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/progress_bar.h"

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, ms % 1000 * 1000000};
  nanosleep(&ts, NULL);
}

static void test_format(void **state) {
  (void)state;
  ProgressBar b = {.label = "sweep: a/w", .total = 16, .in_place = true, .start_ns = 0};
  char line[256];
  progress_bar_format(&b, 8, 2100000000, line, sizeof line);
  assert_string_equal(line, "sweep: a/w [############------------] 8/16 requests, 2.1 s");
  b.in_place = false;
  progress_bar_format(&b, 8, 2100000000, line, sizeof line);
  assert_string_equal(line, "sweep: a/w: 8/16 requests (50%), 2.1 s");
  b.label = "";
  b.in_place = true;
  progress_bar_format(&b, 0, 0, line, sizeof line);
  assert_string_equal(line, "[------------------------] 0/16 requests, 0.0 s");
}

static long file_size(FILE *f) {
  struct stat st;
  return fstat(fileno(f), &st) == 0 ? (long)st.st_size : -1;
}

// Runs a bar over a counter stepped through steps[]; after a step whose drawn[] is set, waits
// (up to 5 s) until the bar has written something, so a busy machine cannot make it skip a
// state; after the others it waits 120 ms (the drawing thread polls every 50 ms). Returns the
// bar's text in out.
static void run_bar(bool in_place, const size_t *steps, const bool *drawn, size_t num_steps,
                    Buf *out) {
  FILE *f = tmpfile();
  assert_non_null(f);
  atomic_size_t done = 0;
  ProgressBar b;
  progress_bar_start(&b, f, in_place, "L", 8, &done);
  for (size_t i = 0; i < num_steps; i++) {
    long before = file_size(f);
    atomic_store(&done, steps[i]);
    for (int k = 0; k < (drawn[i] ? 500 : 12) && !(drawn[i] && file_size(f) > before); k++)
      sleep_ms(10);
  }
  progress_bar_finish(&b);
  long len = file_size(f);
  char *text = malloc((size_t)len + 1);
  assert_int_equal(pread(fileno(f), text, (size_t)len, 0), len);
  fclose(f);
  buf_clear(out);
  buf_append(out, text, (size_t)len);
  free(text);
}

// The lines' counts: "L: 2/8 requests ..." -> "2/8", joined with ','.
static void counts(const Buf *text, Buf *out) {
  buf_clear(out);
  buf_append_str(out, "");
  for (const char *p = text->data; (p = strstr(p, ": ")); p += 2) {
    size_t n = strcspn(p + 2, " ");
    buf_printf(out, "%s%.*s", out->len ? "," : "", (int)n, p + 2);
  }
}

static void test_lines_per_quarter(void **state) {
  (void)state;
  Buf text = {0}, got = {0};
  const size_t all[] = {1, 2, 3, 5, 8};
  const bool all_drawn[] = {false, true, false, true, true};
  run_bar(false, all, all_drawn, 5, &text);
  counts(&text, &got);
  // 1/8: no quarter yet; 2/8: the first; 3/8: still the first; 5/8: the second; 8/8: all (the
  // third was jumped over: one line, not two)
  assert_string_equal(got.data, "2/8,5/8,8/8");
  assert_null(strchr(text.data, '\r'));
  const size_t short_of[] = {1, 3};
  const bool short_drawn[] = {false, true};
  run_bar(false, short_of, short_drawn, 2, &text);
  counts(&text, &got);
  assert_string_equal(got.data, "3/8");  // its quarter; the end adds nothing new
  const size_t none[] = {1};
  const bool none_drawn[] = {false};
  run_bar(false, none, none_drawn, 1, &text);
  counts(&text, &got);
  assert_string_equal(got.data, "1/8");  // no quarter reached: the end shows where it stopped
  buf_free(&text);
  buf_free(&got);
}

static void test_in_place(void **state) {
  (void)state;
  Buf text = {0};
  const size_t steps[] = {4, 8};
  const bool drawn[] = {true, true};
  run_bar(true, steps, drawn, 2, &text);
  assert_int_equal(text.data[0], '\r');
  assert_non_null(strstr(text.data, "\rL [########################] 8/8 requests"));
  assert_non_null(strchr(text.data, '\n'));
  assert_int_equal(strchr(text.data, '\n') - text.data, (long)text.len - 1);  // one, at the end
  buf_free(&text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_format),
      cmocka_unit_test(test_lines_per_quarter),
      cmocka_unit_test(test_in_place),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
