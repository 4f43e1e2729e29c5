/*
** The per-state context's C side: opening backends on first use, and the
** FFI entry points of gpujit.h that lua/gpujit calls on the launch path
** (gj_launch, gj_prints, gj_mem_*, gj_sync, gj_job_from_backend).  No Lua C
** API here: a launch that hits the compile cache never enters it; the
** binding (gj_lua.c) hands the context and kernel pointers out.
*/
#include <stdlib.h>
#include <string.h>

#include "gj_ctx.h"
#include "gj_pipeline.h"
#include "gpujit.h"

void gj_ctx_init(gj_ctx *ctx)
{
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&ctx->compile_mu, &a);
  pthread_mutexattr_destroy(&a);
}

void gj_ctx_fini(gj_ctx *ctx)
{
  pthread_mutex_destroy(&ctx->compile_mu);
}

int gj_ctx_backend(gj_ctx *ctx, int bk, gj_err *err)
{
  if (bk < 0 || bk >= gj_nbackends)
    return gj_err_set(err, "no backend #%d", bk);
  if (ctx->bopened[bk] == 0) {
    /* An open that succeeds may still say why the backend cannot run
    ** kernels (it compiles without its device): berr is kept. */
    ctx->berr[bk].msg[0] = '\0';
    if (gj_backends[bk]->open(&ctx->bst[bk], &ctx->berr[bk]) == 0) {
      ctx->bopened[bk] = 1;
    } else {
      ctx->bopened[bk] = -1;
      ctx->bst[bk] = NULL;
    }
  }
  if (ctx->bopened[bk] < 0) {
    *err = ctx->berr[bk];
    return gj_err_prefix(err, "backend %s is not available: ", gj_backends[bk]->name);
  }
  return 0;
}

/* --- FFI entry points ----------------------------------------------------- */

GJ_API int gj_launch(gj_kernel *k, const gj_dims *dims, void *args)
{
  if (!k || !k->prog) return -1;
  return gj_kernel_launch(k, dims, args);
}

GJ_API const void *gj_prints(gj_kernel *k, uint64_t *written, uint64_t *dropped)
{
  return gj_kernel_prints(k, written, dropped);
}

GJ_API const char *gj_errmsg(gj_ctx *c)
{
  return c->err.msg;
}

GJ_API void *gj_mem_alloc(gj_ctx *c, int bk, int dev, uint64_t bytes)
{
  if (gj_ctx_backend(c, bk, &c->err)) return NULL;
  return gj_backends[bk]->alloc(c->bst[bk], dev, (size_t)bytes, &c->err);
}

GJ_API void gj_mem_free(gj_ctx *c, int bk, int dev, void *p)
{
  if (bk < 0 || bk >= gj_nbackends || c->bopened[bk] <= 0 || !p) return;
  gj_backends[bk]->free(c->bst[bk], dev, p);
}

GJ_API int gj_mem_copy(gj_ctx *c, int bk, int dev, void *dst, const void *src,
                       uint64_t bytes, int dir)
{
  if (gj_ctx_backend(c, bk, &c->err)) return -1;
  return gj_backends[bk]->copy(c->bst[bk], dev, dst, src, (size_t)bytes, dir,
                               &c->err);
}

GJ_API int gj_sync(gj_ctx *c, int bk, int dev)
{
  if (gj_ctx_backend(c, bk, &c->err)) return -1;
  return gj_backends[bk]->sync(c->bst[bk], dev, &c->err);
}

GJ_API void *gj_mem_host_register(gj_ctx *c, int bk, int dev, void *host,
                                  uint64_t bytes, int written)
{
  void *p;
  if (gj_ctx_backend(c, bk, &c->err)) return NULL;
  if (!gj_backends[bk]->host_register) {
    gj_err_set(&c->err, "%s: host memory cannot be registered",
               gj_backends[bk]->name);
    return NULL;
  }
  p = gj_backends[bk]->host_register(c->bst[bk], dev, host, (size_t)bytes,
                                     written, &c->err);
  if (p) {
    c->host_regs++;
    c->host_live++;
  }
  return p;
}

GJ_API int gj_mem_host_release(gj_ctx *c, int bk, int dev, void *p, int quiet)
{
  gj_err e;
  if (gj_ctx_backend(c, bk, &c->err) || !gj_backends[bk]->host_release)
    return -1;
  c->host_live--;
  if (gj_backends[bk]->host_release(c->bst[bk], dev, p, &e) == 0) return 0;
  if (!quiet) c->err = e;
  return -1;
}

GJ_API int gj_job_from_backend(gj_ctx *c, const char *backend, int dev,
                               gj_job *job)
{
  int bk;
  for (bk = 0; bk < gj_nbackends; bk++)
    if (strcmp(gj_backends[bk]->name, backend) == 0) break;
  if (bk == gj_nbackends)
    return gj_err_set(&c->err, "no backend '%s'", backend);
  if (gj_ctx_backend(c, bk, &c->err)) return -1;
  memset(job, 0, sizeof(*job));
  return gj_backends[bk]->job(c->bst[bk], dev, job, &c->err);
}
