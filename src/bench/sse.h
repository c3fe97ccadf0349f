// sse.h: an incremental Server-Sent Events parser (the text/event-stream format). Bytes are fed
// as they arrive, split anywhere; complete events come out one at a time. Owns only its
// buffers: it knows nothing about OpenAI chunks, JSON or timing, and never allocates per event
// once its buffers have grown to the largest event seen.
#ifndef GB_BENCH_SSE_H
#define GB_BENCH_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

typedef enum {
  SSE_DATA,     // an event's data: its data lines joined with '\n' (e.g. a JSON chunk, "[DONE]")
  SSE_COMMENT,  // a line starting with ':' (text after the ':' and one optional space)
} SseKind;

typedef struct {
  SseKind kind;
  const char *text;  // [len] bytes, NUL-terminated; valid until the next sse_* call
  size_t len;
} SseEvent;

// Zero-initialise ({0}) before use. Lines end in "\n", "\r\n" or "\r"; fields other than
// "data" (event, id, retry) are ignored; an event with no data line is not emitted.
typedef struct {
  Buf in;  // fed bytes; [pos, in.len) not parsed yet
  size_t pos;
  Buf data;         // data lines of the event being assembled
  bool has_data;    // a data line was seen since the last dispatch
  bool clear_data;  // data holds an event already returned; clear it before the next line
  bool after_cr;    // the last line ended in '\r': a '\n' right after it ends nothing
} SseParser;

// Appends bytes (any split: half a line, several events at once).
void sse_feed(SseParser *p, const char *bytes, size_t n);

// Next complete event or comment; false when the bytes fed so far hold no more.
bool sse_next(SseParser *p, SseEvent *ev);

// The stream ended: a last line or event left without its terminator is completed, so that
// sse_next returns it.
void sse_finish(SseParser *p);

// Forgets any partial input, keeping the buffers for the next stream.
void sse_reset(SseParser *p);
void sse_free(SseParser *p);

#endif
