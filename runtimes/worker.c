/*
** The ordered background worker (worker.h): a thread with its mutex and
** condition variables (gj_qthread.h; the owner's: all done) and a singly
** linked FIFO of jobs.
**
** fork(): a worker made before it has no thread in the child.  Its first
** use there (fork_check) makes its mutex, condition variables and thread
** again; the jobs still queued run on the new thread, and a job that was
** running in the parent at the fork counts as failed (its effects are the
** parent's).  gj_worker_free in the child never joins the parent's thread.
*/
#include "worker.h"

#include "gj_qthread.h"

#include <stdlib.h>
#include <string.h>

typedef struct wjob {
  struct wjob *next;
  gj_work_fn run;
  gj_work_done done;
  void *job;
  int index;               /* among the jobs since the last wait */
} wjob;

struct gj_worker {
  gj_qthread t;            /* done: the queue is empty and nothing runs */
  wjob *head, *tail;
  int running;             /* a job is running now */
  int stop;
  int posted;              /* jobs posted since the last wait */
  int failed;              /* index of the first that failed, or -1 */
  gj_err err;              /* its error */
};

static void *worker_main(void *arg)
{
  gj_worker *w = arg;
  pthread_mutex_lock(&w->t.mu);
  for (;;) {
    wjob *j;
    int skip, rc = 0;
    gj_err e;
    while (!w->head && !w->stop) pthread_cond_wait(&w->t.work, &w->t.mu);
    if (!w->head) break;                  /* stop, and nothing left */
    j = w->head;
    w->head = j->next;
    if (!w->head) w->tail = NULL;
    w->running = 1;
    skip = w->failed >= 0;
    pthread_mutex_unlock(&w->t.mu);
    if (!skip && j->run) rc = j->run(j->job, &e);
    if (j->done) j->done(j->job);
    pthread_mutex_lock(&w->t.mu);
    if (rc && w->failed < 0) {
      w->failed = j->index;
      w->err = e;
    }
    free(j);
    w->running = 0;
    if (!w->head) pthread_cond_broadcast(&w->t.done);
  }
  pthread_mutex_unlock(&w->t.mu);
  return NULL;
}

static int start(gj_worker *w)
{
  return gj_qthread_start(&w->t, worker_main, w);
}

gj_worker *gj_worker_new(gj_err *err)
{
  gj_worker *w = calloc(1, sizeof(*w));
  int rc;
  if (!w) {
    gj_err_set(err, "out of memory");
    return NULL;
  }
  w->failed = -1;
  rc = start(w);
  if (rc != 0) {
    free(w);
    gj_err_set(err, "cannot start the stream's thread (%s)", strerror(rc));
    return NULL;
  }
  return w;
}

/* In a fork() child, before anything else touches w: its thread again
** (see the top).  0, or -1 with err (the thread could not be made: w is
** unusable, and posting to it is refused). */
static int fork_check(gj_worker *w, gj_err *err)
{
  int rc;
  if (gj_qthread_here(&w->t)) return 0;
  if (w->running) {            /* the parent's job: lost here */
    if (w->failed < 0) {
      w->failed = 0;
      gj_err_set(&w->err, "a launch on this stream was running when fork() "
                 "was called: its results are the parent's");
    }
    w->running = 0;
  }
  w->stop = 0;
  rc = start(w);
  if (rc != 0)
    return gj_err_set(err, "cannot start the stream's thread in this fork() "
                      "child (%s)", strerror(rc));
  return 0;
}

static int post(gj_worker *w, gj_work_fn run, gj_work_done done, void *job,
                int counted, gj_err *err)
{
  wjob *j;
  if (fork_check(w, err)) return -1;
  j = malloc(sizeof(*j));
  if (!j) return gj_err_set(err, "out of memory");
  j->next = NULL;
  j->run = run;
  j->done = done;
  j->job = job;
  pthread_mutex_lock(&w->t.mu);
  j->index = counted ? w->posted++ : -1;
  if (w->tail) w->tail->next = j;
  else w->head = j;
  w->tail = j;
  pthread_cond_signal(&w->t.work);
  pthread_mutex_unlock(&w->t.mu);
  return 0;
}

int gj_worker_post(gj_worker *w, gj_work_fn run, gj_work_done done,
                   void *job, gj_err *err)
{
  return post(w, run, done, job, 1, err);
}

int gj_worker_mark(gj_worker *w, gj_work_done done, void *job, gj_err *err)
{
  return post(w, NULL, done, job, 0, err);
}

int gj_worker_wait(gj_worker *w, int *failed, gj_err *err)
{
  int rc = 0;
  if (fork_check(w, err)) {
    *failed = -1;
    return -1;
  }
  pthread_mutex_lock(&w->t.mu);
  while (w->head || w->running) pthread_cond_wait(&w->t.done, &w->t.mu);
  if (w->failed >= 0) {
    *failed = w->failed;
    *err = w->err;
    rc = -1;
  }
  w->failed = -1;
  w->posted = 0;
  pthread_mutex_unlock(&w->t.mu);
  return rc;
}

int gj_worker_idle(gj_worker *w)
{
  int idle;
  gj_err e;
  if (fork_check(w, &e)) return 1;   /* nothing will run */
  pthread_mutex_lock(&w->t.mu);
  idle = !w->head && !w->running;
  pthread_mutex_unlock(&w->t.mu);
  return idle;
}

void gj_worker_free(gj_worker *w)
{
  int failed;
  gj_err e;
  if (!w) return;
  if (!gj_qthread_here(&w->t)) {   /* the parent's, never used here */
    free(w);                       /* its queued jobs are the parent's */
    return;
  }
  gj_worker_wait(w, &failed, &e);
  gj_qthread_stop(&w->t, &w->stop);
  free(w);
}
