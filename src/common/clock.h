// clock.h: the monotonic clock every measurement uses (CLOCK_MONOTONIC, nanoseconds). The same
// clock in every process on a machine, so a client and a server on loopback can compare stamps.
#ifndef GB_COMMON_CLOCK_H
#define GB_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t clock_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Sleeps until the monotonic time deadline_ns (returns at once if it has passed).
static inline void clock_sleep_until_ns(int64_t deadline_ns) {
  struct timespec ts = {(time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
  }
}

#endif
