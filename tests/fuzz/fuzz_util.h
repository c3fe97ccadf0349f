// fuzz_util.h: what the fuzz targets (tests/fuzz/fuzz_*.c) share: the o200k_harmony tokenizer
// loaded once per process, an invariant check that aborts (so libFuzzer and the replay both see
// a crash), token ids read from raw bytes, a UTF-8 validity test, and a file that holds the
// input for the loaders that only take a path. Test code only: nothing in src/ or engine/ uses it.
#ifndef GB_TESTS_FUZZ_UTIL_H
#define GB_TESTS_FUZZ_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text/token_ids.h"
#include "text/tokenizer.h"

// Every target defines this; libFuzzer (make fuzz) or tests/fuzz/replay.c (make test) calls it.
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// The o200k_harmony tokenizer (the default vocabulary path), loaded on first use; aborts with
// the loader's message when the vocabulary cannot be read.
const Tokenizer *fuzz_tokenizer(void);

// Aborts with "fuzz invariant failed: what" when cond is false.
void fuzz_require(bool cond, const char *what);

// Ids from data, 4 bytes (little-endian) each, taken modulo the harmony vocabulary size plus 64,
// so that every id is reachable and a few unknown ones occur. A tail under 4 bytes is ignored.
void fuzz_ids_from_bytes(const uint8_t *data, size_t size, TokenIds *out);

// True when s[0..n) is valid UTF-8.
bool fuzz_valid_utf8(const char *s, size_t n);

// Replaces the contents of one anonymous in-memory file (memfd) with data and returns a path
// that opens it ("/proc/self/fd/N"); the same file is reused for every input.
const char *fuzz_input_file(const uint8_t *data, size_t size);

#endif
