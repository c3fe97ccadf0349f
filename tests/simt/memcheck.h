// memcheck.h (tests/simt): what simt.cc tells AddressSanitizer in the memory-checking build
// (SIMT_SANITIZER=address defines SIMT_MEMCHECK; elsewhere both calls are empty): the stack each
// fiber switch goes to, so that its reports and its bookkeeping of the running stack (at calls
// that never return) follow the GPU threads' stacks.
#ifndef GE_TESTS_SIMT_MEMCHECK_H
#define GE_TESTS_SIMT_MEMCHECK_H

#include <stddef.h>

#ifdef SIMT_MEMCHECK
#include <sanitizer/common_interface_defs.h>
// Just before a switch to the stack [bottom, bottom + bytes); fake_stack is NULL when the
// running fiber is leaving for good.
static inline void mc_leave(void **fake_stack, const void *bottom, size_t bytes) {
  __sanitizer_start_switch_fiber(fake_stack, bottom, bytes);
}
// Just after one, on the new stack: where it came from, when asked.
static inline void mc_arrive(void *fake_stack, const void **from_bottom, size_t *from_bytes) {
  __sanitizer_finish_switch_fiber(fake_stack, from_bottom, from_bytes);
}
#else
static inline void mc_leave(void **, const void *, size_t) {}
static inline void mc_arrive(void *, const void **, size_t *) {}
#endif

#endif
