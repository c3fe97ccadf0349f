// json_scratch.h: parsing small JSON texts (SSE chunks) with cJSON without a malloc per parse.
// While json_scratch_parse or json_scratch_release runs, cJSON's allocations in that thread come
// from the caller's scratch arena; everywhere else cJSON keeps using malloc/free, so other cJSON
// users in the process are unaffected. Must not be used for trees that outlive a release.
#ifndef GB_BENCH_JSON_SCRATCH_H
#define GB_BENCH_JSON_SCRATCH_H

#include <cjson/cJSON.h>
#include <stddef.h>

// One per thread that parses; zero-initialise ({0}).
typedef struct {
  char *base;  // [cap] bytes, one allocation reused by every parse
  size_t cap;
  size_t used;
  size_t overflow;  // bytes the last parse had to malloc because base was full
} JsonScratch;

// Parses text[len]; NULL when it is not valid JSON. The tree lives in s until
// json_scratch_release(s, tree), which must come before the next parse with s. Read the tree
// only (no cJSON calls that allocate) between the two.
cJSON *json_scratch_parse(JsonScratch *s, const char *text, size_t len);
void json_scratch_release(JsonScratch *s, cJSON *tree);
void json_scratch_free(JsonScratch *s);

#endif
