// bpe.h: byte-pair merging of one pre-tokenized piece into ranks, exactly as tiktoken does it
// (repeatedly merge the adjacent pair whose concatenation has the lowest rank, leftmost first).
// O(n log n) in the piece length, so a long run of letters cannot stall the caller.
#ifndef GB_TEXT_BPE_H
#define GB_TEXT_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "text/token_ids.h"
#include "text/vocab.h"

// Reusable work arrays, grown to the longest piece seen; zero-initialise, free with bpe_scratch_free.
typedef struct {
  uint32_t *next;   // [cap] index of the part after part i (n = end); part i starts at byte i
  uint32_t *prev;   // [cap] index of the part before i
  uint32_t *rank;   // [cap] rank of part i merged with its next part, UINT32_MAX if none/dead
  uint64_t *heap;   // [3 * cap] min-heap of (rank << 32 | part index)
  size_t cap;
} BpeScratch;

// Appends the ranks that piece[0..n) encodes to out. Every single byte is a token, so any bytes
// (including invalid UTF-8) encode.
void bpe_encode_piece(const Vocab *v, const uint8_t *piece, size_t n, BpeScratch *s, TokenIds *out);
void bpe_scratch_free(BpeScratch *s);

#endif
