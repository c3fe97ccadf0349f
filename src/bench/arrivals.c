// arrivals.c: gamma-gap arrival schedules (see arrivals.h). Pure computation: no clock, no I/O.
#include "bench/arrivals.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/rng.h"
#include "common/check.h"

double arrivals_rate(const ArrivalParams *p, size_t index, size_t num_requests) {
  double progress = (double)index / (double)(num_requests >= 2 ? num_requests - 1 : 1);
  switch (p->ramp_up) {
    case ARRIVALS_RAMP_LINEAR:
      return p->ramp_up_start_rps + (p->ramp_up_end_rps - p->ramp_up_start_rps) * progress;
    case ARRIVALS_RAMP_EXPONENTIAL:
      return p->ramp_up_start_rps * pow(p->ramp_up_end_rps / p->ramp_up_start_rps, progress);
    case ARRIVALS_RAMP_NONE: break;
  }
  return p->request_rate;
}

size_t arrivals_rps_changes(const ArrivalParams *p, size_t num_requests, int **rps,
                            size_t **first_request) {
  *rps = NULL;
  *first_request = NULL;
  if (p->ramp_up == ARRIVALS_RAMP_NONE) return 0;
  int last = (int)p->ramp_up_start_rps;
  size_t n = 0, cap = (size_t)((int)p->ramp_up_end_rps - last) + 2;  // start .. int(end)
  *rps = xmalloc(cap * sizeof **rps);
  *first_request = xmalloc(cap * sizeof **first_request);
  (*rps)[n] = last;
  (*first_request)[n++] = SIZE_MAX;
  for (size_t i = 0; i < num_requests; i++) {
    int now = (int)arrivals_rate(p, i, num_requests);
    for (; last < now && n < cap; n++) {
      (*rps)[n] = ++last;
      (*first_request)[n] = i;
    }
  }
  return n;
}

static bool check_params(const ArrivalParams *p, char *err, size_t err_size) {
  const char *why = NULL;
  if (!(p->burstiness > 0) || isinf(p->burstiness))
    why = "--burstiness must be a positive finite number (1.0 = Poisson arrivals)";
  else if (p->ramp_up == ARRIVALS_RAMP_NONE && !(p->request_rate > 0))
    why = "--request-rate must be positive, or inf to send every request at once";
  else if (p->ramp_up != ARRIVALS_RAMP_NONE && !isinf(p->request_rate))
    why = "--ramp-up-strategy needs --request-rate left at inf (the ramp sets the rate)";
  else if (p->ramp_up != ARRIVALS_RAMP_NONE &&
           !(p->ramp_up_start_rps >= 0 && p->ramp_up_start_rps <= p->ramp_up_end_rps))
    why = "--ramp-up-start-rps and --ramp-up-end-rps must satisfy 0 <= start <= end";
  else if (p->ramp_up != ARRIVALS_RAMP_NONE && !(p->ramp_up_start_rps > 0))
    why = "--ramp-up-start-rps must be above 0: request 0 is paced at the start rate (vLLM "
          "v0.10.2 divides by zero there)";
  if (why) snprintf(err, err_size, "%s", why);
  return why == NULL;
}

bool arrivals_schedule(const ArrivalParams *p, size_t num_requests, int64_t *send_offsets_ns,
                       char *err, size_t err_size) {
  if (!check_params(p, err, err_size)) return false;
  Rng rng;
  rng_seed(&rng, p->seed);
  double *sums_s = xmalloc((num_requests ? num_requests : 1) * sizeof *sums_s);
  double total_s = 0;
  for (size_t i = 0; i < num_requests; i++) {
    double rate = arrivals_rate(p, i, num_requests);
    if (!isinf(rate)) total_s += rng_gamma(&rng, p->burstiness, 1.0 / (rate * p->burstiness));
    sums_s[i] = total_s;
  }
  double scale = 1.0;
  if (p->ramp_up == ARRIVALS_RAMP_NONE && total_s > 0)
    scale = ((double)num_requests / p->request_rate) / total_s;
  for (size_t i = 0; i < num_requests; i++)
    send_offsets_ns[i] = (int64_t)llround(sums_s[i] * scale * 1e9);
  free(sums_s);
  return true;
}
