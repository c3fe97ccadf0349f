// bench_types.c: frees what a RequestResult owns.
#include "bench/bench_types.h"

#include <stdlib.h>

void request_result_free(RequestResult *r) {
  free(r->error);
  free(r->generated_text);
  free(r->itl_ns);
  *r = (RequestResult){0};
}
