// cpu_sample.c: the CPU backend's sample op (backend.h): each row of logits picked on the pool's
// threads, a row per piece, through common/pick.h as the host sampler picks (greedy: the argmax;
// a temperature: the draw over the softmax of the whole row or of its top-k / top-p kept set;
// logprobs when asked), so the ids and logprobs are the host's own. The
// runner then copies none of these rows to the host: at batch 32 the argmax of 32 rows of
// 201,088 logits on one thread was a tenth of a decode step.
#include "backend/cpu/cpu_internal.h"
#include "common/pick.h"

typedef struct {
  const float *logits;  // [num_rows, vocab]
  int vocab;
  const SampleRow *rows;   // [num_rows]
  int32_t *ids;            // [num_rows]
  PickLogprobs *logprobs;  // [num_rows] for the rows that ask
  char *scratch;           // [num_threads] per thread: probs [vocab], then pick_top's scratch
  size_t probs_bytes;      // probs' part, 64-byte aligned
  size_t thread_bytes;
} CpuSampleCtx;

static void cpu_sample_task(void *ctx, int64_t begin, int64_t end, int tid) {
  const CpuSampleCtx *c = ctx;
  float *probs = (float *)(c->scratch + (size_t)tid * c->thread_bytes);  // [vocab]
  for (int64_t r = begin; r < end; r++) {
    const float *row = c->logits + (size_t)r * (size_t)c->vocab;
    const SampleRow *sr = &c->rows[r];
    if (sr->temperature < 0) {
      c->ids[r] = -1;
      continue;
    }
    if (sr->temperature == 0) {
      c->ids[r] = (int32_t)pick_argmax(row, c->vocab);
    } else {
      pick_softmax(row, c->vocab, sr->temperature, probs);
      c->ids[r] = (int32_t)pick_top(probs, c->vocab, sr->top_k, sr->top_p, sr->draw,
                                    (char *)probs + c->probs_bytes);
    }
    if (sr->logprobs) {
      PickLogprobs *lp = &c->logprobs[r];
      lp->logprob = row[c->ids[r]] - pick_logprobs(row, c->vocab, sr->num_top_logprobs, lp);
    }
  }
}

void cpu_sample(Backend *be, const float *logits, int num_rows, int vocab, const SampleRow *rows,
                int32_t *ids, PickLogprobs *logprobs) {
  bool any_drawn = false;
  for (int r = 0; r < num_rows; r++) any_drawn |= rows[r].temperature > 0;
  const size_t probs_bytes = ((size_t)vocab * sizeof(float) + 63) & ~(size_t)63;
  const size_t thread_bytes = probs_bytes + ((pick_top_scratch_bytes(vocab) + 63) & ~(size_t)63);
  char *scratch = any_drawn ? cpu_scratch(be, CPU_SCRATCH_SAMPLE,
                                          (size_t)cpu_state(be)->num_threads * thread_bytes)
                            : NULL;
  CpuSampleCtx c = {logits, vocab, rows, ids, logprobs, scratch, probs_bytes, thread_bytes};
  cpu_parallel(be, num_rows, 1, cpu_sample_task, &c);
}
