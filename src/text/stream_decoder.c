// stream_decoder.c: UTF-8-safe incremental decode: pending bytes + the token's bytes, emitted up
// to the last complete character.
#include "text/stream_decoder.h"

#include <string.h>

#include "text/utf8.h"

// Appends the valid characters of s[0..n) to out (invalid subparts as U+FFFD); returns how many
// bytes at the end form an unfinished character (0..3).
static size_t append_valid(const uint8_t *s, size_t n, Buf *out) {
  size_t i = 0, run = 0;  // s[run..i) is valid and not yet appended
  while (i < n) {
    int k = utf8_next(s + i, n - i);
    if (k > 0) {
      i += (size_t)k;
      continue;
    }
    buf_append(out, s + run, i - run);
    if (k == 0) return n - i;
    buf_append_str(out, UTF8_REPLACEMENT);
    i += (size_t)-k;
    run = i;
  }
  buf_append(out, s + run, i - run);
  return 0;
}

bool stream_decoder_push(StreamDecoder *d, const Tokenizer *t, uint32_t id, Buf *out) {
  size_t len;
  const uint8_t *bytes = tok_id_bytes(t, id, &len);
  if (!bytes) return false;
  size_t consumed = 0;
  if (!out->data) buf_append(out, "", 0);
  // Finish the pending character first, with at most 3 more bytes.
  while (d->num_pending > 0) {
    uint8_t window[8];
    size_t take = len - consumed < 3 ? len - consumed : 3;
    memcpy(window, d->pending, (size_t)d->num_pending);
    memcpy(window + d->num_pending, bytes + consumed, take);
    size_t total = (size_t)d->num_pending + take;
    int k = utf8_next(window, total);
    if (k == 0) {  // still unfinished: everything is pending
      memcpy(d->pending, window, total);
      d->num_pending = (int)total;
      return true;
    }
    size_t used = (size_t)(k > 0 ? k : -k);
    if (k > 0) buf_append(out, window, used);
    else buf_append_str(out, UTF8_REPLACEMENT);
    if (used >= (size_t)d->num_pending) {  // the pending bytes are gone
      consumed += used - (size_t)d->num_pending;
      d->num_pending = 0;
    } else {  // an invalid subpart inside pending: keep the rest pending and retry
      memmove(d->pending, d->pending + used, (size_t)d->num_pending - used);
      d->num_pending -= (int)used;
    }
  }
  size_t tail = append_valid(bytes + consumed, len - consumed, out);
  memcpy(d->pending, bytes + len - tail, tail);
  d->num_pending = (int)tail;
  return true;
}

void stream_decoder_flush(StreamDecoder *d, Buf *out) {
  if (d->num_pending) buf_append_str(out, UTF8_REPLACEMENT);
  d->num_pending = 0;
}

void stream_decoder_decode_all(const Tokenizer *t, const uint32_t *ids, size_t n, Buf *out) {
  StreamDecoder d = {0};
  if (!out->data) buf_append(out, "", 0);
  for (size_t i = 0; i < n; i++) stream_decoder_push(&d, t, ids[i], out);
  stream_decoder_flush(&d, out);
}
