// stream_decoder.h: incremental detokenization for streaming. Each token's bytes are appended
// as valid UTF-8 only: a character split across tokens waits until it is complete, and bytes
// that can never form a character become U+FFFD. Concatenating every push and the final flush
// equals the full decode whenever the full decode is valid UTF-8.
#ifndef GB_TEXT_STREAM_DECODER_H
#define GB_TEXT_STREAM_DECODER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "text/tokenizer.h"

typedef struct {
  uint8_t pending[4];  // the unfinished start of a character (at most 3 bytes)
  int num_pending;
} StreamDecoder;  // zero-initialise

// Appends what id completes to out. Returns false (appending nothing) for an unknown id.
bool stream_decoder_push(StreamDecoder *d, const Tokenizer *t, uint32_t id, Buf *out);

// End of stream: an unfinished character becomes U+FFFD.
void stream_decoder_flush(StreamDecoder *d, Buf *out);

// The text of ids[0..n) as valid UTF-8 (what a whole stream would emit), appended to out.
// Unknown ids are skipped.
void stream_decoder_decode_all(const Tokenizer *t, const uint32_t *ids, size_t n, Buf *out);

#endif
