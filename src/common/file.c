// file.c: whole-file reads, atomic whole-file writes, `mkdir -p` and locating the running
// executable.
#include "common/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

bool file_make_dirs(const char *dir, char *err, size_t err_size) {
  Buf path = {0};
  bool ok = true;
  buf_append_str(&path, dir);
  for (size_t i = 1; ok && i <= path.len; i++) {
    if (path.data[i] != '/' && path.data[i] != '\0') continue;
    char saved = path.data[i];
    path.data[i] = '\0';
    struct stat st;
    if (mkdir(path.data, 0755) != 0 && !(errno == EEXIST && stat(path.data, &st) == 0 &&
                                         S_ISDIR(st.st_mode))) {
      snprintf(err, err_size, "cannot create %s: %s", path.data,
               strerror(errno == EEXIST ? ENOTDIR : errno));
      ok = false;
    }
    path.data[i] = saved;
  }
  buf_free(&path);
  return ok;
}

bool file_write_all(int fd, const void *bytes, size_t len) {
  const char *data = bytes;
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    len -= (size_t)n;
  }
  return true;
}

bool file_write_atomic_with(const char *path, FileProducer produce, void *ctx, char *err,
                            size_t err_size) {
  const char *slash = strrchr(path, '/');
  size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
  Buf temp = {0};
  buf_append(&temp, path, dir_len);
  buf_printf(&temp, ".%s.XXXXXX", path + dir_len);
  int fd = mkstemp(temp.data);
  bool ok = fd >= 0;
  if (ok) {
    mode_t mask = umask(0);  // mkstemp makes 0600; give the file what open() would
    umask(mask);
    ok = fchmod(fd, 0666 & ~mask) == 0 && produce(fd, ctx) && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    ok = ok && rename(temp.data, path) == 0;
  }
  int saved_errno = errno;
  if (!ok) {
    if (fd >= 0) unlink(temp.data);
    snprintf(err, err_size, "cannot write %s: %s", path, strerror(saved_errno));
  } else {
    buf_clear(&temp);
    buf_append(&temp, dir_len ? path : ".", dir_len ? dir_len : 1);
    int dir_fd = open(temp.data, O_RDONLY | O_DIRECTORY);
    if (dir_fd >= 0) {
      fsync(dir_fd);  // best effort: the rename is already visible
      close(dir_fd);
    }
  }
  buf_free(&temp);
  return ok;
}

typedef struct {
  const void *data;
  size_t len;
} Bytes;

static bool write_bytes(int fd, void *ctx) {
  const Bytes *b = ctx;
  return file_write_all(fd, b->data, b->len);
}

bool file_write_atomic(const char *path, const void *data, size_t len, char *err,
                       size_t err_size) {
  Bytes b = {data, len};
  return file_write_atomic_with(path, write_bytes, &b, err, err_size);
}
