/*
** The opencl backend, part four: streams and events (gj_backend.h).  A
** stream is a command queue of its own on the device's context; an event
** is a marker on a stream's queue.  Launches on a stream are opencl_run.c's
** (launch_on_stream), which takes their argument blocks from the stream's
** chunks here (in-process devices read them while the kernel runs).
*/
#include "opencl_int.h"

#include <stdlib.h>
#include <string.h>

/* -- streams: one command queue each (the struct: opencl_int.h) ---------- */

const uint64_t *ocl_stream_block(gj_bstream *s, const uint64_t *blk,
                                 unsigned n)
{
  uint64_t *v;
  if (s->last && s->last_n == n &&
      memcmp(s->last, blk, n * sizeof(uint64_t)) == 0)
    return s->last;
  if (s->cur && s->cur->used + n > OCL_BLK_CHUNK) s->cur = s->cur->next;
  if (!s->cur) {
    ocl_blk_chunk *c = calloc(1, sizeof(*c)), **end = &s->chunks;
    if (!c) return NULL;
    while (*end) end = &(*end)->next;
    *end = c;
    s->cur = c;
  }
  v = s->cur->v + s->cur->used;
  s->cur->used += n;
  memcpy(v, blk, n * sizeof(uint64_t));
  s->last = v;
  s->last_n = n;
  return v;
}

void ocl_stream_blocks_reset(gj_bstream *s)
{
  ocl_blk_chunk *c;
  for (c = s->chunks; c; c = c->next) c->used = 0;
  s->cur = s->chunks;
  s->last = NULL;
}

int ocl_stream_new(gj_bstate *st, int dev, gj_bstream **out, gj_err *err)
{
  gj_bstream *s;
  cl_int rc;
  *out = NULL;
  if (ocl_ready(st, dev, err) != 0) return -1;
  s = calloc(1, sizeof(*s));
  if (!s) return gj_err_set(err, "opencl: out of memory");
  s->dev = dev;
  s->q = st->cl.CreateCommandQueue(st->devs[dev].ctx, st->devs[dev].id, 0,
                                   &rc);
  if (!s->q) {
    free(s);
    return ocl_fail(err, "clCreateCommandQueue (stream)", rc);
  }
  *out = s;
  return 0;
}

/* Move s to a queue with profiling: its first command waits for the last
** of the old queue, which is released (OpenCL ends it once its commands
** have run). */
static int stream_profile(gj_bstate *st, gj_bstream *s, gj_err *err)
{
  ocl_device *d = &st->devs[s->dev];
  cl_event last = NULL;
  cl_int rc;
  cl_command_queue q = st->cl.CreateCommandQueue(d->ctx, d->id,
                                                 CL_QUEUE_PROFILING_ENABLE,
                                                 &rc);
  if (!q) return ocl_fail(err, "clCreateCommandQueue (stream, profiling)", rc);
  rc = st->cl.EnqueueMarkerWithWaitList(s->q, 0, NULL, &last);
  if (rc == CL_SUCCESS) rc = st->cl.Flush(s->q);
  if (rc == CL_SUCCESS)
    rc = st->cl.EnqueueBarrierWithWaitList(q, 1, &last, NULL);
  if (last) st->cl.ReleaseEvent(last);
  if (rc != CL_SUCCESS) {
    st->cl.ReleaseCommandQueue(q);
    return ocl_fail(err, "clEnqueueBarrierWithWaitList (stream, profiling)",
                    rc);
  }
  st->cl.ReleaseCommandQueue(s->q);
  s->q = q;
  s->profiling = 1;
  return 0;
}

void ocl_stream_free(gj_bstate *st, int dev, gj_bstream *s)
{
  (void)dev;
  if (!s || OCL_IN_CHILD(st)) return;   /* the parent's (ocl_forked) */
  st->cl.Finish(s->q);
  st->cl.ReleaseCommandQueue(s->q);
  while (s->chunks) {
    ocl_blk_chunk *c = s->chunks;
    s->chunks = c->next;
    free(c);
  }
  free(s);
}

/* -- events: markers on a stream's queue ---------------------------------- */

struct gj_bevent {
  int dev;
  cl_event ev;
};

int ocl_event_record(gj_bstate *st, int dev, gj_bstream *s, gj_bevent **out,
                     gj_err *err)
{
  gj_bevent *e;
  cl_int rc;
  *out = NULL;
  if (ocl_forked(st, err)) return -1;
  if (!s->profiling && stream_profile(st, s, err) != 0) return -1;
  e = calloc(1, sizeof(*e));
  if (!e) return gj_err_set(err, "opencl: out of memory");
  e->dev = dev;
  rc = st->cl.EnqueueMarkerWithWaitList(s->q, 0, NULL, &e->ev);
  if (rc == CL_SUCCESS) rc = st->cl.Flush(s->q);
  if (rc != CL_SUCCESS) {
    if (e->ev) st->cl.ReleaseEvent(e->ev);
    free(e);
    return ocl_fail(err, "clEnqueueMarkerWithWaitList", rc);
  }
  *out = e;
  return 0;
}

int ocl_event_query(gj_bstate *st, gj_bevent *e, gj_err *err)
{
  cl_int status = CL_QUEUED;
  cl_int rc;
  if (ocl_forked(st, err)) return -1;
  rc = st->cl.GetEventInfo(e->ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                           sizeof(status), &status, NULL);
  if (rc != CL_SUCCESS) return ocl_fail(err, "clGetEventInfo", rc);
  if (status < 0) return ocl_fail(err, "the event's stream", status);
  return status == CL_COMPLETE;
}

int ocl_event_sync(gj_bstate *st, gj_bevent *e, gj_err *err)
{
  cl_int rc;
  if (ocl_forked(st, err)) return -1;
  rc = st->cl.WaitForEvents(1, &e->ev);
  return rc == CL_SUCCESS ? 0 : ocl_fail(err, "clWaitForEvents", rc);
}

int ocl_event_wait(gj_bstate *st, int dev, gj_bstream *s, gj_bevent *e,
                   gj_err *err)
{
  cl_int rc;
  if (ocl_forked(st, err)) return -1;
  if (e->dev != dev) return ocl_event_sync(st, e, err);  /* another context */
  rc = st->cl.EnqueueBarrierWithWaitList(s->q, 1, &e->ev, NULL);
  return rc == CL_SUCCESS ? 0 : ocl_fail(err, "clEnqueueBarrierWithWaitList", rc);
}

int ocl_event_elapsed(gj_bstate *st, gj_bevent *a, gj_bevent *b, double *ms,
                      gj_err *err)
{
  cl_ulong ta = 0, tb = 0;
  cl_int rc;
  if (ocl_forked(st, err)) return -1;
  rc = st->cl.GetEventProfilingInfo(a->ev, CL_PROFILING_COMMAND_END,
                                    sizeof(ta), &ta, NULL);
  if (rc == CL_SUCCESS)
    rc = st->cl.GetEventProfilingInfo(b->ev, CL_PROFILING_COMMAND_END,
                                      sizeof(tb), &tb, NULL);
  if (rc != CL_SUCCESS) return ocl_fail(err, "clGetEventProfilingInfo", rc);
  *ms = ((double)tb - (double)ta) * 1e-6;
  return 0;
}

void ocl_event_free(gj_bstate *st, gj_bevent *e)
{
  if (!e) return;
  if (!OCL_IN_CHILD(st)) st->cl.ReleaseEvent(e->ev);   /* else the parent's */
  free(e);
}

int ocl_stream_copy(gj_bstate *st, int dev, gj_bstream *s, void *dst,
                    const void *src, size_t n, int dir, gj_err *err)
{
  cl_int rc;
  if (ocl_copy_on(st, dev, s->q, 0, dst, src, n, dir, err) != 0) return -1;
  if (st->devs[dev].starts_on_enqueue) return 0;
  rc = st->cl.Flush(s->q);
  return rc == CL_SUCCESS ? 0 : ocl_fail(err, "clFlush (stream)", rc);
}
