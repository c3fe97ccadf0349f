// token_ids.c: growable token id array (amortised O(1) push).
#include "text/token_ids.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"

static void reserve(TokenIds *ids, size_t extra) {
  if (ids->len + extra <= ids->cap) return;
  size_t cap = ids->cap ? ids->cap : 16;
  while (cap < ids->len + extra) cap *= 2;
  ids->data = xrealloc(ids->data, cap * sizeof *ids->data);
  ids->cap = cap;
}

void token_ids_push(TokenIds *ids, uint32_t id) {
  reserve(ids, 1);
  ids->data[ids->len++] = id;
}

void token_ids_append(TokenIds *ids, const uint32_t *src, size_t n) {
  reserve(ids, n);
  if (n) memcpy(ids->data + ids->len, src, n * sizeof *src);
  ids->len += n;
}

void token_ids_free(TokenIds *ids) {
  free(ids->data);
  *ids = (TokenIds){0};
}
