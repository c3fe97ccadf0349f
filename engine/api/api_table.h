// api_table.h: request id -> pointer, for routing the engine's token events to their
// connections: open addressing with linear probing, ids > 0 (0 marks a free slot). Not
// thread-safe; its owner locks around it.
#ifndef GE_API_API_TABLE_H
#define GE_API_API_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t id;  // 0: free
  void *value;
} ApiTableSlot;

typedef struct {
  ApiTableSlot *slots;  // [cap], cap a power of two, at most half full
  size_t cap;
  size_t num_items;
} ApiTable;  // zero-initialise

void api_table_put(ApiTable *t, uint64_t id, void *value);  // id must not be there yet
void *api_table_get(const ApiTable *t, uint64_t id);        // NULL when absent
void api_table_remove(ApiTable *t, uint64_t id);            // absent ids are ignored
void api_table_free(ApiTable *t);

#endif
