// api_stop.h: stop strings on one choice's generated text, as vLLM's detokenizer applies them:
// the answer ends at the first match, before it (or after it with include_stop_str_in_output),
// and text that could still be the start of a stop string is held back, so nothing streamed is
// ever retracted. Text in, text out; knows nothing of tokens or JSON.
#ifndef GE_API_API_STOP_H
#define GE_API_API_STOP_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

typedef struct {
  char **strings;  // [num] owned copies, none empty
  size_t num;
  bool include;  // include_stop_str_in_output
  Buf pending;   // text held back: it ends with a prefix of a stop string
  int matched;   // index of the stop string that matched, -1 before
} ApiStop;

void api_stop_init(ApiStop *st, const char *const *strings, size_t num, bool include);
void api_stop_free(ApiStop *st);

// Appends to out the part of text[0..n) (after what was held back) that can be shown now.
// True when a stop string matched: out then ends where the answer does; later text is ignored.
bool api_stop_filter(ApiStop *st, const char *text, size_t n, Buf *out);

// Appends what is still held back (the answer ended without a match).
void api_stop_flush(ApiStop *st, Buf *out);

#endif
