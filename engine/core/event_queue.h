// event_queue.h: the engine's outbox: a thread-safe FIFO of TokenEvents from the engine thread to
// the one consumer (the HTTP dispatcher). Grows as needed; the producer never blocks.
#ifndef GE_CORE_EVENT_QUEUE_H
#define GE_CORE_EVENT_QUEUE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine.h"

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t nonempty;
  TokenEvent *events;  // [cap] ring buffer
  size_t cap;
  size_t head;         // index of the oldest event
  size_t len;
} EventQueue;

void event_queue_init(EventQueue *q);
void event_queue_free(EventQueue *q);
void event_queue_push(EventQueue *q, const TokenEvent *events, size_t n);
// Moves up to max events into out, waiting up to timeout_ns for the first; returns how many.
size_t event_queue_pop(EventQueue *q, TokenEvent *out, size_t max, int64_t timeout_ns);

#endif
