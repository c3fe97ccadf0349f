// simt.cc: the fibers of simt.h: a block's threads, their block and warp barriers, the warp
// exchange the collectives are built on, cp.async copies held until their wait, every block's own
// shared memory (garbage at first), blocks and threads run first to last or last to first. In the
// race-checking build each fiber is a ThreadSanitizer fiber, ordered with the others only by
// barriers, and neighbouring blocks not at all (racecheck.h); in the memory-checking build
// AddressSanitizer is told of every switch (memcheck.h).
#include "simt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <vector>

#include "memcheck.h"
#include "racecheck.h"

void emu_work(std::function<void()> f);  // runtime.cc

// emu_switch(from, to): saves the callee-saved registers, the SSE and x87 control words and the
// stack pointer at *from and resumes the fiber whose stack pointer is to. (glibc's swapcontext
// also saves the signal mask, a system call at every switch: it took half the emulator's time.)
#ifndef __x86_64__
#error "tests/simt switches fibers with x86-64 code (emu_switch): it runs on x86-64 only"
#endif
extern "C" void emu_switch(void **from, void *to);
asm(R"(
  .text
  .globl emu_switch
  .type emu_switch, @function
emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size emu_switch, .-emu_switch
  .section .note.GNU-stack, "", @progbits
  .text
)");

#ifdef SIMT_MEMCHECK
// Out-of-bounds accesses are what this build is for; the tests' and the emulator's allocations
// that live to the exit are not leaks worth a report.
extern "C" const char *__asan_default_options() { return "detect_leaks=0"; }
#endif
#ifdef SIMT_RACECHECK
// The CPU twins the tests compare with (engine/backend/cpu, not instrumented) share work with a
// thread pool whose synchronisation ThreadSanitizer cannot see: their copies would read as races.
// (The race-checking runs give the twin one thread, TEST_CPU_TWIN_THREADS=1: checking and then
// suppressing those copies took most of the time.)
extern "C" const char *__tsan_default_suppressions() { return "race:engine/backend/cpu/\n"; }
#endif

EmuIdx emu_block_idx;
dim3 emu_grid, emu_block;
unsigned char *emu_dyn_smem;

namespace {
enum { kMaxThreads = 1024, kStackBytes = 256 << 10, kGarbage = 0xCD };

// A cp.async copy a thread has issued and not yet seen land: group is the commit that closes it.
struct PendingCopy {
  void *dst;
  const void *src;
  size_t bytes;
  bool valid;
  unsigned group;
};

struct Fiber {
  void *sp;  // its saved stack pointer (emu_switch)
  unsigned tid;
  bool done;
  char *stack[2];    // its stacks, for even and odd blocks (a race check sees them as memory)
  void *checked[2];  // its ThreadSanitizer fibers, for even and odd blocks (race-checking build)
  void *fake_stack;  // AddressSanitizer's, while it is switched out (memory-checking build)
  std::vector<PendingCopy> copies;
  unsigned commits;
};

void *scheduler_sp;
void *scheduler_checked;
// the scheduler's stack, learnt at its first switch to a fiber, and its fake stack (memcheck.h)
const void *scheduler_stack;
size_t scheduler_stack_bytes;
void *scheduler_fake_stack;
std::vector<Fiber> fibers;
Fiber *current;
const std::function<void()> *body;
size_t dyn_smem_bytes;
// live threads of the block and of each warp; arrivals and generation of each barrier
unsigned block_live, block_arrived, block_generation;
unsigned warp_live[kMaxThreads / 32], warp_arrived[kMaxThreads / 32],
    warp_generation[kMaxThreads / 32];
unsigned char warp_slots[kMaxThreads / 32][32][256];
// What orders threads for the race check: a block's start after everything before the launch
// (the host's work, earlier launches), every block's end before everything after the launch;
// each barrier generation's arrivals before its departures (two objects by the generation's
// parity, so that a thread that leaves barrier G late is not ordered after another's work past
// G). Blocks are not ordered among themselves: blocks of odd and even rank (in the order they
// run) have fibers, stacks and barrier objects of their own, so neighbours share no history (blocks
// two apart do: a race only between those goes unseen).
char block_start, block_end, block_barrier[2][2], warp_barrier_sync[2][kMaxThreads / 32][2];
unsigned block_parity;  // of the running block: which fibers and barrier objects it uses
// The running block's shared memory, static (keyed by prototype) and dynamic (keyed by
// &emu_dyn_smem): every piece allocated for the block alone and freed before the next block
// starts, so that each block finds garbage, AddressSanitizer sees exactly each piece's bytes, and
// ThreadSanitizer, which forgets what an allocation made under rc_ignore held, does not take two
// blocks' accesses to one address for a race.
struct SharedPiece {
  const void *prototype;
  void *data;
};
std::vector<SharedPiece> block_shared;

// From the running fiber to the scheduler (for good once the fiber is done).
void yield() {
  rc_switch_to(scheduler_checked);
  mc_leave(current->done ? nullptr : &current->fake_stack, scheduler_stack, scheduler_stack_bytes);
  emu_switch(&current->sp, scheduler_sp);
  mc_arrive(current->fake_stack, nullptr, nullptr);
}

// From the scheduler to fiber f.
void enter(Fiber &f) {
  current = &f;
  rc_switch_to(f.checked[block_parity]);
  mc_leave(&scheduler_fake_stack, f.stack[block_parity], kStackBytes);
  emu_switch(&scheduler_sp, f.sp);
  mc_arrive(scheduler_fake_stack, nullptr, nullptr);
}

// Opens every barrier whose live threads have all arrived (a thread that returns no longer
// counts: the others need not wait for it).
void release() {
  if (block_arrived > 0 && block_arrived == block_live) block_arrived = 0, block_generation++;
  for (unsigned w = 0; w < kMaxThreads / 32; w++)
    if (warp_arrived[w] > 0 && warp_arrived[w] == warp_live[w])
      warp_arrived[w] = 0, warp_generation[w]++;
}

// Waits for the calling thread's warp; with ordered, also orders memory as __syncwarp does.
void warp_barrier(bool ordered) {
  const unsigned w = current->tid / 32, generation = warp_generation[w];
  if (ordered) rc_release(&warp_barrier_sync[block_parity][w][generation & 1]);
  warp_arrived[w]++;
  release();
  while (warp_generation[w] == generation) yield();
  if (ordered) rc_acquire(&warp_barrier_sync[block_parity][w][generation & 1]);
}

// Lands the calling thread's copies of groups before `upto` (all of them with ~0u).
void land_copies(unsigned upto) {
  std::vector<PendingCopy> &copies = current->copies;
  size_t kept = 0;
  for (const PendingCopy &c : copies) {
    if (c.group >= upto) {
      copies[kept++] = c;
      continue;
    }
    if (c.valid)
      memcpy(c.dst, c.src, c.bytes);
    else
      memset(c.dst, 0, c.bytes);
  }
  copies.resize(kept);
}

void run_thread() {
  mc_arrive(nullptr, &scheduler_stack, &scheduler_stack_bytes);
  rc_acquire(&block_start);
  (*body)();
  land_copies(~0u);  // copies never waited for still land (on a GPU, some time before the end)
  rc_release(&block_end);
  current->done = true;
  block_live--;
  warp_live[current->tid / 32]--;
  release();
  yield();  // never resumed
  abort();
}

// A fiber's first frame: what emu_switch pops to enter run_thread with the stack aligned as a
// call leaves it (the entry's return address slot, 16-byte aligned above), the SSE and x87
// control words as they are now, zeros for the callee-saved registers.
void *fiber_start(char *stack) {
  uint64_t *top = (uint64_t *)(stack + kStackBytes);  // 16-byte aligned
  top[-1] = 0;                                        // run_thread never returns
  top[-2] = (uint64_t)(uintptr_t)run_thread;
  for (int r = 3; r <= 8; r++) top[-r] = 0;
  uint32_t control[2] = {0, 0};
  asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(control[0]), "=m"(control[1]));
  memcpy(&top[-9], control, 8);
  return &top[-9];
}

// Whether this launch runs its blocks, and each block's threads between barriers, last to first
// (SIMT_ORDER=reverse) instead of first to last: a GPU promises neither order, so a kernel whose
// result depends on it (blocks that read each other's output, an order assumed of atomics'
// tickets) gives another answer one way round.
bool order_reversed() {
  const char *order = getenv("SIMT_ORDER");
  if (!order || !*order || !strcmp(order, "forward")) return false;
  if (!strcmp(order, "reverse")) return true;
  fprintf(stderr, "simt: SIMT_ORDER=%s: use forward (the default) or reverse\n", order);
  exit(2);
}

void free_block_shared() {
  rc_ignore_begin();
  for (const SharedPiece &piece : block_shared) free(piece.data);
  rc_ignore_end();
  block_shared.clear();
}

// Runs one block on the fibers, stacks and barrier objects of block_parity.
void run_block(unsigned threads, bool reversed) {
  block_live = threads, block_arrived = 0;
  memset(warp_live, 0, sizeof warp_live);
  memset(warp_arrived, 0, sizeof warp_arrived);
  free_block_shared();
  emu_dyn_smem = (unsigned char *)emu_shared_storage(&emu_dyn_smem, dyn_smem_bytes, 128);
  for (unsigned t = 0; t < threads; t++) {
    Fiber &f = fibers[t];
    f.tid = t, f.done = false, f.commits = 0;
    f.copies.clear();
    warp_live[t / 32]++;
    f.sp = fiber_start(f.stack[block_parity]);
    rc_name(f.checked[block_parity], t, emu_block_idx.x, emu_block_idx.y, emu_block_idx.z);
  }
  rc_release(&block_start);
  while (block_live > 0)
    for (unsigned i = 0; i < threads; i++) {
      Fiber &f = fibers[reversed ? threads - 1 - i : i];
      if (!f.done) enter(f);
    }
}

void run_grid(dim3 grid, dim3 block, size_t smem, const std::function<void()> &f) {
  const unsigned threads = block.x * block.y * block.z;
  if (threads == 0 || threads > kMaxThreads) {
    fprintf(stderr, "simt: a block of %u threads\n", threads);
    abort();
  }
  emu_grid = grid, emu_block = block, body = &f, dyn_smem_bytes = smem;
  scheduler_checked = rc_current_fiber();
  if (fibers.size() < threads) fibers.resize(threads);
  for (unsigned t = 0; t < threads; t++) {
    for (char *&stack : fibers[t].stack)
      if (!stack) stack = (char *)aligned_alloc(16, kStackBytes);
    for (void *&checked : fibers[t].checked)
      if (!checked) checked = rc_new_fiber();
  }
  const bool reversed = order_reversed();
  const uint64_t blocks = (uint64_t)grid.x * grid.y * grid.z;
  for (uint64_t i = 0; i < blocks; i++) {
    const uint64_t b = reversed ? blocks - 1 - i : i;
    emu_block_idx = EmuIdx{(unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y),
                           (unsigned)(b / ((uint64_t)grid.x * grid.y))};
    block_parity = i & 1;
    run_block(threads, reversed);
  }
  rc_acquire(&block_end);
  free_block_shared();
}
}  // namespace

EmuIdx emu_thread_idx() {
  const unsigned t = current->tid;
  return EmuIdx{t % emu_block.x, t / emu_block.x % emu_block.y, t / (emu_block.x * emu_block.y)};
}

int emu_lane() { return (int)(current->tid % 32); }

void __syncthreads() {
  const unsigned generation = block_generation;
  rc_release(&block_barrier[block_parity][generation & 1]);
  block_arrived++;
  release();
  while (block_generation == generation) yield();
  rc_acquire(&block_barrier[block_parity][generation & 1]);
}

void emu_syncwarp() {
  if (warp_live[current->tid / 32] != 32) {
    fprintf(stderr, "simt: __syncwarp with %u live lanes\n", warp_live[current->tid / 32]);
    abort();
  }
  warp_barrier(true);
}

void emu_warp_exchange(const void *mine, size_t bytes, void *all) {
  const unsigned w = current->tid / 32;
  if (bytes > 256 || warp_live[w] != 32) {
    fprintf(stderr, "simt: a warp collective of %zu bytes with %u live lanes\n", bytes,
            warp_live[w]);
    abort();
  }
  rc_ignore_begin();  // the slots are the emulator's, not the kernel's memory
  memcpy(warp_slots[w][current->tid % 32], mine, bytes);
  warp_barrier(false);  // every lane's is in
  for (int l = 0; l < 32; l++) memcpy((char *)all + l * bytes, warp_slots[w][l], bytes);
  warp_barrier(false);  // every lane has read them
  rc_ignore_end();
}

void emu_copy_async(void *dst, const void *src, size_t bytes, bool valid) {
  current->copies.push_back(PendingCopy{dst, src, bytes, valid, current->commits});
}

void emu_copy_commit() { current->commits++; }

void emu_copy_wait(unsigned pending) {
  if (current->commits > pending) land_copies(current->commits - pending);
}

void *emu_shared_storage(const void *prototype, size_t bytes, size_t align) {
  for (const SharedPiece &piece : block_shared)
    if (piece.prototype == prototype) return piece.data;
  void *data = nullptr;
  rc_ignore_begin();
  if (posix_memalign(&data, align < 16 ? 16 : align, bytes ? bytes : 1)) abort();
  memset(data, kGarbage, bytes);
  rc_ignore_end();
  block_shared.push_back({prototype, data});
  return data;
}

void emu_launch(dim3 grid, dim3 block, size_t smem, void *stream, std::function<void()> f) {
  (void)stream;  // one in-order queue per host thread (runtime.cc)
  // The launches of several host threads (the ranks of -tp and -pp, one device each) take
  // turns: the fibers and the running launch's state are the emulator's one set.
  static std::mutex turn;
  emu_work([=] {
    std::lock_guard<std::mutex> hold(turn);
    run_grid(grid, block, smem, f);
  });
}
