// harmony_fixture.h: the cmocka group setup/teardown shared by tests that need an o200k_harmony
// tokenizer as their state (included by one test file each; static, so no link clashes).
#ifndef GB_TESTS_HARMONY_FIXTURE_H
#define GB_TESTS_HARMONY_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "text/tokenizer.h"

static int harmony_setup(void **state) {
  Tokenizer *t = calloc(1, sizeof *t);
  char err[1024];
  if (!t || !tok_init(t, TOK_O200K_HARMONY, NULL, err, sizeof err)) {
    fprintf(stderr, "%s\n", t ? err : "out of memory");
    free(t);
    return -1;
  }
  *state = t;
  return 0;
}

static int harmony_teardown(void **state) {
  tok_free(*state);
  free(*state);
  return 0;
}

#endif
