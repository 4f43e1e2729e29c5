/*
** The cpu backend's streams (cpu_stream.h).
*/
#include "cpu_stream.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gj_bstream {
  gj_worker *w;
};

int cpu_stream_new(gj_bstate *st, int dev, gj_bstream **out, gj_err *err)
{
  gj_bstream *s;
  (void)st;
  *out = NULL;
  if (dev != 0) return gj_err_set(err, "cpu: no device %d", dev);
  s = malloc(sizeof(*s));
  if (!s) return gj_err_set(err, "cpu: out of memory");
  s->w = gj_worker_new(err);
  if (!s->w) {
    free(s);
    return gj_err_prefix(err, "cpu: ");
  }
  *out = s;
  return 0;
}

void cpu_stream_free(gj_bstate *st, int dev, gj_bstream *s)
{
  (void)st;
  (void)dev;
  if (!s) return;
  gj_worker_free(s->w);
  free(s);
}

int cpu_stream_wait(gj_bstate *st, int dev, gj_bstream *s, int *failed,
                    gj_err *err)
{
  (void)st;
  (void)dev;
  *failed = -1;
  if (!s) return 0;        /* the default stream: launches have finished */
  return gj_worker_wait(s->w, failed, err);
}

int cpu_stream_post(gj_bstream *s, gj_work_fn run, gj_work_done done,
                    void *job, gj_err *err)
{
  return gj_worker_post(s->w, run, done, job, err);
}

/* A copy on a stream: memcpy on the worker, in order with its launches
** (device memory is host memory). */
typedef struct cpu_copy_job {
  void *dst;
  const void *src;
  size_t n;
} cpu_copy_job;

static int copy_run(void *job, gj_err *err)
{
  cpu_copy_job *j = job;
  (void)err;
  memcpy(j->dst, j->src, j->n);
  return 0;
}

int cpu_stream_copy(gj_bstate *st, int dev, gj_bstream *s, void *dst,
                    const void *src, size_t n, int dir, gj_err *err)
{
  cpu_copy_job *j;
  (void)st;
  (void)dir;
  if (dev != 0) return gj_err_set(err, "cpu: no device %d", dev);
  if (n == 0) return gj_worker_post(s->w, NULL, NULL, NULL, err);
  if (!dst || !src) return gj_err_set(err, "cpu: copy with a null pointer");
  j = malloc(sizeof(*j));
  if (!j) return gj_err_set(err, "cpu: out of memory");
  j->dst = dst;
  j->src = src;
  j->n = n;
  if (gj_worker_post(s->w, copy_run, free, j, err)) {
    free(j);
    return -1;
  }
  return 0;
}

/* -- events: a marker on the worker ------------------------------------- */

/* Held by the user's handle and by each job on a worker that refers to it
** (the marker, waits of other streams): freed by the last of them. */
struct gj_bevent {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  int refs;
  double t;                /* CLOCK_MONOTONIC seconds when it finished */
};

static void ev_unref(gj_bevent *e)
{
  int left;
  pthread_mutex_lock(&e->mu);
  left = --e->refs;
  pthread_mutex_unlock(&e->mu);
  if (left) return;
  pthread_cond_destroy(&e->cv);
  pthread_mutex_destroy(&e->mu);
  free(e);
}

static void ev_reached(void *job)     /* the marker: the worker got here */
{
  gj_bevent *e = job;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  pthread_mutex_lock(&e->mu);
  e->t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  e->done = 1;
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);
  ev_unref(e);
}

static void ev_block(void *job)       /* another stream waits for it here */
{
  gj_bevent *e = job;
  pthread_mutex_lock(&e->mu);
  while (!e->done) pthread_cond_wait(&e->cv, &e->mu);
  pthread_mutex_unlock(&e->mu);
  ev_unref(e);
}

int cpu_event_record(gj_bstate *st, int dev, gj_bstream *s, gj_bevent **out,
                     gj_err *err)
{
  gj_bevent *e;
  (void)st;
  *out = NULL;
  if (dev != 0) return gj_err_set(err, "cpu: no device %d", dev);
  e = calloc(1, sizeof(*e));
  if (!e) return gj_err_set(err, "cpu: out of memory");
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->cv, NULL);
  e->refs = 2;             /* the handle and the marker */
  if (gj_worker_mark(s->w, ev_reached, e, err)) {
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e);
    return -1;
  }
  *out = e;
  return 0;
}

int cpu_event_query(gj_bstate *st, gj_bevent *e, gj_err *err)
{
  int done;
  (void)st;
  (void)err;
  pthread_mutex_lock(&e->mu);
  done = e->done;
  pthread_mutex_unlock(&e->mu);
  return done;
}

int cpu_event_sync(gj_bstate *st, gj_bevent *e, gj_err *err)
{
  (void)st;
  (void)err;
  pthread_mutex_lock(&e->mu);
  while (!e->done) pthread_cond_wait(&e->cv, &e->mu);
  pthread_mutex_unlock(&e->mu);
  return 0;
}

int cpu_event_wait(gj_bstate *st, int dev, gj_bstream *s, gj_bevent *e,
                   gj_err *err)
{
  (void)st;
  if (dev != 0) return gj_err_set(err, "cpu: no device %d", dev);
  pthread_mutex_lock(&e->mu);
  if (e->done) {
    pthread_mutex_unlock(&e->mu);
    return 0;
  }
  e->refs++;
  pthread_mutex_unlock(&e->mu);
  if (gj_worker_mark(s->w, ev_block, e, err)) {
    ev_unref(e);
    return -1;
  }
  return 0;
}

int cpu_event_elapsed(gj_bstate *st, gj_bevent *a, gj_bevent *b, double *ms,
                      gj_err *err)
{
  (void)st;
  if (!cpu_event_query(st, a, err) || !cpu_event_query(st, b, err))
    return gj_err_set(err, "cpu: elapsed time of an event not finished");
  *ms = (b->t - a->t) * 1e3;
  return 0;
}

void cpu_event_free(gj_bstate *st, gj_bevent *e)
{
  (void)st;
  if (e) ev_unref(e);
}
