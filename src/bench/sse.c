// sse.c: the incremental SSE parser of sse.h (line splitting, field parsing, event dispatch as
// the WHATWG event-stream rules say). Must not interpret event payloads.
#include "bench/sse.h"

#include <string.h>

void sse_feed(SseParser *p, const char *bytes, size_t n) {
  if (p->pos > 0) {  // drop what was parsed, so the buffer only grows with unparsed input
    memmove(p->in.data, p->in.data + p->pos, p->in.len - p->pos);
    p->in.len -= p->pos;
    p->pos = 0;
  }
  buf_append(&p->in, bytes, n);
}

void sse_finish(SseParser *p) { sse_feed(p, "\n\n", 2); }

// One complete line (without its terminator). Returns true when it completes an event or is a
// comment, filling ev.
static bool handle_line(SseParser *p, char *line, size_t len, SseEvent *ev) {
  if (len == 0) {
    if (!p->has_data) return false;
    *ev = (SseEvent){SSE_DATA, p->data.data, p->data.len};
    p->has_data = false;
    p->clear_data = true;
    return true;
  }
  if (line[0] == ':') {
    size_t skip = (len > 1 && line[1] == ' ') ? 2 : 1;
    line[len] = '\0';  // overwrites the line terminator, already consumed
    *ev = (SseEvent){SSE_COMMENT, line + skip, len - skip};
    return true;
  }
  const char *colon = memchr(line, ':', len);
  size_t name_len = colon ? (size_t)(colon - line) : len;
  if (name_len != 4 || memcmp(line, "data", 4) != 0) return false;
  const char *value = colon ? colon + 1 : line + len;
  if (value < line + len && *value == ' ') value++;
  if (p->clear_data) {
    buf_clear(&p->data);
    p->clear_data = false;
  }
  if (p->has_data) buf_append_byte(&p->data, '\n');
  buf_append(&p->data, value, (size_t)(line + len - value));
  p->has_data = true;
  return false;
}

bool sse_next(SseParser *p, SseEvent *ev) {
  while (p->pos < p->in.len) {
    char *start = p->in.data + p->pos;
    size_t avail = p->in.len - p->pos;
    if (p->after_cr) {
      p->after_cr = false;
      if (start[0] == '\n') {
        p->pos++;
        continue;
      }
    }
    size_t len = 0;
    while (len < avail && start[len] != '\n' && start[len] != '\r') len++;
    if (len == avail) return false;  // no terminator yet: wait for more bytes
    p->after_cr = start[len] == '\r';
    p->pos += len + 1;
    if (handle_line(p, start, len, ev)) return true;
  }
  return false;
}

void sse_reset(SseParser *p) {
  buf_clear(&p->in);
  buf_clear(&p->data);
  p->pos = 0;
  p->has_data = p->clear_data = p->after_cr = false;
}

void sse_free(SseParser *p) {
  buf_free(&p->in);
  buf_free(&p->data);
  *p = (SseParser){0};
}
