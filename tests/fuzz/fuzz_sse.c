// fuzz_sse.c: libFuzzer target for the load generator's SSE parser (src/bench/sse.c). Input:
// one byte n, then n % 8 cut bytes, then the stream. The stream is parsed twice, fed whole and
// fed in pieces whose lengths the cut bytes give (each % 64, cycled; 0 feeds nothing), draining
// events after every feed and after sse_finish: both must give the same events, each
// NUL-terminated.
#include <string.h>

#include "bench/sse.h"
#include "fuzz_util.h"

// Drains p, appending each event as kind, length and bytes.
static void drain(SseParser *p, Buf *out) {
  SseEvent ev;
  while (sse_next(p, &ev)) {
    fuzz_require(ev.kind == SSE_DATA || ev.kind == SSE_COMMENT, "event kind");
    fuzz_require(ev.text[ev.len] == '\0', "event text is NUL-terminated");
    buf_append_byte(out, (uint8_t)ev.kind);
    buf_append(out, &ev.len, sizeof ev.len);
    buf_append(out, ev.text, ev.len);
  }
}

static void parse(const uint8_t *stream, size_t n, const uint8_t *cuts, size_t num_cuts, Buf *out) {
  SseParser p = {0};
  bool progress = false;  // some cut is not 0, so the pieces reach the end
  for (size_t k = 0; k < num_cuts; k++) progress |= cuts[k] % 64 != 0;
  for (size_t at = 0, k = 0; at < n; k++) {
    size_t piece = progress ? cuts[k % num_cuts] % 64 : n;
    if (piece > n - at) piece = n - at;
    sse_feed(&p, (const char *)stream + at, piece);
    drain(&p, out);
    at += piece;
  }
  sse_finish(&p);
  drain(&p, out);
  sse_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  size_t num_cuts = data[0] % 8;
  if (size < 1 + num_cuts) return 0;
  const uint8_t *cuts = data + 1, *stream = data + 1 + num_cuts;
  size_t n = size - 1 - num_cuts;
  Buf whole = {0}, pieces = {0};
  parse(stream, n, NULL, 0, &whole);
  parse(stream, n, cuts, num_cuts, &pieces);
  bool same =
      whole.len == pieces.len && (!whole.len || !memcmp(whole.data, pieces.data, whole.len));
  fuzz_require(same, "events do not depend on how the stream is split");
  buf_free(&whole);
  buf_free(&pieces);
  return 0;
}
