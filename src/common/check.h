// check.h: fatal errors for the command-line tools and allocation helpers that never return NULL.
// Tools die fast with a message naming what is wrong and how to fix it. The engine must not use
// die() on anything a client can cause: it returns an error to the client instead.
#ifndef GB_COMMON_CHECK_H
#define GB_COMMON_CHECK_H

#include <stddef.h>

// Prints "gptoss-bench: <message>" to stderr and exits with status 1.
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);

// Internal invariant: aborts with file:line when cond is false (bugs, never user input).
#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) check_failed(#cond, __FILE__, __LINE__);                                          \
  } while (0)
__attribute__((noreturn)) void check_failed(const char *cond, const char *file, int line);

// Allocation that aborts on out-of-memory (a message, not a NULL dereference later).
void *xmalloc(size_t size);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *s);

// Sets the program name used by die() (default "gptoss-bench").
void check_set_program(const char *name);

#endif
