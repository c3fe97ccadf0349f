// replay.c: main() for the fuzz targets in `make test` (gcc, no libFuzzer): runs
// LLVMFuzzerTestOneInput on every file of the target's committed corpus, seeds and saved crash
// inputs alike, and prints one TAP line. Built as BUILD/tests/test_fuzz_NAME from
// tests/fuzz/fuzz_NAME.c; the corpus is tests/fuzz/corpus/NAME (from the repository root, where
// scripts/run-tests.sh runs), or the files and folders given as arguments. A crashing input
// prints "not ok" naming the file before the process dies.
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/file.h"
#include "fuzz_util.h"

// The input being run, for the crash report.
static char current[4096];

// Weak: present only in sanitizer builds, where a report ends in the runtime's own exit.
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static void report_crash(void) {
  char line[4300];
  int n = snprintf(line, sizeof line, "not ok 1 - corpus input %s crashed\n", current);
  if (n > 0) (void)!write(STDOUT_FILENO, line, (size_t)n);
}

static void on_signal(int sig) {
  report_crash();
  signal(sig, SIG_DFL);
  raise(sig);
}

// Runs one file; returns 1.
static size_t run_file(const char *path) {
  Buf data = {0};
  char err[512];
  if (!file_read_all(path, &data, err, sizeof err)) {
    printf("not ok 1 - %s\n", err);
    exit(1);
  }
  if (!data.data) buf_append(&data, "", 0);  // an empty input, like libFuzzer's, is not NULL
  snprintf(current, sizeof current, "%s", path);
  LLVMFuzzerTestOneInput((const uint8_t *)data.data, data.len);
  buf_free(&data);
  return 1;
}

// Runs path: a file, or every file in a folder (sorted, hidden ones skipped); returns the count.
static size_t run_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return run_file(path);
  struct dirent **entries;
  int num = scandir(path, &entries, NULL, alphasort);
  if (num < 0) {
    printf("not ok 1 - cannot read %s\n", path);
    exit(1);
  }
  size_t count = 0;
  for (int i = 0; i < num; i++) {
    if (entries[i]->d_name[0] != '.') {
      Buf file = {0};
      buf_printf(&file, "%s/%s", path, entries[i]->d_name);
      count += run_path(file.data);
      buf_free(&file);
    }
    free(entries[i]);
  }
  free(entries);
  return count;
}

int main(int argc, char **argv) {
  const char *exe = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
  const char *name = strncmp(exe, "test_fuzz_", 10) == 0 ? exe + 10 : exe;
  signal(SIGABRT, on_signal);  // CHECK and fuzz_require abort
  if (__sanitizer_set_death_callback) {
    __sanitizer_set_death_callback(report_crash);  // the sanitizer keeps its own SEGV handler
  } else {
    int signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof signals / sizeof *signals; i++) signal(signals[i], on_signal);
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("1..1\n");
  size_t count = 0;
  Buf corpus = {0};
  buf_printf(&corpus, "tests/fuzz/corpus/%s", name);
  if (argc > 1)
    for (int i = 1; i < argc; i++) count += run_path(argv[i]);
  else
    count = run_path(corpus.data);
  printf("ok 1 - fuzz target %s: %zu corpus inputs replayed\n", name, count);
  buf_free(&corpus);
  return 0;
}
