// fuzz_util.c: the shared helpers of fuzz_util.h. Must stay small and free of target logic;
// every target's checks live in its own file.
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "text/utf8.h"

const Tokenizer *fuzz_tokenizer(void) {
  static Tokenizer tok;
  static bool loaded;
  if (!loaded) {
    char err[512];
    if (!tok_init(&tok, TOK_O200K_HARMONY, NULL, err, sizeof err)) {
      fprintf(stderr, "fuzz: %s\n", err);
      abort();
    }
    loaded = true;
  }
  return &tok;
}

void fuzz_require(bool cond, const char *what) {
  if (cond) return;
  fprintf(stderr, "fuzz invariant failed: %s\n", what);
  abort();
}

void fuzz_ids_from_bytes(const uint8_t *data, size_t size, TokenIds *out) {
  for (size_t i = 0; i + 4 <= size; i += 4) {
    uint32_t v = (uint32_t)data[i] | (uint32_t)data[i + 1] << 8 | (uint32_t)data[i + 2] << 16 |
                 (uint32_t)data[i + 3] << 24;
    token_ids_push(out, v % (TOK_HARMONY_VOCAB_SIZE + 64));
  }
}

bool fuzz_valid_utf8(const char *s, size_t n) {
  const uint8_t *u = (const uint8_t *)s;
  for (size_t i = 0; i < n;) {
    int k = utf8_next(u + i, n - i);
    if (k <= 0) return false;
    i += (size_t)k;
  }
  return true;
}

const char *fuzz_input_file(const uint8_t *data, size_t size) {
  static int fd = -1;
  static char path[64];
  if (fd < 0) {
    fd = memfd_create("fuzz-input", MFD_CLOEXEC);
    fuzz_require(fd >= 0, "memfd_create");
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  }
  fuzz_require(ftruncate(fd, 0) == 0, "ftruncate of the input file");
  for (size_t done = 0; done < size;) {
    ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
    fuzz_require(n > 0, "pwrite of the input file");
    done += (size_t)n;
  }
  return path;
}
