// vocab.h: the byte-level BPE vocabulary of o200k_base (token bytes <-> rank) loaded from a
// .tiktoken file, verified against its official sha256, with an open-addressing hash for
// bytes -> rank. Knows nothing of regexes, special tokens or chat formats.
#ifndef GB_TEXT_VOCAB_H
#define GB_TEXT_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// sha256 of OpenAI's o200k_base.tiktoken (tiktoken's published checksum).
#define VOCAB_O200K_BASE_SHA256 "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

typedef struct {
  uint8_t *bytes;       // [total bytes] every token's bytes back to back, in rank order
  uint32_t *offsets;    // [num_ranks + 1] token r is bytes[offsets[r] .. offsets[r + 1])
  uint32_t num_ranks;   // 199,998 for o200k_base
  uint64_t *table;      // [table_mask + 1] (hash high 32 bits << 32) | (rank + 1); 0 = empty
  uint32_t table_mask;  // table size - 1 (a power of two, at most half full)
} Vocab;

// Loads and verifies path. expected_sha256 (hex) may be NULL to skip the check.
// Returns false with a message naming the file, the line and the fix.
bool vocab_load(Vocab *v, const char *path, const char *expected_sha256, char *err,
                size_t err_size);
void vocab_free(Vocab *v);

// Rank of the token whose bytes are s[0..n), or -1 when no token has those bytes.
int32_t vocab_rank(const Vocab *v, const uint8_t *s, size_t n);

static inline const uint8_t *vocab_token_bytes(const Vocab *v, uint32_t rank, size_t *len) {
  *len = v->offsets[rank + 1] - v->offsets[rank];
  return v->bytes + v->offsets[rank];
}

#endif
