/*
** Streams: the core's queues of launches on a runtime stream (gj_stream.h).
** No Lua C API here; lua/gpujit/stream.lua drives it through the FFI.
*/
#include "gj_stream.h"

#include <stdlib.h>
#include <string.h>

#include "gj_fault.h"
#include "gj_pipeline.h"
#include "gpujit.h"

/* One launch (or copy) not yet waited for. */
typedef struct gj_pend {
  gj_kernel *k;         /* NULL: a copy (gj_stream_copy) */
  gj_fault *rec;        /* sig.faults: its own record (gj_record_size) */
} gj_pend;

struct gj_stream {
  gj_ctx *ctx;
  int bk, dev;
  gj_bstream *rs;        /* the runtime's; NULL once closed */
  gj_pend *v;
  int n, cap;
  int waited;           /* gj_stream_wait ran since the last launch */
  int rc, failed;       /* the runtime's wait: its result, its *failed */
  gj_err err;           /* and its error */
  gj_stream *next, *prev;
};

static const gj_backend *be_of(const gj_stream *q)
{
  return gj_backends[q->bk];
}

/* The runtime's wait, once per batch of launches (its error kept). */
static void queue_wait(gj_stream *q)
{
  if (q->waited || !q->rs) return;
  q->failed = -1;
  q->rc = be_of(q)->wait(q->ctx->bst[q->bk], q->dev, q->rs, &q->failed,
                         &q->err);
  q->waited = 1;
}

static void queue_clear(gj_stream *q)
{
  int i;
  for (i = 0; i < q->n; i++) free(q->v[i].rec);
  q->n = 0;
  q->rc = 0;
  q->failed = -1;
  q->waited = 1;
}

GJ_API gj_stream *gj_stream_new(gj_ctx *c, int bk, int dev)
{
  gj_stream *q;
  const gj_backend *be;
  if (gj_ctx_backend(c, bk, &c->err)) return NULL;
  be = gj_backends[bk];
  if (!be->stream_new || !be->wait || !be->copy_async) {
    gj_err_set(&c->err, "gpu.stream: the %s backend has no streams", be->name);
    return NULL;
  }
  q = calloc(1, sizeof(*q));
  if (!q) {
    gj_err_set(&c->err, "gpu.stream: out of memory");
    return NULL;
  }
  q->ctx = c;
  q->bk = bk;
  q->dev = dev;
  q->failed = -1;
  q->waited = 1;
  if (be->stream_new(c->bst[bk], dev, &q->rs, &c->err)) {
    free(q);
    return NULL;
  }
  q->next = c->queues;
  if (c->queues) c->queues->prev = q;
  c->queues = q;
  return q;
}

/* Wait for q's launches and end its runtime stream (q stays, detached). */
static void queue_close(gj_stream *q)
{
  if (!q->rs) return;
  queue_wait(q);
  queue_clear(q);
  be_of(q)->stream_free(q->ctx->bst[q->bk], q->dev, q->rs);
  q->rs = NULL;
  if (q->prev) q->prev->next = q->next;
  else q->ctx->queues = q->next;
  if (q->next) q->next->prev = q->prev;
  q->next = q->prev = NULL;
}

GJ_API void gj_stream_free(gj_stream *q)
{
  if (!q) return;
  queue_close(q);
  free(q->v);
  free(q);
}

void gj_streams_close(gj_ctx *ctx)
{
  while (ctx->queues) queue_close(ctx->queues);
}

void gj_streams_forget_kernel(gj_ctx *ctx, const gj_kernel *k)
{
  gj_stream *q;
  int i;
  for (q = ctx->queues; q; q = q->next)
    for (i = 0; i < q->n; i++)
      if (q->v[i].k == k) {
        queue_wait(q);
        q->v[i].k = NULL;      /* its fault and prints go with it */
      }
}

/* Room for one more entry in q's list; 0, or -1 with err. */
static int queue_grow(gj_stream *q, gj_err *err)
{
  if (q->n == q->cap) {
    int cap = q->cap ? 2 * q->cap : 8;
    gj_pend *v = realloc(q->v, (size_t)cap * sizeof(*v));
    if (!v) return gj_err_set(err, "out of memory");
    q->v = v;
    q->cap = cap;
  }
  return 0;
}

GJ_API int gj_stream_launch(gj_stream *q, gj_kernel *k, const gj_dims *dims,
                            void *args)
{
  gj_err *err = &q->ctx->err;
  gj_fault *rec = NULL;
  if (!q->rs) return gj_err_set(err, "the stream is closed");
  if (!k || !k->prog) return gj_err_set(err, "launch of no kernel");
  if (k->bk != q->bk || k->dev != q->dev)
    return gj_err_set(err, "launch: the kernel is compiled for another device "
                      "than the stream's");
  if (k->sig.cancel)
    return gj_err_set(err, "kernel '%s' has a timeout, which launches on a "
                      "stream do not support (launch it without a stream)",
                      k->name);
  if (gj_kernel_check_dims(k, dims)) return -1;
  if (queue_grow(q, err)) return -1;
  if (k->sig.faults) {
    rec = calloc(1, gj_record_size(&k->sig));
    if (!rec)
      return gj_err_set(err, "launch: out of memory for the fault record "
                        "(%zu bytes)", gj_record_size(&k->sig));
    if (k->sig.prints)
      ((gj_print_head *)(void *)(rec + 1))->cap = k->sig.print_cap;
  }
  if (k->be->launch(k->bst, k->prog, q->rs, dims, args, rec, err)) {
    free(rec);
    return -1;
  }
  q->v[q->n].k = k;
  q->v[q->n].rec = rec;
  q->n++;
  q->waited = 0;
  return 0;
}

GJ_API int gj_stream_copy(gj_stream *q, void *dst, const void *src,
                          uint64_t bytes, int dir)
{
  gj_err *err = &q->ctx->err;
  if (!q->rs) return gj_err_set(err, "the stream is closed");
  if (queue_grow(q, err)) return -1;
  if (be_of(q)->copy_async(q->ctx->bst[q->bk], q->dev, q->rs, dst, src,
                           (size_t)bytes, dir, err))
    return -1;
  q->v[q->n].k = NULL;
  q->v[q->n].rec = NULL;
  q->n++;
  q->waited = 0;
  return 0;
}

GJ_API int gj_stream_wait(gj_stream *q)
{
  queue_wait(q);
  return q->n;
}

GJ_API int gj_stream_status(gj_stream *q, int i)
{
  gj_err *err = &q->ctx->err;
  const gj_pend *pe;
  if (i < 0) {
    if (q->rc && (q->failed < 0 || q->failed >= q->n)) {
      *err = q->err;
      return -1;
    }
    return 0;
  }
  if (i >= q->n) return 0;
  if (q->rc && q->failed == i) {
    *err = q->err;
    return -1;
  }
  pe = &q->v[i];
  if (q->rc && q->failed >= 0 && i > q->failed) return 0;  /* did not run */
  if (pe->k && pe->rec)
    return gj_launch_fault(&pe->k->sites, &pe->k->asserts, pe->rec, err);
  return 0;
}

GJ_API const void *gj_stream_prints(gj_stream *q, int i, uint64_t *written,
                                    uint64_t *dropped)
{
  const gj_print_head *h;
  *written = *dropped = 0;
  if (i < 0 || i >= q->n || !q->v[i].rec || !q->v[i].k || !q->v[i].k->sig.prints)
    return NULL;
  h = (const gj_print_head *)(const void *)(q->v[i].rec + 1);
  *written = h->written;
  *dropped = h->dropped;
  return h + 1;
}

GJ_API void gj_stream_done(gj_stream *q)
{
  queue_wait(q);
  queue_clear(q);
}

/* -- events ----------------------------------------------------------------- */

struct gj_event {
  gj_ctx *ctx;
  int bk, dev;
  gj_bevent *re;         /* the runtime's */
};

/* Is e's backend still open (not after the state closed)? */
static int evt_live(const gj_event *e)
{
  return e && e->re && e->ctx->bopened[e->bk] > 0;
}

GJ_API gj_event *gj_event_record(gj_stream *q)
{
  gj_err *err = &q->ctx->err;
  const gj_backend *be = be_of(q);
  gj_event *e;
  if (!q->rs) {
    gj_err_set(err, "the stream is closed");
    return NULL;
  }
  if (!be->event_record) {
    gj_err_set(err, "the %s backend has no events", be->name);
    return NULL;
  }
  e = calloc(1, sizeof(*e));
  if (!e) {
    gj_err_set(err, "out of memory");
    return NULL;
  }
  e->ctx = q->ctx;
  e->bk = q->bk;
  e->dev = q->dev;
  if (be->event_record(q->ctx->bst[q->bk], q->dev, q->rs, &e->re, err)) {
    free(e);
    return NULL;
  }
  return e;
}

GJ_API void gj_event_free(gj_event *e)
{
  if (!e) return;
  if (evt_live(e)) gj_backends[e->bk]->event_free(e->ctx->bst[e->bk], e->re);
  free(e);
}

GJ_API int gj_event_query(gj_event *e)
{
  if (!evt_live(e)) return gj_err_set(&e->ctx->err, "the event's context is closed");
  return gj_backends[e->bk]->event_query(e->ctx->bst[e->bk], e->re, &e->ctx->err);
}

GJ_API int gj_event_sync(gj_event *e)
{
  if (!evt_live(e)) return gj_err_set(&e->ctx->err, "the event's context is closed");
  return gj_backends[e->bk]->event_sync(e->ctx->bst[e->bk], e->re, &e->ctx->err);
}

GJ_API int gj_stream_wait_event(gj_stream *q, gj_event *e)
{
  gj_err *err = &q->ctx->err;
  if (!q->rs) return gj_err_set(err, "the stream is closed");
  if (!evt_live(e)) return gj_err_set(err, "the event's context is closed");
  if (e->bk != q->bk)      /* another backend: the host waits now */
    return gj_backends[e->bk]->event_sync(e->ctx->bst[e->bk], e->re, err);
  return be_of(q)->event_wait(q->ctx->bst[q->bk], q->dev, q->rs, e->re, err);
}

GJ_API int gj_event_elapsed(gj_event *a, gj_event *b, double *ms)
{
  gj_err *err = &a->ctx->err;
  const gj_backend *be;
  if (!evt_live(a) || !evt_live(b)) return gj_err_set(err, "the event's context is closed");
  if (a->bk != b->bk || a->dev != b->dev)
    return gj_err_set(err, "the events are on different devices (their clocks differ)");
  be = gj_backends[a->bk];
  if (be->event_sync(a->ctx->bst[a->bk], a->re, err) ||
      be->event_sync(a->ctx->bst[a->bk], b->re, err))
    return -1;
  return be->event_elapsed(a->ctx->bst[a->bk], a->re, b->re, ms, err);
}
