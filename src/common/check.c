// check.c: die(), CHECK() and the x-allocators. Owns the program name printed with fatal errors.
#include "common/check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *program_name = "gptoss-bench";

void check_set_program(const char *name) { program_name = name; }

void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", program_name);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

void check_failed(const char *cond, const char *file, int line) {
  fprintf(stderr, "%s: internal error: CHECK(%s) failed at %s:%d\n", program_name, cond, file, line);
  abort();
}

static void *checked(void *ptr, size_t size) {
  if (!ptr && size) die("out of memory allocating %zu bytes", size);
  return ptr;
}

void *xmalloc(size_t size) { return checked(malloc(size), size); }
void *xcalloc(size_t count, size_t size) { return checked(calloc(count, size), count * size); }
void *xrealloc(void *ptr, size_t size) { return checked(realloc(ptr, size), size); }
char *xstrdup(const char *s) { return checked(strdup(s), strlen(s) + 1); }
