// cpu_pool.h: the CPU backend's threads: the caller plus num_threads - 1 workers that take
// pieces of a loop as they come free. The caller never waits for a worker to show up, only for
// the pieces a worker has taken: on a machine whose cores are shared, a worker the OS has
// preempted costs at most the piece it holds (an OpenMP barrier would wait for it to be
// scheduled again, at every op). Workers spin a little between loops, then sleep. Owns its
// threads; knows nothing about the ops.
#ifndef GE_BACKEND_CPU_CPU_POOL_H
#define GE_BACKEND_CPU_CPU_POOL_H

#include <stdbool.h>
#include <stdint.h>

// One piece of a loop: items begin .. end - 1, run by thread tid (0: the caller; 1 ..
// num_threads - 1: the workers; for per-thread scratch).
typedef void (*CpuTask)(void *ctx, int64_t begin, int64_t end, int tid);

typedef struct CpuPool CpuPool;

CpuPool *cpu_pool_create(int num_threads);
// Pins worker t to CPU cpus[t] for t = 1 .. num_threads - 1 (cpus[0] is the caller's, whose
// thread is the caller's to place). False when the system refuses (the workers stay unpinned).
bool cpu_pool_pin_workers(CpuPool *p, const int *cpus);
void cpu_pool_destroy(CpuPool *p);

// Runs task over items 0 .. num_items - 1 in pieces of grain items (the last may be shorter)
// and returns when every piece has run. One loop at a time: the caller must not run another
// from inside a task. grain < 1 counts as 1.
void cpu_pool_run(CpuPool *p, int64_t num_items, int64_t grain, CpuTask task, void *ctx);

#endif
