// block_scan.cuh (tests/simt): cub::BlockScan's exclusive sums for 1D blocks of N threads, through
// the shared TempStorage and two barriers.
#ifndef GE_TESTS_SIMT_CUB_BLOCK_SCAN_CUH
#define GE_TESTS_SIMT_CUB_BLOCK_SCAN_CUH
#include "cuda_runtime.h"
namespace cub {
template <class T, int N>
struct BlockScan {
  struct TempStorage {
    T vals[N];
  };
  TempStorage &s;
  BlockScan(TempStorage &st) : s(st) {}
  void ExclusiveSum(T in, T &out) {
    T total;
    ExclusiveSum(in, out, total);
  }
  void ExclusiveSum(T in, T &out, T &total) {
    const unsigned t = threadIdx.x;
    s.vals[t] = in;
    __syncthreads();
    T sum = T(), all = T();
    for (unsigned i = 0; i < (unsigned)N; i++) {
      if (i < t) sum += s.vals[i];
      all += s.vals[i];
    }
    out = sum, total = all;
    __syncthreads();
  }
};
}  // namespace cub

#endif
