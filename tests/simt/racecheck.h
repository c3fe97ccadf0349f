// racecheck.h (tests/simt): what the fibers of simt.cc tell ThreadSanitizer in the race-checking
// build (SIMT_SANITIZER=thread defines SIMT_RACECHECK; elsewhere every call is empty). Each GPU
// thread is a ThreadSanitizer fiber of its own, switched to without synchronising, so that two
// threads' accesses are ordered only by what CUDA orders them by: a block barrier, a __syncwarp,
// the kernel's start and end. A launch's blocks run one after another but are not ordered with
// their neighbours (simt.cc: two sets of fibers and barriers, by the block's parity), so two
// blocks' unsynchronised accesses to one global address are a race too. simt.cc itself is not
// instrumented (its own bookkeeping is shared by the fibers by design); the cp.async copies it
// lands for a kernel are still checked, through ThreadSanitizer's memcpy and memset interceptors,
// as the landing thread's accesses.
#ifndef GE_TESTS_SIMT_RACECHECK_H
#define GE_TESTS_SIMT_RACECHECK_H

#include <stddef.h>

#ifdef SIMT_RACECHECK
#include <sanitizer/tsan_interface.h>
#include <stdio.h>
extern "C" {
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
}
// Everything the calling thread did before happens before what a later rc_acquire(sync) does.
static inline void rc_release(void *sync) { __tsan_release(sync); }
static inline void rc_acquire(void *sync) { __tsan_acquire(sync); }
static inline void *rc_current_fiber() { return __tsan_get_current_fiber(); }
static inline void *rc_new_fiber() { return __tsan_create_fiber(0); }
// Called just before the context switch to fiber.
static inline void rc_switch_to(void *fiber) {
  __tsan_switch_to_fiber(fiber, __tsan_switch_to_fiber_no_sync);
}
// Names the fiber in reports by the GPU thread it runs now.
static inline void rc_name(void *fiber, unsigned tid, unsigned bx, unsigned by, unsigned bz) {
  char name[64];
  snprintf(name, sizeof name, "GPU thread %u of block (%u, %u, %u)", tid, bx, by, bz);
  __tsan_set_fiber_name(fiber, name);
}
// Accesses between these are the emulator's own (warp exchange slots, garbage fills, shared
// memory's allocation and release): unchecked (and an allocation's old accesses forgotten).
static inline void rc_ignore_begin() { __tsan_ignore_thread_begin(); }
static inline void rc_ignore_end() { __tsan_ignore_thread_end(); }
#else
static inline void rc_release(void *) {}
static inline void rc_acquire(void *) {}
static inline void *rc_current_fiber() { return nullptr; }
static inline void *rc_new_fiber() { return nullptr; }
static inline void rc_switch_to(void *) {}
static inline void rc_name(void *, unsigned, unsigned, unsigned, unsigned) {}
static inline void rc_ignore_begin() {}
static inline void rc_ignore_end() {}
#endif

#endif
