// request_table.h: the engine thread's map from request id to Request, so an abort finds its
// request in O(1). Open addressing with linear probing; ids are > 0 (0 marks an empty slot).
// Owns only its slot array, never the requests.
#ifndef GE_CORE_REQUEST_TABLE_H
#define GE_CORE_REQUEST_TABLE_H

#include <stdint.h>

#include "core/request.h"

typedef struct {
  uint64_t *ids;       // [capacity] 0: empty
  Request **requests;  // [capacity]
  int capacity;        // a power of two, at least twice num_requests
  int num_requests;
} RequestTable;

void req_table_init(RequestTable *t);
void req_table_free(RequestTable *t);
// Adds r under r->id, which must not be there yet.
void req_table_put(RequestTable *t, Request *r);
// The request with this id, or NULL.
Request *req_table_get(const RequestTable *t, uint64_t id);
// Removes id (no-op when absent).
void req_table_remove(RequestTable *t, uint64_t id);

#endif
