// cuda_profile.cu: where a CUDA rank's device time goes, op by op (GPTOSS_CUDA_PROFILE=1). Each
// op, while profiling, records a pair of CUDA events on the backend's stream around its work
// (an op called inside another, as the MoE's router product, counts as the outer op; the MoE
// is counted in four phases). The pairs
// are read back where the stream has just been synchronised (cuda_profile_collect after a copy
// to the host; or, when the pairs run out, at the next op's start, which then waits for the
// queued work: once per 4096 ops), so profiling adds two event records per op and little else.
// At the backend's end, if any op ran, the totals go to stderr as one table: calls, device ms,
// share of the summed op time, and the span of the device's timeline from the first op's start
// to the last op's end (what the ops do not fill of it, the device waited for the host).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.cuh"

#define CUDA_PROFILE_PENDING 4096  // event pairs recorded but not yet read

// In CudaProfileOp's order.
static const char *const cuda_profile_names[CUDA_PROF_COUNT] = {
    "embed",
    "rmsnorm",
    "linear (dense products)",
    "linear, >= 32768 outputs (unembedding)",
    "rope",
    "kv_write",
    "attention",
    "moe: router, top-k, grouping",
    "moe: experts mlp1 + SwiGLU",
    "moe: experts mlp2",
    "moe: weighted sum",
    "gather_rows",
    "copy_rows (tensor-parallel logits)",
    "add",
    "upload_batch",
    "sample",
    "to_host (logits rows)",
};

struct CudaProfile {
  cudaEvent_t start[CUDA_PROFILE_PENDING], stop[CUDA_PROFILE_PENDING];
  int op[CUDA_PROFILE_PENDING];
  int num_pending;
  int depth;  // > 0 inside an op
  double ms[CUDA_PROF_COUNT];
  long long calls[CUDA_PROF_COUNT];
  cudaEvent_t origin;  // recorded at the first op's start
  bool started;
  float span_ms;  // origin to the latest op's end
};

CudaProfile *cuda_profile_create(void) {
  const char *v = getenv("GPTOSS_CUDA_PROFILE");
  if (!v || strcmp(v, "1") != 0) return NULL;
  CudaProfile *p = (CudaProfile *)xcalloc(1, sizeof(*p));
  for (int i = 0; i < CUDA_PROFILE_PENDING; i++) {
    CUDA_CHECK(cudaEventCreate(&p->start[i]));
    CUDA_CHECK(cudaEventCreate(&p->stop[i]));
  }
  CUDA_CHECK(cudaEventCreate(&p->origin));
  return p;
}

// Reads every recorded pair (waiting for the last ones if they are still queued).
static void cuda_profile_read(CudaProfile *p) {
  for (int i = 0; i < p->num_pending; i++) {
    float ms = 0, since_origin = 0;
    CUDA_CHECK(cudaEventSynchronize(p->stop[i]));
    CUDA_CHECK(cudaEventElapsedTime(&ms, p->start[i], p->stop[i]));
    CUDA_CHECK(cudaEventElapsedTime(&since_origin, p->origin, p->stop[i]));
    p->ms[p->op[i]] += ms;
    p->calls[p->op[i]]++;
    if (since_origin > p->span_ms) p->span_ms = since_origin;
  }
  p->num_pending = 0;
}

void cuda_profile_collect(CudaProfile *p) {
  if (p && p->depth == 0) cuda_profile_read(p);  // never inside an op: its start is recorded
}

void cuda_profile_begin(CudaState *st, CudaProfileOp op) {
  CudaProfile *p = st->profile;
  if (!p || p->depth++ > 0) return;
  if (p->num_pending == CUDA_PROFILE_PENDING) cuda_profile_read(p);  // waits for the oldest
  p->op[p->num_pending] = op;
  CUDA_CHECK(cudaEventRecord(p->start[p->num_pending], st->stream));
  if (!p->started) CUDA_CHECK(cudaEventRecord(p->origin, st->stream));
  p->started = true;
}

void cuda_profile_end(CudaState *st) {
  CudaProfile *p = st->profile;
  if (!p || --p->depth > 0) return;
  CUDA_CHECK(cudaEventRecord(p->stop[p->num_pending], st->stream));
  p->num_pending++;
}

void cuda_profile_report(CudaProfile *p, int device) {
  if (!p) return;
  cuda_profile_read(p);
  double total = 0;
  for (int i = 0; i < CUDA_PROF_COUNT; i++) total += p->ms[i];
  if (p->started) {
    fprintf(stderr,
            "gptoss-engine: CUDA device %d profile (GPTOSS_CUDA_PROFILE=1): %.1f ms in ops over a "
            "span of %.1f ms from the first op's start to the last op's end\n",
            device, total, (double)p->span_ms);
    fprintf(stderr, "  %-40s %10s %12s %7s\n", "op", "calls", "device ms", "share");
    for (int i = 0; i < CUDA_PROF_COUNT; i++)
      if (p->calls[i])
        fprintf(stderr, "  %-40s %10lld %12.1f %6.1f%%\n", cuda_profile_names[i], p->calls[i],
                p->ms[i], total > 0 ? 100.0 * p->ms[i] / total : 0.0);
  }
  CUDA_CHECK(cudaEventDestroy(p->origin));
  for (int i = 0; i < CUDA_PROFILE_PENDING; i++) {
    CUDA_CHECK(cudaEventDestroy(p->start[i]));
    CUDA_CHECK(cudaEventDestroy(p->stop[i]));
  }
  free(p);
}
