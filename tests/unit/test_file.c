// test_file.c: src/common/file.c's writers: file_write_atomic replaces a file whole, and when the
// write fails half-way (a file size limit, as a full disk would) keeps the old file and leaves
// no temporary file; file_make_dirs makes nested folders and refuses a path through a file;
// file_read_all reads back what was written.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/file.h"

static char *temp_dir(void) {
  char *dir = strdup("/tmp/test_file.XXXXXX");
  assert_non_null(mkdtemp(dir));
  return dir;
}

// The names in dir, sorted, joined with ','.
static void list_dir(const char *dir, Buf *out) {
  struct dirent **names;
  int n = scandir(dir, &names, NULL, alphasort);
  assert_true(n >= 0);
  buf_clear(out);
  buf_append_str(out, "");
  for (int i = 0; i < n; i++) {
    if (strcmp(names[i]->d_name, ".") != 0 && strcmp(names[i]->d_name, "..") != 0)
      buf_printf(out, "%s%s", out->len ? "," : "", names[i]->d_name);
    free(names[i]);
  }
  free(names);
}

static void read_back(const char *path, const char *expected) {
  Buf b = {0};
  char err[256];
  assert_true(file_read_all(path, &b, err, sizeof err));
  assert_string_equal(b.data, expected);
  buf_free(&b);
}

static void test_atomic_replace(void **state) {
  (void)state;
  char *dir = temp_dir(), err[512];
  Buf path = {0}, names = {0};
  buf_printf(&path, "%s/r.json", dir);
  assert_true(file_write_atomic(path.data, "old", 3, err, sizeof err));
  assert_true(file_write_atomic(path.data, "new!", 4, err, sizeof err));
  read_back(path.data, "new!");
  list_dir(dir, &names);
  assert_string_equal(names.data, "r.json");
  unlink(path.data);
  rmdir(dir);
  free(dir);
  buf_free(&path);
  buf_free(&names);
}

static void test_atomic_failure_leaves_old_file(void **state) {
  (void)state;
  char *dir = temp_dir(), err[512];
  Buf path = {0}, names = {0}, big = {0};
  buf_printf(&path, "%s/r.json", dir);
  assert_true(file_write_atomic(path.data, "old", 3, err, sizeof err));
  for (int i = 0; i < 4096; i++) buf_append_str(&big, "0123456789abcdef");
  struct rlimit saved, small = {.rlim_cur = 1000};
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
  small.rlim_max = saved.rlim_max;
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
  bool ok = file_write_atomic(path.data, big.data, big.len, err, sizeof err);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
  signal(SIGXFSZ, old_handler);
  assert_false(ok);
  assert_non_null(strstr(err, path.data));
  assert_non_null(strstr(err, "File too large"));
  read_back(path.data, "old");
  list_dir(dir, &names);
  assert_string_equal(names.data, "r.json");  // no .r.json.XXXXXX left
  unlink(path.data);
  rmdir(dir);
  free(dir);
  buf_free(&path);
  buf_free(&names);
  buf_free(&big);
}

static void test_atomic_missing_folder(void **state) {
  (void)state;
  char err[512];
  assert_false(file_write_atomic("/nonexistent-gptoss/r.json", "x", 1, err, sizeof err));
  assert_non_null(strstr(err, "cannot write /nonexistent-gptoss/r.json"));
}

static void test_make_dirs(void **state) {
  (void)state;
  char *dir = temp_dir(), err[512];
  Buf path = {0}, file = {0};
  buf_printf(&path, "%s/a/b/c/", dir);
  assert_true(file_make_dirs(path.data, err, sizeof err));
  assert_true(file_make_dirs(path.data, err, sizeof err));  // already there: fine
  struct stat st;
  assert_true(stat(path.data, &st) == 0 && S_ISDIR(st.st_mode));
  buf_printf(&file, "%s/f", dir);
  assert_true(file_write_atomic(file.data, "", 0, err, sizeof err));
  buf_append_str(&file, "/sub");
  assert_false(file_make_dirs(file.data, err, sizeof err));
  assert_non_null(strstr(err, "Not a directory"));
  buf_clear(&file);
  buf_printf(&file, "%s/f", dir);
  assert_false(file_make_dirs(file.data, err, sizeof err));  // a file where a folder should be
  unlink(file.data);
  Buf rm = {0};
  buf_printf(&rm, "rm -r '%s'", dir);
  assert_int_equal(system(rm.data), 0);
  free(dir);
  buf_free(&rm);
  buf_free(&path);
  buf_free(&file);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_atomic_replace),
      cmocka_unit_test(test_atomic_failure_leaves_old_file),
      cmocka_unit_test(test_atomic_missing_folder),
      cmocka_unit_test(test_make_dirs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
