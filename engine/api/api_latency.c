// api_latency.c: vLLM's bucket bounds (vllm/v1/metrics/loggers.py) and the per-request
// observations behind /metrics' latency histograms. Must not allocate or format text.
#include "api/api_latency.h"

#include <string.h>

#include "common/check.h"

static const double TTFT_BOUNDS[] = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                     0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                     20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
static const double ITL_BOUNDS[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                    0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
static const double REQUEST_BOUNDS[] = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                        5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                        60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

void api_histogram_init(ApiHistogram *h, const double *bounds, int n) {
  CHECK(n >= 0 && n <= API_HIST_MAX_BOUNDS);
  *h = (ApiHistogram){.num_bounds = n};
  memcpy(h->bounds, bounds, (size_t)n * sizeof *bounds);
}

void api_histogram_init_125(ApiHistogram *h, int max_value) {
  static const double mantissas[] = {1, 2, 5};
  double bounds[API_HIST_MAX_BOUNDS];
  int n = 0;
  for (double scale = 1;; scale *= 10)
    for (int i = 0; i < 3; i++) {
      double v = mantissas[i] * scale;
      if (v > max_value || n == API_HIST_MAX_BOUNDS) {
        api_histogram_init(h, bounds, n);
        return;
      }
      bounds[n++] = v;
    }
}

void api_histogram_observe(ApiHistogram *h, double v) {
  int i = 0;
  while (i < h->num_bounds && v > h->bounds[i]) i++;
  h->bins[i]++;
  h->count++;
  h->sum += v;
}

void api_latency_init(ApiLatency *l, int max_model_len) {
  memset(l, 0, sizeof *l);
  pthread_mutex_init(&l->mu, NULL);
  ApiHistogram *h = l->st.hist;
  api_histogram_init(&h[API_LAT_TTFT], TTFT_BOUNDS, COUNT(TTFT_BOUNDS));
  api_histogram_init(&h[API_LAT_ITL], ITL_BOUNDS, COUNT(ITL_BOUNDS));
  api_histogram_init(&h[API_LAT_E2E], REQUEST_BOUNDS, COUNT(REQUEST_BOUNDS));
  api_histogram_init(&h[API_LAT_DECODE], REQUEST_BOUNDS, COUNT(REQUEST_BOUNDS));
  api_histogram_init_125(&h[API_LAT_PROMPT_TOKENS], max_model_len);
  api_histogram_init_125(&h[API_LAT_GENERATION_TOKENS], max_model_len);
  api_histogram_init_125(&h[API_LAT_MAX_TOKENS], max_model_len);
}

void api_latency_free(ApiLatency *l) { pthread_mutex_destroy(&l->mu); }

void api_latency_submitted(ApiLatencyTrack *t, int max_tokens, int64_t now_ns) {
  *t = (ApiLatencyTrack){.submit_ns = now_ns, .max_tokens = max_tokens};
}

void api_latency_event(ApiLatency *l, ApiLatencyTrack *t, const TokenEvent *ev, int64_t now_ns) {
  ApiHistogram *h = l->st.hist;
  pthread_mutex_lock(&l->mu);
  if (ev->has_token) {
    if (t->first_token_ns)
      api_histogram_observe(&h[API_LAT_ITL], (double)(now_ns - t->last_token_ns) * 1e-9);
    else
      api_histogram_observe(&h[API_LAT_TTFT], (double)(now_ns - t->submit_ns) * 1e-9);
    if (!t->first_token_ns) t->first_token_ns = now_ns;
    t->last_token_ns = now_ns;
  }
  if (ev->finish == FINISH_STOP || ev->finish == FINISH_LENGTH) {
    l->st.num_finished[ev->finish == FINISH_STOP ? 0 : 1]++;
    api_histogram_observe(&h[API_LAT_E2E], (double)(now_ns - t->submit_ns) * 1e-9);
    double decode_ns = t->first_token_ns ? (double)(t->last_token_ns - t->first_token_ns) : 0;
    api_histogram_observe(&h[API_LAT_DECODE], decode_ns * 1e-9);
    api_histogram_observe(&h[API_LAT_PROMPT_TOKENS], ev->num_prompt_tokens);
    api_histogram_observe(&h[API_LAT_GENERATION_TOKENS], ev->num_output_tokens);
    api_histogram_observe(&h[API_LAT_MAX_TOKENS], t->max_tokens);
  } else if (ev->finish == FINISH_ABORT) {
    l->st.num_finished[2]++;
  }
  pthread_mutex_unlock(&l->mu);
}

void api_latency_read(ApiLatency *l, ApiLatencyStats *out) {
  pthread_mutex_lock(&l->mu);
  *out = l->st;
  pthread_mutex_unlock(&l->mu);
}
