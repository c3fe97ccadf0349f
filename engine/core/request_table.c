// request_table.c: linear probing with backward-shift deletion (no tombstones, so lookups stay
// short however many requests come and go). Grows by doubling at half load.
#include "core/request_table.h"

#include <stdbool.h>
#include <stdlib.h>

#include "common/check.h"

#define REQ_TABLE_MIN_CAPACITY 64

static uint32_t slot_of(uint64_t id, int capacity) {
  id *= 0x9e3779b97f4a7c15ull;  // Fibonacci hashing: sequential ids spread over the table
  return (uint32_t)(id >> 32) & (uint32_t)(capacity - 1);
}

static void alloc_slots(RequestTable *t, int capacity) {
  t->ids = xcalloc((size_t)capacity, sizeof *t->ids);
  t->requests = xcalloc((size_t)capacity, sizeof *t->requests);
  t->capacity = capacity;
  t->num_requests = 0;
}

void req_table_init(RequestTable *t) { alloc_slots(t, REQ_TABLE_MIN_CAPACITY); }

void req_table_free(RequestTable *t) {
  free(t->ids);
  free(t->requests);
  *t = (RequestTable){0};
}

static void insert(RequestTable *t, Request *r) {
  uint32_t mask = (uint32_t)t->capacity - 1, i = slot_of(r->id, t->capacity);
  while (t->ids[i] != 0) {
    CHECK(t->ids[i] != r->id);
    i = (i + 1) & mask;
  }
  t->ids[i] = r->id;
  t->requests[i] = r;
  t->num_requests++;
}

void req_table_put(RequestTable *t, Request *r) {
  CHECK(r->id != 0);
  if (2 * (t->num_requests + 1) > t->capacity) {
    RequestTable old = *t;
    alloc_slots(t, old.capacity * 2);
    for (int i = 0; i < old.capacity; i++)
      if (old.ids[i] != 0) insert(t, old.requests[i]);
    req_table_free(&old);
  }
  insert(t, r);
}

// The slot holding id, or -1.
static int find(const RequestTable *t, uint64_t id) {
  if (id == 0) return -1;
  uint32_t mask = (uint32_t)t->capacity - 1, i = slot_of(id, t->capacity);
  for (; t->ids[i] != 0; i = (i + 1) & mask)
    if (t->ids[i] == id) return (int)i;
  return -1;
}

Request *req_table_get(const RequestTable *t, uint64_t id) {
  int i = find(t, id);
  return i < 0 ? NULL : t->requests[i];
}

void req_table_remove(RequestTable *t, uint64_t id) {
  int found = find(t, id);
  if (found < 0) return;
  uint32_t mask = (uint32_t)t->capacity - 1, hole = (uint32_t)found;
  // Shift later entries of the probe run back into the hole when their home slot allows it.
  for (uint32_t j = (hole + 1) & mask; t->ids[j] != 0; j = (j + 1) & mask) {
    uint32_t home = slot_of(t->ids[j], t->capacity);
    // j may move to hole unless its home lies cyclically in (hole, j].
    bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    t->ids[hole] = t->ids[j];
    t->requests[hole] = t->requests[j];
    hole = j;
  }
  t->ids[hole] = 0;
  t->requests[hole] = NULL;
  t->num_requests--;
}
