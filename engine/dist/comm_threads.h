// comm_threads.h: the communicator for ranks that are threads of one process sharing host
// memory (the CPU backend). Create a group once, then each rank's thread joins it for its Comm.
#ifndef GE_DIST_COMM_THREADS_H
#define GE_DIST_COMM_THREADS_H

#include "dist/comm.h"

typedef struct ThreadGroup ThreadGroup;

// A group of size ranks; freed by thread_group_free once every rank's Comm is destroyed.
ThreadGroup *thread_group_create(int size);
void thread_group_free(ThreadGroup *g);

// Rank rank's handle on g (the caller may hand it to the thread that runs the rank).
Comm *comm_threads_join(ThreadGroup *g, int rank);

#endif
