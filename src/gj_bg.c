/*
** Compiles in the background (gj_bg.h): one worker thread per context
** (gj_qthread.h), a FIFO of back halves under its mutex, its condition
** variables for "work posted" and (done) "a compile finished".
**
** Invariants:
** - b->state moves QUEUED -> RUNNING -> DONE (or QUEUED -> DONE when the
**   context closes first), always under q->t.mu.  The worker writes b->rc,
**   b->err, b->out and b->stats while RUNNING and nobody else touches them
**   then; the owning thread reads them only after seeing DONE under q->t.mu.
** - q->all (every compile of the context) and each compile's slot, taken
**   and orphan flags are the owning thread's alone.
** - The worker never frees a compile and never touches Lua or the
**   context's kernels and streams: freeing happens on the owning thread.
** - fork(): a queue made before it has no worker in the child.  Its first
**   use there (fork_check) makes its mutex, condition variables and thread
**   again; queued compiles run on the new thread, and one that was running
**   in the parent ends with an error (compile it again).  Nothing in the
**   child joins the parent's thread.
*/
#include <stdlib.h>
#include <string.h>

#include "gj_bg.h"
#include "gj_qthread.h"

enum { BG_QUEUED, BG_RUNNING, BG_DONE };

struct gj_bgc {
  gj_ctx *ctx;
  gj_compile_opts o;      /* a copy; its strings are in text */
  char *text;
  gj_pmid *mid;           /* the front half's result, until the back half */
  gj_compile_out out;
  gj_err err;
  int rc;
  int state;              /* BG_*: under q->t.mu */
  gj_cache_stats stats;   /* what the back half counted, not yet added */
  int taken;              /* gj_bg_wait gave the kernel away */
  int orphan;             /* the holder let go */
  gj_bgc **slot;          /* the holder's pointer to it, or NULL */
  gj_bgc *qnext;          /* in the queue (q->t.mu) */
  gj_bgc *next;           /* in q->all */
};

struct gj_bgq {
  gj_qthread t;           /* done: a compile finished */
  gj_bgc *head, *tail;    /* queued, oldest first (t.mu) */
  int running;            /* queued or running (t.mu) */
  int stop;               /* t.mu */
  gj_bgc *all;            /* owning thread */
};

static void *worker_main(void *arg)
{
  struct gj_bgq *q = arg;
  pthread_mutex_lock(&q->t.mu);
  for (;;) {
    gj_bgc *b;
    while (!q->head && !q->stop) pthread_cond_wait(&q->t.work, &q->t.mu);
    if (!q->head) break;                 /* stop (the queue was emptied) */
    b = q->head;
    q->head = b->qnext;
    if (!q->head) q->tail = NULL;
    b->state = BG_RUNNING;
    pthread_mutex_unlock(&q->t.mu);
    b->rc = gj_pipeline_back(b->mid, &b->out, &b->err);   /* frees mid */
    b->mid = NULL;
    pthread_mutex_lock(&q->t.mu);
    b->state = BG_DONE;
    q->running--;
    pthread_cond_broadcast(&q->t.done);
  }
  pthread_mutex_unlock(&q->t.mu);
  return NULL;
}

/* q's thread; 0, or -1 (nothing left made). */
static int start(struct gj_bgq *q)
{
  return gj_qthread_start(&q->t, worker_main, q) ? -1 : 0;
}

/* End b (not queued any more) with the error msg. */
static void bg_fail(gj_bgc *b, const char *msg)
{
  b->state = BG_DONE;
  b->rc = -1;
  gj_err_set(&b->err, "kernel %s: %s", b->o.name, msg);
}

/* In a fork() child, before anything else touches q (see the top): 0, or
** -1 with err when no thread could be made (the queued compiles end with
** that error then, and the next use tries again). */
static int fork_check(struct gj_bgq *q, gj_err *err)
{
  gj_bgc *b;
  if (!q || gj_qthread_here(&q->t)) return 0;
  q->running = 0;
  for (b = q->all; b; b = b->next)
    if (b->state == BG_RUNNING) {   /* the parent's thread had it */
      b->mid = NULL;
      memset(&b->out, 0, sizeof(b->out));
      bg_fail(b, "its compile was running when fork() was called (compile it "
              "again in this process)");
    }
  for (b = q->head; b; b = b->qnext) q->running++;
  q->stop = 0;
  if (start(q) == 0) return 0;
  for (b = q->head; b; b = b->qnext)
    bg_fail(b, "no compile worker thread in this fork() child");
  q->head = q->tail = NULL;
  q->running = 0;
  return gj_err_set(err, "cannot start the compile worker thread in this "
                    "fork() child");
}

/* The context's queue and worker, made on first use. */
static struct gj_bgq *queue_of(gj_ctx *ctx, gj_err *err)
{
  struct gj_bgq *q = ctx->bg;
  if (q) return fork_check(q, err) ? NULL : q;
  q = calloc(1, sizeof(*q));
  if (!q) {
    gj_err_set(err, "out of memory");
    return NULL;
  }
  if (start(q) != 0) {
    free(q);
    gj_err_set(err, "cannot start the compile worker thread");
    return NULL;
  }
  ctx->bg = q;
  return q;
}

/* o's strings into one block b->text, b->o pointing there. */
static int copy_opts(gj_bgc *b, const gj_compile_opts *o)
{
  const char **s[4 + 2 * GJ_MAXPARAMS];
  size_t n = 0, len = 0;
  char *p;
  int j;
  b->o = *o;
  b->o.plugins = NULL;
  s[n++] = &b->o.name;
  s[n++] = &b->o.cache_dir;
  s[n++] = &b->o.source;
  for (j = 0; j < o->nparams; j++) {
    s[n++] = &b->o.types[j];
    s[n++] = &b->o.argnames[j];
  }
  for (j = 0; j < (int)n; j++)
    if (*s[j]) len += strlen(*s[j]) + 1;
  p = b->text = malloc(len ? len : 1);
  if (!p) return -1;
  for (j = 0; j < (int)n; j++) {
    if (!*s[j]) continue;
    len = strlen(*s[j]) + 1;
    memcpy(p, *s[j], len);
    *s[j] = p;
    p += len;
  }
  return 0;
}

/* Add what b counted to the context's counts, once. */
static void add_stats(gj_bgc *b)
{
  gj_cache_stats *c = &b->ctx->cache, *s = &b->stats;
  c->hits += s->hits;
  c->misses += s->misses;
  c->rejected += s->rejected;
  c->writes += s->writes;
  c->write_errors += s->write_errors;
  c->compiles += s->compiles;
  memset(s, 0, sizeof(*s));
}

/* Free a compile that is not queued or running (owning thread). */
static void bg_free(gj_bgc *b)
{
  struct gj_bgq *q = b->ctx->bg;
  gj_bgc **pp;
  if (q)
    for (pp = &q->all; *pp; pp = &(*pp)->next)
      if (*pp == b) {
        *pp = b->next;
        break;
      }
  if (b->slot) *b->slot = NULL;
  add_stats(b);
  gj_kernel_free(b->out.kernel);   /* nobody took it */
  free(b->out.llvm);
  free(b->out.asm_text);
  gj_pipeline_mid_free(b->mid);
  free(b->text);
  free(b);
}

gj_bgc *gj_bg_start(gj_ctx *ctx, gj_kvsrc *src, const gj_compile_opts *o,
                    gj_bgc **slot, gj_err *err)
{
  struct gj_bgq *q = queue_of(ctx, err);
  gj_bgc *b = q ? calloc(1, sizeof(gj_bgc)) : NULL;
  gj_bg_reap(ctx);
  if (b && copy_opts(b, o)) {
    free(b);
    b = NULL;
  }
  if (!b) {
    if (q) gj_err_set(err, "out of memory");
    if (src) src->ops->close(src);
    return NULL;
  }
  b->ctx = ctx;
  b->slot = slot;
  b->next = q->all;
  q->all = b;
  b->o.want_kernel = 1;
  b->rc = gj_pipeline_front(ctx, src, &b->o, &b->out, &b->mid, &b->err);
  pthread_mutex_lock(&q->t.mu);
  if (b->rc) {
    b->state = BG_DONE;
  } else {
    gj_pipeline_mid_stats(b->mid, &b->stats);
    b->state = BG_QUEUED;
    if (q->tail) q->tail->qnext = b;
    else q->head = b;
    q->tail = b;
    q->running++;
    pthread_cond_signal(&q->t.work);
  }
  pthread_mutex_unlock(&q->t.mu);
  return b;
}

int gj_bg_done(gj_bgc *b)
{
  struct gj_bgq *q = b->ctx->bg;
  int done;
  gj_err e;
  fork_check(q, &e);
  pthread_mutex_lock(&q->t.mu);
  done = b->state == BG_DONE;
  pthread_mutex_unlock(&q->t.mu);
  return done;
}

int gj_bg_wait(gj_bgc *b, gj_compile_out *out, gj_err *err)
{
  struct gj_bgq *q = b->ctx->bg;
  gj_err e;
  fork_check(q, &e);   /* on failure, b is done with its error */
  pthread_mutex_lock(&q->t.mu);
  while (b->state != BG_DONE) pthread_cond_wait(&q->t.done, &q->t.mu);
  pthread_mutex_unlock(&q->t.mu);
  add_stats(b);
  if (b->rc) {
    *err = b->err;
    return -1;
  }
  if (b->taken)
    return gj_err_set(err, "kernel %s: this compile's result was taken",
                      b->o.name);
  *out = b->out;
  memset(&b->out, 0, sizeof(b->out));
  b->taken = 1;
  return 0;
}

void gj_bg_release(gj_bgc *b)
{
  b->slot = NULL;
  b->orphan = 1;
  if (gj_bg_done(b)) bg_free(b);
}

void gj_bg_reap(gj_ctx *ctx)
{
  struct gj_bgq *q = ctx->bg;
  gj_bgc *b, *next;
  if (!q) return;
  for (b = q->all; b; b = next) {
    next = b->next;
    if (b->orphan && gj_bg_done(b)) bg_free(b);
  }
}

int gj_bg_pending(gj_ctx *ctx)
{
  struct gj_bgq *q = ctx->bg;
  int n;
  gj_err e;
  if (!q) return 0;
  fork_check(q, &e);
  pthread_mutex_lock(&q->t.mu);
  n = q->running;
  pthread_mutex_unlock(&q->t.mu);
  return n;
}

void gj_bg_close(gj_ctx *ctx)
{
  struct gj_bgq *q = ctx->bg;
  gj_bgc *b, *dropped;
  gj_err e;
  if (!q) return;
  fork_check(q, &e);
  if (!gj_qthread_here(&q->t)) {   /* no thread here: nothing runs or waits */
    while (q->all) bg_free(q->all);
    free(q);
    ctx->bg = NULL;
    return;
  }
  pthread_mutex_lock(&q->t.mu);
  dropped = q->head;               /* not started: they never will be */
  for (b = dropped; b; b = b->qnext) {
    b->state = BG_DONE;
    b->rc = -1;
    gj_err_set(&b->err, "kernel %s: the gpujit context was closed before "
               "its compile ran", b->o.name);
    q->running--;
  }
  q->head = q->tail = NULL;
  pthread_mutex_unlock(&q->t.mu);
  gj_qthread_stop(&q->t, &q->stop);   /* after the compile that runs */
  while (q->all) bg_free(q->all);
  free(q);
  ctx->bg = NULL;
}
