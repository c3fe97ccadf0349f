// cuda_sample.cu: the sample op: each row of logits sampled where it lies, so a step brings back
// one token id per row instead of a [rows, vocabulary] block of floats (804 MB at 1000 rows of
// GPT-OSS's 201,088). One block per row, three passes over the row:
//   1 argmax (lowest id on ties): greedy's answer, and the max the softmax subtracts;
//   2 each warp's total of exp((logit - max) / t) over its contiguous segment of the row, summed
//     chunk by chunk of 32 ids through an inclusive warp scan;
//   3 thread 0 finds the warp whose segment the target (draw x total) falls in, and that warp
//     repeats pass 2's scans over its segment until the running sum passes the target.
// Passes 2 and 3 add the same numbers in the same order, so the chosen segment always holds the
// crossing; the result is core/sampler.h's sampler_sample_drawn up to the order of float sums.
// A row with top-k or top-p takes cuda_sample_top.cuh's selection after pass 1 instead. A row
// that asks for logprobs then gets them (sample_logprobs) in one more array that comes back
// with the ids.
#include <math.h>
#include <string.h>

#include "backend/cuda/cuda_internal.cuh"

#define SAMPLE_THREADS 1024
#define SAMPLE_WARPS (SAMPLE_THREADS / 32)

#include "backend/cuda/cuda_sample_top.cuh"

struct SampleArgmax {
  float value;
  int index;  // -1: nothing seen yet
};

// The better of two candidates: the larger value, the lower id on ties (a NaN never wins over a
// number it is compared with).
__device__ static SampleArgmax sample_better(SampleArgmax a, SampleArgmax b) {
  if (b.index < 0) return a;
  if (a.index < 0) return b;
  return b.value > a.value || (b.value == a.value && b.index < a.index) ? b : a;
}

__device__ static SampleArgmax sample_warp_argmax(SampleArgmax best) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    SampleArgmax other = {__shfl_down_sync(0xffffffffu, best.value, offset),
                          __shfl_down_sync(0xffffffffu, best.index, offset)};
    best = sample_better(best, other);
  }
  return best;
}

// Inclusive prefix sum of v over the warp's lanes.
__device__ static double sample_warp_scan(double v, int lane) {
  for (int offset = 1; offset < 32; offset <<= 1) {
    const double up = __shfl_up_sync(0xffffffffu, v, offset);
    if (lane >= offset) v += up;
  }
  return v;
}

// The block's best candidate (every thread gets it).
__device__ static SampleArgmax sample_block_argmax(SampleArgmax best) {
  __shared__ SampleArgmax warp_best[SAMPLE_WARPS];
  __shared__ SampleArgmax block_best;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  best = sample_warp_argmax(best);
  if (lane == 0) warp_best[warp] = best;
  __syncthreads();
  if (warp == 0) {
    best = sample_warp_argmax(warp_best[lane]);
    if (lane == 0) block_best = best;
  }
  __syncthreads();
  best = block_best;
  __syncthreads();  // block_best is the next call's
  return best;
}

// exp((x[i] - max) / t) for i < end, else 0.
__device__ static double sample_weight(const float *x, int i, int end, float max, float t) {
  return i < end ? (double)expf((x[i] - max) / t) : 0.0;
}

// Passes 2 and 3: the id of the draw over the whole row at temperature t (every thread gets it).
__device__ static int sample_whole(const float *x, int vocab, float max, float t, double draw) {
  __shared__ double warp_total[SAMPLE_WARPS];
  __shared__ int chosen_warp, picked;
  __shared__ double chosen_base, target;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  // 2: each warp's segment total, chunk by chunk
  const int segment = (vocab + SAMPLE_WARPS - 1) / SAMPLE_WARPS;
  const int begin = warp * segment, end = min(vocab, begin + segment);
  double total = 0;
  for (int chunk = begin; chunk < end; chunk += 32)
    total += __shfl_sync(0xffffffffu,
                         sample_warp_scan(sample_weight(x, chunk + lane, end, max, t), lane), 31);
  if (lane == 0) warp_total[warp] = total;
  __syncthreads();

  // 3: the segment of the target, then the id in it
  if (threadIdx.x == 0) {
    double all = 0;
    for (int w = 0; w < SAMPLE_WARPS; w++) all += warp_total[w];
    target = draw * all;
    chosen_warp = -1;
    picked = vocab - 1;  // rounding at the end (NaN sums too)
    double run = 0;
    for (int w = 0; w < SAMPLE_WARPS && chosen_warp < 0; w++) {
      if (run + warp_total[w] > target) chosen_warp = w, chosen_base = run;
      run += warp_total[w];
    }
  }
  __syncthreads();
  if (warp == chosen_warp) {
    double run = 0;
    for (int chunk = begin; chunk < end; chunk += 32) {
      const double inclusive = sample_warp_scan(sample_weight(x, chunk + lane, end, max, t), lane);
      const unsigned passed = __ballot_sync(0xffffffffu, chosen_base + (run + inclusive) > target);
      if (passed) {
        if (lane == 0) picked = chunk + __ffs(passed) - 1;
        break;
      }
      run += __shfl_sync(0xffffffffu, inclusive, 31);
    }  // pass 2 added the same numbers: the segment always holds the crossing
  }
  __syncthreads();
  const int id = picked;
  __syncthreads();
  return id;
}

// The row's logprobs (common/pick.h, pick_logprobs): the log normaliser of the raw row (a sum
// in double), the sampled id's logprob, and the num_top most probable by num_top block argmaxes,
// each over the ids after the previous one in the order (logit descending, lower id first;
// NaNs skipped). Thread 0 writes out.
__device__ static void sample_logprobs(const float *x, int vocab, float max, int id, int num_top,
                                       PickLogprobs *out) {
  __shared__ double warp_sum[SAMPLE_WARPS];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  double sum = 0;
  for (int i = threadIdx.x; i < vocab; i += SAMPLE_THREADS) sum += exp((double)(x[i] - max));
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0) warp_sum[warp] = sum;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < SAMPLE_WARPS; w++) total += warp_sum[w];
  const float log_norm = max + (float)log(total);
  SampleArgmax prev = {0, -1};
  int n = 0;
  for (; n < num_top && n < PICK_MAX_LOGPROBS; n++) {
    SampleArgmax best = {-INFINITY, -1};
    for (int i = threadIdx.x; i < vocab; i += SAMPLE_THREADS) {
      const float v = x[i];
      const bool after = prev.index < 0 || v < prev.value || (v == prev.value && i > prev.index);
      if (!isnan(v) && after) best = sample_better(best, SampleArgmax{v, i});
    }
    best = sample_block_argmax(best);
    if (best.index < 0) break;
    if (threadIdx.x == 0)
      out->top_ids[n] = (uint32_t)best.index, out->top_logprobs[n] = best.value - log_norm;
    prev = best;
  }
  if (threadIdx.x == 0) out->num_top = n, out->logprob = x[id] - log_norm;
}

// Launched with SAMPLE_THREADS threads: the bound keeps the compiler's registers within what
// that many threads can have (64 each), so the launch never fails for want of them.
__global__ static void __launch_bounds__(SAMPLE_THREADS)
    cuda_sample_kernel(const float *logits, int vocab, const SampleRow *rows, int32_t *ids,
                       PickLogprobs *logprobs) {
  const SampleRow r = rows[blockIdx.x];
  if (r.temperature < 0) {
    if (threadIdx.x == 0) ids[blockIdx.x] = -1;
    return;
  }
  const float *x = logits + (size_t)blockIdx.x * vocab;
  // 1: argmax
  SampleArgmax best = {-INFINITY, -1};
  for (int i = threadIdx.x; i < vocab; i += SAMPLE_THREADS)
    best = sample_better(best, SampleArgmax{x[i], i});
  best = sample_block_argmax(best);
  int id = best.index;
  if (r.temperature > 0 && top_keeps_some(r, vocab)) {
    extern __shared__ __align__(16) unsigned char top_smem[];  // there for such rows
    const int top = top_pick(x, vocab, best.value, r, *(TopShared *)top_smem);
    id = top >= 0 ? top : id;  // (always found)
  } else if (r.temperature > 0) {
    id = sample_whole(x, vocab, best.value, r.temperature, r.draw);
  }
  if (r.logprobs)
    sample_logprobs(x, vocab, best.value, id, r.num_top_logprobs, &logprobs[blockIdx.x]);
  if (threadIdx.x == 0) ids[blockIdx.x] = id;
}

void cuda_sample(Backend *be, const float *logits, int num_rows, int vocab, const SampleRow *rows,
                 int32_t *ids, PickLogprobs *logprobs) {
  CudaState *st = cuda_enter(be);
  CudaProfileScope profile(st, CUDA_PROF_SAMPLE);
  CHECK(num_rows >= 0 && vocab > 0);
  if (num_rows == 0) return;
  bool any_top = false, any_logprobs = false;
  for (int i = 0; i < num_rows; i++) {
    any_top |= rows[i].temperature > 0 && !pick_keeps_all(vocab, rows[i].top_k, rows[i].top_p);
    any_logprobs |= rows[i].temperature >= 0 && rows[i].logprobs;
  }
  CHECK(!any_logprobs || logprobs);
  // One buffer each side: the rows, the ids, the logprobs. Sized for logprobs on every row
  // whether or not they are asked for, so that the warm-up step's call reaches the peak.
  const size_t rows_bytes = cuda_round256((size_t)num_rows * sizeof(SampleRow));
  const size_t ids_bytes = cuda_round256((size_t)num_rows * sizeof(int32_t));
  const size_t lp_bytes = (size_t)num_rows * sizeof(PickLogprobs);
  cuda_buffer_reserve(&st->sample_host, rows_bytes + ids_bytes + lp_bytes, true);
  cuda_buffer_reserve(&st->sample_dev, rows_bytes + ids_bytes + lp_bytes, false);
  char *host = (char *)st->sample_host.ptr, *dev = (char *)st->sample_dev.ptr;
  memcpy(host, rows, (size_t)num_rows * sizeof(SampleRow));
  CUDA_CHECK(cudaMemcpyAsync(dev, host, (size_t)num_rows * sizeof(SampleRow),
                             cudaMemcpyHostToDevice, st->stream));
  const size_t smem = any_top ? sizeof(TopShared) : 0;
  if (any_top) cuda_allow_smem(st, (const void *)cuda_sample_kernel, smem);
  cuda_sample_kernel<<<num_rows, SAMPLE_THREADS, smem, st->stream>>>(
      logits, vocab, (const SampleRow *)dev, (int32_t *)(dev + rows_bytes),
      (PickLogprobs *)(dev + rows_bytes + ids_bytes));
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaMemcpyAsync(host + rows_bytes, dev + rows_bytes,
                             ids_bytes + (any_logprobs ? lp_bytes : 0), cudaMemcpyDeviceToHost,
                             st->stream));
  CUDA_CHECK(cudaStreamSynchronize(st->stream));
  memcpy(ids, host + rows_bytes, (size_t)num_rows * sizeof(int32_t));
  for (int i = 0; any_logprobs && i < num_rows; i++)
    if (rows[i].temperature >= 0 && rows[i].logprobs)
      logprobs[i] = ((const PickLogprobs *)(host + rows_bytes + ids_bytes))[i];
}
