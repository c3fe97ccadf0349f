// api_prep.h: prepares large requests off the HTTP thread. Parsing and tokenizing a body costs up
// to about 0.3 us a byte (an 8 MiB prompt of spaces: 2 s), and libmicrohttpd serves every
// connection from one thread, so a large body prepared there would stall every stream and every
// other client. The server hands bodies above API_PREP_INLINE_MAX to this one worker thread: the
// connection stays suspended until its job has run, then resumes and is answered. What a job
// does is the caller's; the worker only queues, runs and resumes. Small bodies stay inline.
#ifndef GE_API_API_PREP_H
#define GE_API_API_PREP_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>

enum { API_PREP_INLINE_MAX = 16 * 1024 };  // bytes of body prepared on the HTTP thread

typedef struct ApiPrepJob ApiPrepJob;
struct ApiPrepJob {
  ApiPrepJob *next;                              // the worker's queue
  struct MHD_Connection *conn;                   // suspended while the job waits and runs
  void (*run)(ApiPrepJob *job, bool cancelled);  // on the worker; cancelled: at stop, not run
};

typedef struct {
  pthread_mutex_t mu;  // guards the queue and exiting
  pthread_cond_t changed;
  ApiPrepJob *head, *tail;
  bool exiting;
  bool started;
  pthread_t thread;
} ApiPrep;

// Starts the worker. False when it cannot be created.
bool api_prep_start(ApiPrep *p);

// From the access handler of job->conn: queues job and suspends the connection; the worker runs
// job->run and then resumes it (the handler is called again). False, with nothing queued or
// suspended, once the worker is stopping.
bool api_prep_submit(ApiPrep *p, ApiPrepJob *job);

// Refuses new jobs, runs job->run(job, true) for the queued ones (resuming their connections),
// and ends the worker after the job in hand. Call before libmicrohttpd stops.
void api_prep_stop(ApiPrep *p);

#endif
