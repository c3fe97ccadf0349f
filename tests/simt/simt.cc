// simt.cc: the fibers of simt.h: a block's threads, their block and warp barriers, and the warp
// exchange the collectives are built on.
#include "simt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <vector>

void emu_work(std::function<void()> f);  // runtime.cc

EmuIdx emu_block_idx;
dim3 emu_grid, emu_block;
unsigned char *emu_dyn_smem;

namespace {
enum { kMaxThreads = 1024, kStackBytes = 256 << 10 };

struct Fiber {
  ucontext_t ctx;
  unsigned tid;
  bool done;
  char *stack;
};

ucontext_t scheduler;
std::vector<Fiber> fibers;
Fiber *current;
const std::function<void()> *body;
// live threads of the block and of each warp; arrivals and generation of each barrier
unsigned block_live, block_arrived, block_generation;
unsigned warp_live[kMaxThreads / 32], warp_arrived[kMaxThreads / 32],
    warp_generation[kMaxThreads / 32];
unsigned char warp_slots[kMaxThreads / 32][32][256];

void yield() { swapcontext(&current->ctx, &scheduler); }

// Opens every barrier whose live threads have all arrived (a thread that returns no longer
// counts: the others need not wait for it).
void release() {
  if (block_arrived > 0 && block_arrived == block_live) block_arrived = 0, block_generation++;
  for (unsigned w = 0; w < kMaxThreads / 32; w++)
    if (warp_arrived[w] > 0 && warp_arrived[w] == warp_live[w])
      warp_arrived[w] = 0, warp_generation[w]++;
}

void warp_barrier() {
  const unsigned w = current->tid / 32, generation = warp_generation[w];
  warp_arrived[w]++;
  release();
  while (warp_generation[w] == generation) yield();
}

void run_thread() {
  (*body)();
  current->done = true;
  block_live--;
  warp_live[current->tid / 32]--;
  release();
}

void run_block(unsigned threads) {
  block_live = threads, block_arrived = 0;
  memset(warp_live, 0, sizeof warp_live);
  memset(warp_arrived, 0, sizeof warp_arrived);
  for (unsigned t = 0; t < threads; t++) {
    Fiber &f = fibers[t];
    f.tid = t, f.done = false;
    warp_live[t / 32]++;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack, f.ctx.uc_stack.ss_size = kStackBytes;
    f.ctx.uc_link = &scheduler;
    makecontext(&f.ctx, run_thread, 0);
  }
  while (block_live > 0)
    for (unsigned t = 0; t < threads; t++)
      if (!fibers[t].done) {
        current = &fibers[t];
        swapcontext(&scheduler, &current->ctx);
      }
}

void run_grid(dim3 grid, dim3 block, size_t smem, const std::function<void()> &f) {
  const unsigned threads = block.x * block.y * block.z;
  if (threads == 0 || threads > kMaxThreads) {
    fprintf(stderr, "simt: a block of %u threads\n", threads);
    abort();
  }
  std::vector<unsigned char> dynamic(smem + 128, 0xCD);  // garbage, as on a GPU
  emu_dyn_smem = (unsigned char *)(((uintptr_t)dynamic.data() + 127) & ~(uintptr_t)127);
  emu_grid = grid, emu_block = block, body = &f;
  if (fibers.size() < threads) fibers.resize(threads);
  for (unsigned t = 0; t < threads; t++)
    if (!fibers[t].stack) fibers[t].stack = (char *)malloc(kStackBytes);
  for (unsigned z = 0; z < grid.z; z++)
    for (unsigned y = 0; y < grid.y; y++)
      for (unsigned x = 0; x < grid.x; x++) {
        emu_block_idx = EmuIdx{x, y, z};
        run_block(threads);
      }
}
}  // namespace

EmuIdx emu_thread_idx() {
  const unsigned t = current->tid;
  return EmuIdx{t % emu_block.x, t / emu_block.x % emu_block.y, t / (emu_block.x * emu_block.y)};
}

int emu_lane() { return (int)(current->tid % 32); }

void __syncthreads() {
  const unsigned generation = block_generation;
  block_arrived++;
  release();
  while (block_generation == generation) yield();
}

void emu_warp_exchange(const void *mine, size_t bytes, void *all) {
  const unsigned w = current->tid / 32;
  if (bytes > 256 || warp_live[w] != 32) {
    fprintf(stderr, "simt: a warp collective of %zu bytes with %u live lanes\n", bytes,
            warp_live[w]);
    abort();
  }
  memcpy(warp_slots[w][current->tid % 32], mine, bytes);
  warp_barrier();  // every lane's is in
  for (int l = 0; l < 32; l++) memcpy((char *)all + l * bytes, warp_slots[w][l], bytes);
  warp_barrier();  // every lane has read them
}

void emu_launch(dim3 grid, dim3 block, size_t smem, void *stream, std::function<void()> f) {
  (void)stream;  // one in-order queue
  emu_work([=] { run_grid(grid, block, smem, f); });
}
