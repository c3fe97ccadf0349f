// cuda_sample_top.cuh: the sample kernel's top-k / top-p rows (cuda_sample.cu): common/pick.h's
// pick_top on one block of SAMPLE_THREADS per row, without sorting. The order is the host's:
// weight exp((logit - max) / t) descending, lower id first on ties. Each step finds the first
// element of the order at which a running total (count or mass) reaches a target, by radix
// selection on the weight's float bits (monotonic for weights >= 0): four passes of 8 bits, each
// a histogram of the candidates' counts and masses per warp in shared memory, merged and walked
// from the top bin; then a pass over the elements of the selected key in id order. Three steps
// make the pick: the k-th element (top-k), the first at which the mass reaches top_p of the
// top-k set's (top-p), the first at which it passes draw times the kept set's. Masses are
// integers (weights in units of 2^-40: exact sums in any order), so every total is exact, every
// target is reached, and a row's pick is the same on every run: the host's up to those units.
// Device code only.
#ifndef GE_BACKEND_CUDA_CUDA_SAMPLE_TOP_CUH
#define GE_BACKEND_CUDA_CUDA_SAMPLE_TOP_CUH

#include <stdint.h>

#define TOP_BINS 256

typedef unsigned long long TopMass;

// The kernel's dynamic shared memory on a call with top-k / top-p rows.
struct TopShared {
  TopMass warp_mass[SAMPLE_WARPS][TOP_BINS];  // a pass's histograms, per warp
  uint32_t warp_count[SAMPLE_WARPS][TOP_BINS];
  TopMass bin_mass[TOP_BINS];  // merged
  uint32_t bin_count[TOP_BINS];
  TopMass seg_mass[SAMPLE_WARPS];  // the selected key's elements in each warp's segment
  uint32_t seg_count[SAMPLE_WARPS];
  uint32_t prefix;  // the selected key's bits so far
  uint32_t count;   // the totals of the elements before the current candidates
  TopMass mass;     //   (then before the chosen warp's segment)
  int chosen_warp;  // the segment that holds the crossing
  int id;           // the result and the totals through it
  uint32_t id_count;
  TopMass id_mass;
};

// An element of the order and the totals of the elements up to and including it.
struct TopPick {
  int id;
  uint32_t count;
  TopMass mass;
};

// A weight as an integer mass: units of 2^-40 (a weight is at most 1; 201,088 of them < 2^58).
static __device__ __forceinline__ TopMass top_mass(float w) {
  return __double2ull_rn((double)w * 0x1p40);
}

static __device__ __forceinline__ float top_weight(const float *x, int i, float max, float t) {
  return expf((x[i] - max) / t);
}

// Whether a running total reaches target.
static __device__ __forceinline__ bool top_reached(bool by_mass, uint32_t count, TopMass mass,
                                                   TopMass target) {
  return by_mass ? mass >= target : count >= target;
}

// The total mass of the row (every thread gets it).
static __device__ TopMass top_total(const float *x, int vocab, float max, float t, TopShared &sh) {
  TopMass m = 0;
  for (int i = threadIdx.x; i < vocab; i += SAMPLE_THREADS) m += top_mass(top_weight(x, i, max, t));
  for (int o = 16; o > 0; o >>= 1) m += __shfl_xor_sync(0xffffffffu, m, o);
  if ((threadIdx.x & 31) == 0) sh.seg_mass[threadIdx.x >> 5] = m;
  __syncthreads();
  TopMass total = 0;
  for (int w = 0; w < SAMPLE_WARPS; w++) total += sh.seg_mass[w];
  __syncthreads();
  return total;
}

// One radix pass over the candidates (keys whose bits above shift + 8 are sh.prefix; every key
// on pass 0): the bin of the next 8 bits at which the running total from the top reaches
// target joins sh.prefix, and the bins above it join sh.count and sh.mass.
static __device__ void top_radix_pass(const float *x, int vocab, float max, float t, int pass,
                                      bool by_mass, TopMass target, TopShared &sh) {
  const int shift = 24 - 8 * pass, warp = threadIdx.x >> 5;
  for (int i = threadIdx.x; i < SAMPLE_WARPS * TOP_BINS; i += SAMPLE_THREADS)
    (&sh.warp_mass[0][0])[i] = 0, (&sh.warp_count[0][0])[i] = 0;
  __syncthreads();
  const uint32_t prefix = sh.prefix;
  for (int i = threadIdx.x; i < vocab; i += SAMPLE_THREADS) {
    const float w = top_weight(x, i, max, t);
    const uint32_t key = __float_as_uint(w);
    if (pass > 0 && key >> (shift + 8) != prefix) continue;
    const int bin = key >> shift & (TOP_BINS - 1);
    atomicAdd(&sh.warp_count[warp][bin], 1u);
    atomicAdd(&sh.warp_mass[warp][bin], top_mass(w));
  }
  __syncthreads();
  if (threadIdx.x < TOP_BINS) {
    uint32_t count = 0;
    TopMass mass = 0;
    for (int w = 0; w < SAMPLE_WARPS; w++)
      count += sh.warp_count[w][threadIdx.x], mass += sh.warp_mass[w][threadIdx.x];
    sh.bin_count[threadIdx.x] = count, sh.bin_mass[threadIdx.x] = mass;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t count = sh.count;
    TopMass mass = sh.mass;
    int chosen = 0;  // unreachable fallback: the lowest non-empty bin
    for (int b = TOP_BINS - 1; b >= 0; b--) {
      if (sh.bin_count[b] == 0) continue;
      chosen = b;
      if (top_reached(by_mass, count + sh.bin_count[b], mass + sh.bin_mass[b], target)) break;
      count += sh.bin_count[b], mass += sh.bin_mass[b];
    }
    if (!top_reached(by_mass, count + sh.bin_count[chosen], mass + sh.bin_mass[chosen], target))
      count -= sh.bin_count[chosen], mass -= sh.bin_mass[chosen];
    sh.prefix = prefix << 8 | (uint32_t)chosen;
    sh.count = count, sh.mass = mass;
  }
  __syncthreads();
}

// The selected key's elements in warp's segment [begin, end), chunk by chunk of 32 ids: the
// running totals through each lane's id (inclusive; 0 past the key's elements).
struct TopChunk {
  bool tie;        // this lane's id has the key
  unsigned ties;   // the chunk's lanes that do
  uint32_t count;  // inclusive, within the chunk
  TopMass mass;
};

static __device__ __forceinline__ TopChunk top_chunk(const float *x, int i, int end, float max,
                                                     float t, uint32_t key) {
  const int lane = threadIdx.x & 31;
  const float w = i < end ? top_weight(x, i, max, t) : 0.0f;
  TopChunk c;
  c.tie = i < end && __float_as_uint(w) == key;
  c.ties = __ballot_sync(0xffffffffu, c.tie);
  c.count = __popc(c.ties & (0xffffffffu >> (31 - lane)));
  c.mass = c.tie ? top_mass(w) : 0;
  for (int o = 1; o < 32; o <<= 1) {
    const TopMass up = __shfl_up_sync(0xffffffffu, c.mass, o);
    if (lane >= o) c.mass += up;
  }
  return c;
}

// The first element of the order at which the running count (by_mass false) or mass reaches
// target (1 .. the row's total: always reached). Every thread of the block calls it and gets
// the result.
static __device__ TopPick top_select(const float *x, int vocab, float max, float t, bool by_mass,
                                     TopMass target, TopShared &sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) sh.prefix = 0, sh.count = 0, sh.mass = 0, sh.id = -1;
  for (int pass = 0; pass < 4; pass++) top_radix_pass(x, vocab, max, t, pass, by_mass, target, sh);
  // The key's elements in id order: each warp's segment totals, then the warp whose segment
  // holds the crossing walks it again.
  const uint32_t key = sh.prefix;
  const int segment = (vocab + SAMPLE_WARPS - 1) / SAMPLE_WARPS;
  const int begin = warp * segment, end = min(vocab, begin + segment);
  uint32_t seg_count = 0;
  TopMass seg_mass = 0;
  for (int chunk = begin; chunk < end; chunk += 32) {
    const TopChunk c = top_chunk(x, chunk + lane, end, max, t, key);
    seg_count += __popc(c.ties);
    seg_mass += __shfl_sync(0xffffffffu, c.mass, 31);
  }
  if (lane == 0) sh.seg_count[warp] = seg_count, sh.seg_mass[warp] = seg_mass;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t count = sh.count;
    TopMass mass = sh.mass;
    int chosen = -1;
    for (int w = 0; w < SAMPLE_WARPS && chosen < 0; w++) {
      if (sh.seg_count[w] == 0) continue;
      if (top_reached(by_mass, count + sh.seg_count[w], mass + sh.seg_mass[w], target))
        chosen = w;
      else
        count += sh.seg_count[w], mass += sh.seg_mass[w];
    }
    sh.chosen_warp = chosen;
    sh.count = count, sh.mass = mass;
  }
  __syncthreads();
  if (warp == sh.chosen_warp) {
    uint32_t count = sh.count;
    TopMass mass = sh.mass;
    for (int chunk = begin; chunk < end; chunk += 32) {
      const TopChunk c = top_chunk(x, chunk + lane, end, max, t, key);
      const unsigned hits = __ballot_sync(
          0xffffffffu, c.tie && top_reached(by_mass, count + c.count, mass + c.mass, target));
      if (hits) {
        if (lane == __ffs(hits) - 1)
          sh.id = chunk + lane, sh.id_count = count + c.count, sh.id_mass = mass + c.mass;
        break;
      }
      count += __popc(c.ties);
      mass += __shfl_sync(0xffffffffu, c.mass, 31);
    }
  }
  __syncthreads();
  const TopPick pick = {sh.id, sh.id_count, sh.id_mass};
  __syncthreads();  // sh is the next call's
  return pick;
}

// The row's pick by r's top_k, top_p and draw (pick_top's rule).
// Whether r keeps fewer than the whole vocabulary (common/pick.h, pick_keeps_all).
static __device__ __forceinline__ bool top_keeps_some(const SampleRow &r, int vocab) {
  return (r.top_k > 0 && r.top_k < vocab) || r.top_p < 1.0f;
}

static __device__ int top_pick(const float *x, int vocab, float row_max, const SampleRow &r,
                               TopShared &sh) {
  const float t = r.temperature;
  TopMass kept_mass;
  if (r.top_k > 0 && r.top_k < vocab)
    kept_mass = top_select(x, vocab, row_max, t, false, (TopMass)r.top_k, sh).mass;
  else
    kept_mass = top_total(x, vocab, row_max, t, sh);
  if (r.top_p < 1.0f) {
    const TopMass target = (TopMass)ceil((double)r.top_p * (double)kept_mass);
    kept_mass = top_select(x, vocab, row_max, t, true, target > 1 ? target : 1, sh).mass;
  }
  // the first element at which the mass passes draw x kept_mass: reaches its floor + 1
  const TopMass target = (TopMass)(r.draw * (double)kept_mass) + 1;
  return top_select(x, vocab, row_max, t, true, target < kept_mass ? target : kept_mass, sh).id;
}

#endif
