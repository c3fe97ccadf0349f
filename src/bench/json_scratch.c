// json_scratch.c: cJSON allocation hooks that bump-allocate from the calling thread's active
// scratch arena, falling back to malloc/free when none is active or it is full (the arena then
// grows before the next parse). The hooks are process-wide and installed at program start,
// before any thread can use cJSON; they must not change what cJSON does for threads that are
// not inside a scratch parse or release.
#include "bench/json_scratch.h"

#include <stdbool.h>
#include <stdlib.h>

#include "common/check.h"

enum { SCRATCH_ALIGN = 16, SCRATCH_MIN_BYTES = 16 * 1024 };

static __thread JsonScratch *active;  // the arena of this thread's current parse, or NULL

static bool in_arena(const JsonScratch *s, const void *p) {
  return s && (const char *)p >= s->base && (const char *)p < s->base + s->cap;
}

static void *scratch_malloc(size_t n) {
  JsonScratch *s = active;
  size_t need = (n + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1);
  if (s && s->cap - s->used >= need) {
    void *p = s->base + s->used;
    s->used += need;
    return p;
  }
  if (s) s->overflow += need;
  return malloc(n);
}

static void scratch_free(void *p) {
  if (!in_arena(active, p)) free(p);
}

__attribute__((constructor)) static void install_hooks(void) {
  cJSON_Hooks hooks = {scratch_malloc, scratch_free};
  cJSON_InitHooks(&hooks);
}

cJSON *json_scratch_parse(JsonScratch *s, const char *text, size_t len) {
  if (!s->base) {
    s->cap = SCRATCH_MIN_BYTES;
    s->base = xmalloc(s->cap);
  }
  s->used = s->overflow = 0;
  active = s;
  cJSON *tree = cJSON_ParseWithLength(text, len);
  active = NULL;
  return tree;
}

void json_scratch_release(JsonScratch *s, cJSON *tree) {
  active = s;
  cJSON_Delete(tree);  // frees only the nodes that overflowed to malloc
  active = NULL;
  if (s->overflow) {  // grow so the next parse of this size fits
    size_t cap = s->cap;
    while (cap < s->used + s->overflow) cap *= 2;
    free(s->base);
    s->base = xmalloc(cap);
    s->cap = cap;
  }
  s->used = s->overflow = 0;
}

void json_scratch_free(JsonScratch *s) {
  free(s->base);
  *s = (JsonScratch){0};
}
