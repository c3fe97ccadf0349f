// token_ids.h: a growable array of token ids, the currency between tokenizer, renderer and engine.
#ifndef GB_TEXT_TOKEN_IDS_H
#define GB_TEXT_TOKEN_IDS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint32_t *data;  // [cap] ids, the first len valid
  size_t len;
  size_t cap;
} TokenIds;

void token_ids_push(TokenIds *ids, uint32_t id);
void token_ids_append(TokenIds *ids, const uint32_t *src, size_t n);
void token_ids_free(TokenIds *ids);

#endif
