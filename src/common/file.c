// file.c: whole-file reads and locating the running executable.
#include "common/file.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool file_read_all(const char *path, Buf *out, char *err, size_t err_size) {
  bool is_stdin = strcmp(path, "-") == 0;
  FILE *f = is_stdin ? stdin : fopen(path, "rb");
  if (!f) {
    snprintf(err, err_size, "cannot open %s: %s", path, strerror(errno));
    return false;
  }
  char chunk[1 << 16];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_append(out, chunk, n);
  bool ok = !ferror(f);
  if (!ok) snprintf(err, err_size, "cannot read %s: %s", path, strerror(errno));
  if (!is_stdin) fclose(f);
  if (ok && !out->data) buf_append(out, "", 0);  // an empty file still yields a valid string
  return ok;
}

bool file_exe_dir(char *out, size_t out_size) {
  ssize_t n = readlink("/proc/self/exe", out, out_size - 1);
  if (n <= 0 || (size_t)n >= out_size - 1) return false;
  out[n] = '\0';
  char *slash = strrchr(out, '/');
  if (!slash) return false;
  *slash = '\0';
  return true;
}
