// cpu_pool.c: the worker threads of cpu_pool.h. A loop is published as a generation number in
// the top half of one 64-bit word whose bottom half counts the pieces taken; a thread takes a
// piece with a compare-and-swap on that word. The caller first moves the word to the new
// generation, closed, then writes the loop's arguments, then opens it: a worker that read the
// word before and any argument after can never take a piece (its swap expects the old word), so
// no piece runs with another loop's arguments. Workers spin for about CPU_POOL_SPINS pauses
// after each loop, then sleep on a futex until the next one.
#include "backend/cpu/cpu_pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/check.h"

#define CPU_POOL_SPINS 40000         // pause loops a worker waits for the next loop before sleeping
#define CPU_POOL_YIELD_SPINS 4000    // pause loops the caller waits for a piece before yielding
#define CPU_POOL_CLOSED 0xffffffffu  // the pieces-taken half of a loop not yet open

struct CpuPool {
  int num_threads;
  pthread_t *workers;           // [num_threads - 1]
  _Atomic uint64_t state;       // generation << 32 | pieces taken
  _Atomic uint32_t generation;  // the futex word: the generation, for sleepers
  _Atomic int64_t done;         // pieces of the current loop finished
  _Atomic int sleepers;         // workers asleep (or about to be) on generation
  _Atomic bool stop;
  // The current loop (written before its generation is published).
  _Atomic(CpuTask) task;
  _Atomic(void *) ctx;
  _Atomic int64_t num_items, grain, num_pieces;
};

typedef struct {
  CpuPool *pool;
  int tid;
} CpuWorker;

static void cpu_pool_pause(void) { __builtin_ia32_pause(); }

// Takes and runs pieces of generation gen until none are left; returns whether it ran any.
static bool cpu_pool_work(CpuPool *p, uint32_t gen, int tid) {
  bool ran = false;
  uint64_t v = atomic_load(&p->state);
  const CpuTask task = atomic_load(&p->task);
  void *ctx = atomic_load(&p->ctx);
  const int64_t n = atomic_load(&p->num_items), grain = atomic_load(&p->grain);
  const int64_t pieces = atomic_load(&p->num_pieces);
  for (;;) {
    if ((uint32_t)(v >> 32) != gen || (int64_t)(v & CPU_POOL_CLOSED) >= pieces) return ran;
    if (!atomic_compare_exchange_weak(&p->state, &v, v + 1)) continue;
    const int64_t i = (int64_t)(v & CPU_POOL_CLOSED), begin = i * grain;
    task(ctx, begin, begin + grain < n ? begin + grain : n, tid);
    atomic_fetch_add(&p->done, 1);
    ran = true;
    v = atomic_load(&p->state);
  }
}

static void *cpu_pool_worker(void *arg) {
  CpuWorker *w = arg;
  CpuPool *p = w->pool;
  uint32_t seen = 0;
  while (!atomic_load_explicit(&p->stop, memory_order_acquire)) {
    uint32_t gen = atomic_load_explicit(&p->generation, memory_order_acquire);
    for (int spin = 0; gen == seen && spin < CPU_POOL_SPINS; spin++) {
      cpu_pool_pause();
      gen = atomic_load_explicit(&p->generation, memory_order_acquire);
    }
    if (gen == seen) {
      atomic_fetch_add(&p->sleepers, 1);
      // Sleeps only while the generation is still the one seen (the kernel checks it).
      if (!atomic_load(&p->stop))
        syscall(SYS_futex, &p->generation, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
      atomic_fetch_sub(&p->sleepers, 1);
      continue;
    }
    seen = gen;
    cpu_pool_work(p, gen, w->tid);
  }
  free(w);
  return NULL;
}

CpuPool *cpu_pool_create(int num_threads) {
  CHECK(num_threads >= 1);
  CpuPool *p = xcalloc(1, sizeof *p);
  p->num_threads = num_threads;
  p->workers = xcalloc((size_t)num_threads, sizeof *p->workers);
  for (int t = 1; t < num_threads; t++) {
    CpuWorker *w = xmalloc(sizeof *w);
    *w = (CpuWorker){p, t};
    if (pthread_create(&p->workers[t - 1], NULL, cpu_pool_worker, w) != 0)
      die("cpu backend: cannot start worker thread %d of %d", t, num_threads - 1);
  }
  return p;
}

bool cpu_pool_pin_workers(CpuPool *p, const int *cpus) {
  bool ok = true;
  for (int t = 1; t < p->num_threads; t++) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpus[t], &set);
    ok &= pthread_setaffinity_np(p->workers[t - 1], sizeof set, &set) == 0;
  }
  return ok;
}

void cpu_pool_destroy(CpuPool *p) {
  if (!p) return;
  atomic_store(&p->stop, true);
  atomic_fetch_add(&p->generation, 1);
  syscall(SYS_futex, &p->generation, FUTEX_WAKE_PRIVATE, p->num_threads, NULL, NULL, 0);
  for (int t = 1; t < p->num_threads; t++) pthread_join(p->workers[t - 1], NULL);
  free(p->workers);
  free(p);
}

void cpu_pool_run(CpuPool *p, int64_t num_items, int64_t grain, CpuTask task, void *ctx) {
  if (num_items <= 0) return;
  if (grain < 1) grain = 1;
  const int64_t pieces = (num_items + grain - 1) / grain;
  if (p->num_threads == 1 || pieces == 1) {
    task(ctx, 0, num_items, 0);
    return;
  }
  CHECK(pieces < CPU_POOL_CLOSED);
  // First the new generation, closed (no piece can be taken), so that a compare-and-swap
  // against the last loop's word fails from here on; then the arguments; then the opening.
  // Sequentially consistent throughout: a worker that has read any new argument can no longer
  // take a piece of the last loop with it.
  const uint32_t gen = atomic_load(&p->generation) + 1;
  atomic_store(&p->state, (uint64_t)gen << 32 | CPU_POOL_CLOSED);
  atomic_store(&p->task, task);
  atomic_store(&p->ctx, ctx);
  atomic_store(&p->num_items, num_items);
  atomic_store(&p->grain, grain);
  atomic_store(&p->num_pieces, pieces);
  atomic_store(&p->done, 0);
  atomic_store(&p->state, (uint64_t)gen << 32);
  // Seen before sleepers is read: a worker counts itself in sleepers before its futex wait reads
  // the generation.
  atomic_store(&p->generation, gen);
  if (atomic_load(&p->sleepers) > 0)
    syscall(SYS_futex, &p->generation, FUTEX_WAKE_PRIVATE, p->num_threads, NULL, NULL, 0);
  cpu_pool_work(p, gen, 0);
  // Every piece is taken; wait for the ones workers hold.
  for (int spin = 0; atomic_load_explicit(&p->done, memory_order_acquire) < pieces; spin++) {
    cpu_pool_pause();
    if (spin >= CPU_POOL_YIELD_SPINS) sched_yield();
  }
}
