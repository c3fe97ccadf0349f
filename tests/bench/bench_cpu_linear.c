// bench_cpu_linear.c: throughput of the CPU backend's linear op (engine/backend/cpu) for each
// weight format (F32, BF16, MXFP4, Q8) at GPT-OSS shapes: decode-sized inputs (1-4 rows, where
// reading the weights is the cost) and prefill-sized ones (compute-bound). Prints one "name value"
// line per figure: <format>.m<rows>.n<out>.k<in>.gflops and .weight_gb_s (weight bytes read per
// second). Times only the op, never the setup; checks nothing (test_cpu_ops does).
//
//   bench_cpu_linear [REPS] [THREADS]     (REPS default 5 after one untimed warm-up; THREADS 0:
//                                          one per core)
#include <stdio.h>
#include <stdlib.h>

#include "backend/cpu/cpu_backend.h"
#include "common/check.h"
#include "common/clock.h"
#include "model/q8.h"

// Median of n values (sorts them).
static double median(double *v, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1], v[j - 1] = t;
    }
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void bench_one(Backend *be, WeightFormat f, int m, int64_t n, int64_t k, int reps) {
  WeightMatrix w = {.format = f, .rows = n, .cols = k};
  size_t bytes = f == WEIGHT_F32    ? (size_t)(n * k) * 4
                 : f == WEIGHT_BF16 ? (size_t)(n * k) * 2
                 : f == WEIGHT_Q8   ? q8_data_bytes(n, k)
                                    : (size_t)(n * k) / 2;
  uint8_t *data = xmalloc(bytes), *scales = xmalloc((size_t)(n * k / 32) + q8_num_scales(n) * 4);
  uint64_t s = 88172645463325252ull;
  for (size_t i = 0; i < bytes; i++) {  // small finite values in every format
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    data[i] = (uint8_t)(f == WEIGHT_MXFP4 || f == WEIGHT_Q8 ? s
                        : i % 2 == 1 && f != WEIGHT_F32     ? 0x3c
                                                            : s & 0x3f);
    if (f == WEIGHT_F32 && i % 4 == 3) data[i] = 0x3c;
  }
  for (int64_t i = 0; i < n * k / 32; i++) scales[i] = 120;
  if (f == WEIGHT_Q8)
    for (size_t i = 0; i < q8_num_scales(n); i++) ((float *)scales)[i] = 0.01f;
  w.data = data, w.scales = scales;
  float *x = xmalloc((size_t)(m * k) * sizeof(float)),
        *y = xmalloc((size_t)(m * n) * sizeof(float));
  for (int64_t i = 0; i < m * k; i++) x[i] = (float)(i % 7) * 0.125f - 0.375f;
  double *secs = xmalloc((size_t)reps * sizeof(double));
  be->linear(be, &w, NULL, x, m, y, false);  // warm-up: page faults, scratch growth
  for (int r = 0; r < reps; r++) {
    int64_t t0 = clock_now_ns();
    be->linear(be, &w, NULL, x, m, y, false);
    secs[r] = (double)(clock_now_ns() - t0) / 1e9;
  }
  double t = median(secs, reps);
  const char *name = weight_format_name(f);
  printf("%s.m%d.n%lld.k%lld.gflops %.2f\n", name, m, (long long)n, (long long)k,
         2.0 * m * (double)n * (double)k / t / 1e9);
  printf("%s.m%d.n%lld.k%lld.weight_gb_s %.2f\n", name, m, (long long)n, (long long)k,
         (double)bytes / t / 1e9);
  free(data), free(scales), free(x), free(y), free(secs);
}

int main(int argc, char **argv) {
  check_set_program("bench_cpu_linear");
  int reps = argc > 1 ? atoi(argv[1]) : 5, threads = argc > 2 ? atoi(argv[2]) : 0;
  if (reps < 1 || reps > 1000) die("REPS must be an integer in 1..1000");
  Backend *be = cpu_backend_create(threads);
  const int ms[] = {1, 4, 8, 64, 256};
  for (WeightFormat f = WEIGHT_F32; f <= WEIGHT_Q8; f++) {
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
      bench_one(be, f, ms[i], 5120, 2880, reps);  // qkv projection
      bench_one(be, f, ms[i], 5760, 2880, reps);  // expert mlp1
    }
    bench_one(be, f, 1, 32768, 2880, reps);  // a sixth of the unembedding
    bench_one(be, f, 8, 32768, 2880, reps);
  }
  be->destroy(be);
  return 0;
}
