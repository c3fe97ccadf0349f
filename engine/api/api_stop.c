// api_stop.c: the stop-string matcher: a match can only start inside the held-back text (every
// earlier suffix that could begin one was held back), so each call searches pending text only.
// One allocation per request (the copies); none per token once pending has grown.
#include "api/api_stop.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"

void api_stop_init(ApiStop *st, const char *const *strings, size_t num, bool include) {
  *st = (ApiStop){.num = num, .include = include, .matched = -1};
  st->strings = num ? xcalloc(num, sizeof *st->strings) : NULL;
  for (size_t i = 0; i < num; i++) st->strings[i] = xstrdup(strings[i]);
}

void api_stop_free(ApiStop *st) {
  for (size_t i = 0; i < st->num; i++) free(st->strings[i]);
  free(st->strings);
  buf_free(&st->pending);
  *st = (ApiStop){.matched = -1};
}

// Length of the longest suffix of s[0..n) that is a proper prefix of a stop string.
static size_t held_suffix(const ApiStop *st, const char *s, size_t n) {
  size_t best = 0;
  for (size_t i = 0; i < st->num; i++) {
    size_t len = strlen(st->strings[i]);
    for (size_t k = len - 1 < n ? len - 1 : n; k > best; k--)
      if (memcmp(s + n - k, st->strings[i], k) == 0) {
        best = k;
        break;
      }
  }
  return best;
}

bool api_stop_filter(ApiStop *st, const char *text, size_t n, Buf *out) {
  if (st->matched >= 0) return true;
  buf_append(&st->pending, text, n);
  const char *p = st->pending.data ? st->pending.data : "";
  size_t len = st->pending.len;
  // The earliest match (the longest string first where two start at the same place).
  size_t at = len;
  for (size_t i = 0; i < st->num; i++) {
    const char *hit = memmem(p, len, st->strings[i], strlen(st->strings[i]));
    size_t pos = hit ? (size_t)(hit - p) : len;
    if (hit &&
        (pos < at || (pos == at && strlen(st->strings[i]) > strlen(st->strings[st->matched]))))
      at = pos, st->matched = (int)i;
  }
  if (st->matched >= 0) {
    size_t end = at + (st->include ? strlen(st->strings[st->matched]) : 0);
    buf_append(out, p, end);
    buf_clear(&st->pending);
    return true;
  }
  size_t keep = held_suffix(st, p, len);
  buf_append(out, p, len - keep);
  memmove(st->pending.data, p + len - keep, keep);
  st->pending.len = keep;
  if (st->pending.data) st->pending.data[keep] = '\0';
  return false;
}

void api_stop_flush(ApiStop *st, Buf *out) {
  if (st->matched < 0) buf_append(out, st->pending.data, st->pending.len);
  buf_clear(&st->pending);
}
