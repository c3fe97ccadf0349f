// file.h: whole-file reads, atomic whole-file writes, folder creation and the path of the
// running executable.
// Errors are returned as messages that name the file and the system's reason, never printed.
#ifndef GB_COMMON_FILE_H
#define GB_COMMON_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

// Reads the whole file (or stdin for "-") into out. Returns false and fills err on failure.
bool file_read_all(const char *path, Buf *out, char *err, size_t err_size);

// Replaces path with data[len] atomically: a temporary file beside it (the mode open() would
// give), fsync, rename, then a best-effort fsync of the directory, so a reader never sees half a
// file and a crash leaves the old file or the new one. False with err naming the path and the
// system's reason; no temporary file is left behind.
bool file_write_atomic(const char *path, const void *data, size_t len, char *err,
                       size_t err_size);
// The same for a file too big to hold in memory: produce writes the whole content to fd (with
// file_write_all) and returns false, errno set, when it cannot.
typedef bool (*FileProducer)(int fd, void *ctx);
bool file_write_atomic_with(const char *path, FileProducer produce, void *ctx, char *err,
                            size_t err_size);
// Writes all len bytes to fd (retrying short writes and EINTR); false with errno set.
bool file_write_all(int fd, const void *data, size_t len);

// Creates dir and its missing parents (mode 0755, as `mkdir -p`). False with err naming the
// folder that could not be made and the system's reason.
bool file_make_dirs(const char *dir, char *err, size_t err_size);

// Directory of the running executable (from /proc/self/exe), e.g. ".../build/bin".
// Returns false when it cannot be found.
bool file_exe_dir(char *out, size_t out_size);

#endif
