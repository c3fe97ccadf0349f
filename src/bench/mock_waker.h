// mock_waker.h: resumes suspended libmicrohttpd connections at their due times, from one timer
// thread, so that mock-server streams waiting for their next event need no thread each. Knows
// nothing of what the streams send.
#ifndef GB_BENCH_MOCK_WAKER_H
#define GB_BENCH_MOCK_WAKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct MHD_Connection;

typedef struct {
  int64_t due_ns;
  struct MHD_Connection *conn;
} MockWake;

typedef struct {
  pthread_mutex_t mu;  // guards the fields below it
  pthread_cond_t cv;   // on CLOCK_MONOTONIC
  MockWake *wakes;     // min-heap on due_ns
  size_t num_wakes, cap_wakes;
  bool refusing;  // mock_waker_release_all was called: no more suspensions
  bool exiting;   // the thread should end
  pthread_t thread;
  bool started;
} MockWaker;

// Starts the timer thread. False when it cannot be created.
bool mock_waker_start(MockWaker *w);

// From an MHD reader callback (the only place MHD allows it): suspends conn until due_ns.
// False, without suspending, once release_all was called: the caller ends the stream instead.
bool mock_waker_suspend(MockWaker *w, struct MHD_Connection *conn, int64_t due_ns);

// Refuses further suspensions and resumes every suspended connection now (MHD must not be
// stopped with suspended connections).
void mock_waker_release_all(MockWaker *w);

// Ends the thread and frees the heap. Call after release_all.
void mock_waker_free(MockWaker *w);

#endif
