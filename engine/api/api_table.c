// api_table.c: the id table. Deletion shifts the following run back (no tombstones), so lookups
// stay short however many requests come and go.
#include "api/api_table.h"

#include <stdlib.h>

#include "common/check.h"

static size_t slot_of(const ApiTable *t, uint64_t id) {
  uint64_t h = id * 0x9e3779b97f4a7c15ull;  // Fibonacci hashing spreads consecutive ids
  return (size_t)(h >> 32) & (t->cap - 1);
}

static void grow(ApiTable *t) {
  ApiTable bigger = {.cap = t->cap ? 2 * t->cap : 64};
  bigger.slots = xcalloc(bigger.cap, sizeof *bigger.slots);
  for (size_t i = 0; i < t->cap; i++)
    if (t->slots[i].id) api_table_put(&bigger, t->slots[i].id, t->slots[i].value);
  free(t->slots);
  *t = bigger;
}

void api_table_put(ApiTable *t, uint64_t id, void *value) {
  CHECK(id != 0);
  if (2 * (t->num_items + 1) > t->cap) grow(t);
  size_t i = slot_of(t, id);
  while (t->slots[i].id) i = (i + 1) & (t->cap - 1);
  t->slots[i] = (ApiTableSlot){id, value};
  t->num_items++;
}

void *api_table_get(const ApiTable *t, uint64_t id) {
  if (!t->cap || !id) return NULL;
  for (size_t i = slot_of(t, id); t->slots[i].id; i = (i + 1) & (t->cap - 1))
    if (t->slots[i].id == id) return t->slots[i].value;
  return NULL;
}

void api_table_remove(ApiTable *t, uint64_t id) {
  if (!t->cap || !id) return;
  size_t mask = t->cap - 1, i = slot_of(t, id);
  while (t->slots[i].id != id) {
    if (!t->slots[i].id) return;
    i = (i + 1) & mask;
  }
  // Move back any later entry of the run whose home slot is at or before the hole.
  for (size_t j = (i + 1) & mask; t->slots[j].id; j = (j + 1) & mask) {
    size_t home = slot_of(t, t->slots[j].id);
    if (((j - home) & mask) >= ((j - i) & mask)) {
      t->slots[i] = t->slots[j];
      i = j;
    }
  }
  t->slots[i] = (ApiTableSlot){0};
  t->num_items--;
}

void api_table_free(ApiTable *t) {
  free(t->slots);
  *t = (ApiTable){0};
}
