/*
** The cpu backend's streams (cpu_stream.h).
*/
#include "cpu_stream.h"

#include <stdlib.h>
#include <string.h>

struct gj_stream {
  gj_worker *w;
};

int cpu_stream_new(gj_bstate *st, int dev, gj_stream **out, gj_err *err)
{
  gj_stream *s;
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

void cpu_stream_free(gj_bstate *st, int dev, gj_stream *s)
{
  (void)st;
  (void)dev;
  if (!s) return;
  gj_worker_free(s->w);
  free(s);
}

int cpu_stream_wait(gj_bstate *st, int dev, gj_stream *s, int *failed,
                    gj_err *err)
{
  (void)st;
  (void)dev;
  *failed = -1;
  if (!s) return 0;        /* the default stream: launches have finished */
  return gj_worker_wait(s->w, failed, err);
}

int cpu_stream_post(gj_stream *s, gj_work_fn run, gj_work_done done,
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

int cpu_stream_copy(gj_bstate *st, int dev, gj_stream *s, void *dst,
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
