// cpu_sample.c: the CPU backend's sample op (backend.h): each row of logits picked on the pool's
// threads, a row per piece, through common/pick.h as the host sampler picks (greedy: the argmax;
// a temperature: the draw over the softmax of the whole row), so the ids are the host's own. The
// runner then copies none of these rows to the host: at batch 32 the argmax of 32 rows of
// 201,088 logits on one thread was a tenth of a decode step.
#include "backend/cpu/cpu_internal.h"
#include "common/pick.h"

typedef struct {
  const float *logits;  // [num_rows, vocab]
  int vocab;
  const SampleRow *rows;  // [num_rows]
  int32_t *ids;           // [num_rows]
  float *probs;           // [num_threads, vocab]
} CpuSampleCtx;

static void cpu_sample_task(void *ctx, int64_t begin, int64_t end, int tid) {
  const CpuSampleCtx *c = ctx;
  float *probs = c->probs + (size_t)tid * (size_t)c->vocab;  // [vocab]
  for (int64_t r = begin; r < end; r++) {
    const float *row = c->logits + (size_t)r * (size_t)c->vocab;
    const float t = c->rows[r].temperature;
    if (t < 0) {
      c->ids[r] = -1;
    } else if (t == 0) {
      c->ids[r] = (int32_t)pick_argmax(row, c->vocab);
    } else {
      pick_softmax(row, c->vocab, t, probs);
      c->ids[r] = (int32_t)pick_drawn(probs, c->vocab, c->rows[r].draw);
    }
  }
}

void cpu_sample(Backend *be, const float *logits, int num_rows, int vocab, const SampleRow *rows,
                int32_t *ids) {
  bool any_drawn = false;
  for (int r = 0; r < num_rows; r++) any_drawn |= rows[r].temperature > 0;
  float *probs =
      any_drawn ? cpu_scratch(be, CPU_SCRATCH_SAMPLE,
                              (size_t)cpu_state(be)->num_threads * (size_t)vocab * sizeof(float))
                : NULL;
  CpuSampleCtx c = {logits, vocab, rows, ids, probs};
  cpu_parallel(be, num_rows, 1, cpu_sample_task, &c);
}
