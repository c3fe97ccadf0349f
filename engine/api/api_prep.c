// api_prep.c: the preparation worker and its queue. A connection suspends itself under mu when
// it queues its job, and the worker resumes it only after taking the job from the queue under
// the same mu, so a resume never comes before its suspend. Must not hold mu while a job runs.
#include "api/api_prep.h"

static ApiPrepJob *pop(ApiPrep *p) {
  ApiPrepJob *job = p->head;
  if (job) p->head = job->next;
  if (!p->head) p->tail = NULL;
  return job;
}

static void *worker_main(void *arg) {
  ApiPrep *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->head && !p->exiting) pthread_cond_wait(&p->changed, &p->mu);
    ApiPrepJob *job = pop(p);
    bool cancelled = p->exiting;
    pthread_mutex_unlock(&p->mu);
    if (!job) return NULL;
    job->run(job, cancelled);
    MHD_resume_connection(job->conn);
    pthread_mutex_lock(&p->mu);
  }
}

bool api_prep_start(ApiPrep *p) {
  *p = (ApiPrep){0};
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->changed, NULL);
  p->started = pthread_create(&p->thread, NULL, worker_main, p) == 0;
  return p->started;
}

bool api_prep_submit(ApiPrep *p, ApiPrepJob *job) {
  pthread_mutex_lock(&p->mu);
  bool ok = p->started && !p->exiting;
  if (ok) {
    job->next = NULL;
    if (p->tail)
      p->tail->next = job;
    else
      p->head = job;
    p->tail = job;
    MHD_suspend_connection(job->conn);
    pthread_cond_signal(&p->changed);
  }
  pthread_mutex_unlock(&p->mu);
  return ok;
}

void api_prep_stop(ApiPrep *p) {
  pthread_mutex_lock(&p->mu);
  p->exiting = true;
  pthread_cond_signal(&p->changed);
  pthread_mutex_unlock(&p->mu);
  if (p->started) pthread_join(p->thread, NULL);
  p->started = false;
  pthread_cond_destroy(&p->changed);
  pthread_mutex_destroy(&p->mu);
}
