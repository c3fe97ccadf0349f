// out_file.c: temp + fsync + rename for every file the reports write (see out_file.h).
#include "sweep/out_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"

bool out_file_write(const char *path, const char *data, size_t len, char *err, size_t err_size) {
  Buf tmp = {0};
  buf_printf(&tmp, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp.data);
  if (fd < 0) {
    snprintf(err, err_size, "%s: cannot create a temporary file: %s", path, strerror(errno));
    buf_free(&tmp);
    return false;
  }
  bool ok = fchmod(fd, 0644) == 0;
  for (size_t done = 0; ok && done < len;) {
    ssize_t n = write(fd, data + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += (size_t)n;
  }
  ok = ok && fsync(fd) == 0;
  ok = close(fd) == 0 && ok;
  ok = ok && rename(tmp.data, path) == 0;
  if (!ok) {
    snprintf(err, err_size, "%s: cannot write: %s", path, strerror(errno));
    unlink(tmp.data);
  }
  buf_free(&tmp);
  return ok;
}
