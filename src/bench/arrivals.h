// arrivals.h: the arrival schedule of a benchmark: when each request is meant to be sent, as an
// offset from the start, following vLLM v0.10.2's get_request (spec vllm-bench.md section 4).
// It only computes times: sleeping, sending and --max-concurrency belong to the client.
//
// Semantics kept from vLLM:
//  - request_rate inf (without ramp-up): every offset is 0.
//  - otherwise each request draws a gap ~ Gamma(shape = burstiness, scale = 1/(rate*burstiness))
//    (mean 1/rate; burstiness 1 is a Poisson process, < 1 burstier, > 1 more regular), the gaps
//    are summed, and without ramp-up the sums are scaled so that the last request goes out at
//    exactly num_requests/rate seconds. Request 0 waits for its own gap too: the schedule does
//    not start at 0.
//  - ramp-up (linear or exponential) gives request i its own rate and skips the scaling.
// The gaps come from our Rng seeded with --seed, not numpy's MT19937, so the times differ from
// vLLM's draw by draw but follow the same distribution.
#ifndef GB_BENCH_ARRIVALS_H
#define GB_BENCH_ARRIVALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
  ARRIVALS_RAMP_NONE,
  ARRIVALS_RAMP_LINEAR,       // rate_i = start + (end - start) * i / max(N-1, 1)
  ARRIVALS_RAMP_EXPONENTIAL,  // rate_i = start * (end / start) ^ (i / max(N-1, 1))
} RampUpStrategy;

typedef struct {
  double request_rate;  // --request-rate, requests/s; INFINITY = all at once (vLLM's default)
  double burstiness;    // --burstiness, the gamma shape (vLLM's default 1.0)
  uint64_t seed;        // --seed
  RampUpStrategy ramp_up;    // --ramp-up-strategy (needs request_rate INFINITY)
  double ramp_up_start_rps;  // --ramp-up-start-rps
  double ramp_up_end_rps;    // --ramp-up-end-rps
} ArrivalParams;

// The rate (requests/s) request index of num_requests is paced at: request_rate, or its ramp-up
// rate (for vLLM's rps_change_events).
double arrivals_rate(const ArrivalParams *p, size_t index, size_t num_requests);

// vLLM's rps_change_events of a ramp-up: the start rate (first_request SIZE_MAX: at the
// benchmark's start), then each time int(rate of request i) rises above the last one recorded,
// every integer rate passed (a rise from 1 to 4 gives 2, 3 and 4), each with i (stamped when
// request i is due). *rps and *first_request get malloc'd arrays of the returned count (0 and
// NULL without ramp-up).
size_t arrivals_rps_changes(const ArrivalParams *p, size_t num_requests, int **rps,
                            size_t **first_request);

// Fills send_offsets_ns[num_requests] with intended send times in nanoseconds from the start,
// non-decreasing. Returns false with a message naming the flag when the parameters are invalid
// (the same ones vLLM rejects).
bool arrivals_schedule(const ArrivalParams *p, size_t num_requests, int64_t *send_offsets_ns,
                       char *err, size_t err_size);

#endif
