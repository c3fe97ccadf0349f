// out_file.h: atomic writes of the report files (summary.md, summary.csv, plot data and scripts,
// exported result files): a temporary file beside the target, fsync, rename, so a reader never
// sees half a file. Writes bytes only; knows nothing of what they mean.
#ifndef GB_SWEEP_OUT_FILE_H
#define GB_SWEEP_OUT_FILE_H

#include <stdbool.h>
#include <stddef.h>

// Writes data[len] to path atomically. False with err naming the path and the reason; no
// temporary file is left behind.
bool out_file_write(const char *path, const char *data, size_t len, char *err, size_t err_size);

#endif
