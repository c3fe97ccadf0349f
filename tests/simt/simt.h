// simt.h: a host emulator of CUDA's execution model, so that the CUDA backend's kernels run on a
// CPU (make test-cuda-emu: test_cuda_ops against the CPU twins, no GPU). A launch runs its blocks
// one after another; a block's threads are fibers (ucontext) of one OS thread that switch only at
// __syncthreads and warp collectives (shuffles, ballots, ldmatrix, mma.sync: tests/simt/include),
// which are barriers over the block's or warp's fibers. So shared memory is a plain array of the
// block's, and an atomic is a read-modify-write. It checks a kernel's arithmetic, indexing and
// synchronisation points, not its speed, occupancy, register or shared-memory limits, or races a
// missing barrier would cause on a GPU (fibers run to their next barrier in a fixed order).
#ifndef GE_TESTS_SIMT_SIMT_H
#define GE_TESTS_SIMT_SIMT_H

#include <stddef.h>
#include <stdint.h>
#include <functional>

struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct EmuIdx {
  unsigned x, y, z;
};

// The running fiber's thread index in its block, the block's index, the launch's shape.
EmuIdx emu_thread_idx();
extern EmuIdx emu_block_idx;
extern dim3 emu_grid, emu_block;
extern unsigned char *emu_dyn_smem;  // the block's dynamic shared memory (128-byte aligned)
#define threadIdx (emu_thread_idx())
#define blockIdx (emu_block_idx)
#define gridDim (emu_grid)
#define blockDim (emu_block)

// Waits until every live thread of the block has arrived.
void __syncthreads();
// Every lane of the calling thread's warp gives bytes (at most 256) of mine; each gets all 32
// lanes' in all [32 * bytes], lane order. The warp must be whole (32 live lanes).
void emu_warp_exchange(const void *mine, size_t bytes, void *all);
// The lane of the calling thread in its warp.
int emu_lane();
// Runs body on every thread of grid x block as stream work (runtime.cc: at once, or recorded
// while a stream is captured), with smem bytes of dynamic shared memory per block.
void emu_launch(dim3 grid, dim3 block, size_t smem, void *stream, std::function<void()> body);
// emu_launch of kernel(args...), the arguments copied now (a launch's values, as CUDA's).
template <class Kernel, class... Args>
void emu_launch_with(dim3 grid, dim3 block, size_t smem, void *stream, Kernel kernel,
                     Args... args) {
  emu_launch(grid, block, smem, stream, [kernel, args...] { kernel(args...); });
}

#endif
