/*
** An ordered background worker: one thread that runs the jobs posted to it
** one after another, in the order they were posted.  The cpu backend's
** streams are workers (a launch is a job that drives the thread pool).
**
** Errors: a job that fails (returns -1) is remembered with its index among
** the jobs posted since the last gj_worker_wait; the jobs posted after it,
** up to that wait, are not run (only their `done`).  gj_worker_wait waits
** until every posted job has run and returns the first error.  Posting and
** waiting are for one thread at a time (the stream's owner); the jobs run
** on the worker's thread, which blocks every signal (as the pool's do).
*/
#ifndef GJ_WORKER_H
#define GJ_WORKER_H

#include "gj_err.h"

typedef struct gj_worker gj_worker;

/* Run the job: 0, or -1 with err. */
typedef int (*gj_work_fn)(void *job, gj_err *err);
/* Free what the job holds (called once per posted job, run or not). */
typedef void (*gj_work_done)(void *job);

/* A new worker with its thread started, or NULL with err. */
gj_worker *gj_worker_new(gj_err *err);

/* Queue job (run NULL: a job that does nothing, counted all the same);
** 0, or -1 with err when out of memory (nothing queued, done
** not called). */
int gj_worker_post(gj_worker *w, gj_work_fn run, gj_work_done done,
                   void *job, gj_err *err);

/* Queue a marker: done(job) is called on the worker's thread when every
** job posted before it has run (also when they were skipped after an
** error); it takes no index and cannot fail.  0, or -1 with err. */
int gj_worker_mark(gj_worker *w, gj_work_done done, void *job, gj_err *err);

/* Wait until every job posted so far has run.  0, or -1 with the first
** failed job's error and *failed its index since the previous wait. */
int gj_worker_wait(gj_worker *w, int *failed, gj_err *err);

/* Has every job posted so far run?  1 yes, 0 no. */
int gj_worker_idle(gj_worker *w);

/* Wait (errors dropped), stop the thread, free the worker.  NULL allowed. */
void gj_worker_free(gj_worker *w);

#endif
