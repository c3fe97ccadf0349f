// simt.h: a host emulator of CUDA's execution model, so that the CUDA backend's kernels run on a
// CPU (make test-cuda-emu: test_cuda_ops against the CPU twins, no GPU). A launch runs its blocks
// one after another; a block's threads are fibers (stacks of their own, simt.cc) of one OS thread
// that switch only at __syncthreads and warp collectives (shuffles, ballots, ldmatrix, mma.sync:
// tests/simt/include), which are barriers over the block's or warp's fibers. So shared memory is
// a plain array of the block's, and an atomic is a read-modify-write. A cp.async copy lands when
// its thread waits for it (the latest a GPU may land it), and a block's shared memory starts as
// garbage. It checks a kernel's arithmetic, indexing and synchronisation points, not its speed,
// occupancy, register or shared-memory limits. Fibers run to their next barrier in a fixed order,
// so a race a missing barrier causes may go unseen here; the race-checking build
// (SIMT_SANITIZER=thread, racecheck.h) reports it: ThreadSanitizer sees the threads ordered only
// by barriers. The memory-checking build (SIMT_SANITIZER=address, memcheck.h) reports an access
// past a device buffer or shared memory.
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
// __syncwarp: a barrier of the calling thread's warp (whole), ordering its lanes' memory.
void emu_syncwarp();
// cp.async of bytes from src to dst (zeros without valid), landed by emu_copy_wait; commit closes
// the thread's group of copies, wait(n) lands every group but the last n closed.
void emu_copy_async(void *dst, const void *src, size_t bytes, bool valid);
void emu_copy_commit();
void emu_copy_wait(unsigned pending);
// The running block's own storage for a static shared variable (tests/simt/transform.py renames
// each to a prototype `emu_shared_NAME` that keeps its type and alignment, and declares NAME as
// EMU_SHARED_BLOCK(emu_shared_NAME)): allocated and filled with garbage at the block's first use,
// as a GPU block's starts, freed when the next block starts (simt.cc).
void *emu_shared_storage(const void *prototype, size_t bytes, size_t align);
#define EMU_SHARED_BLOCK(prototype) \
  (*(decltype(&prototype))emu_shared_storage(&prototype, sizeof prototype, __alignof__(prototype)))
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
