/*
** The per-state context: everything the core keeps for one Lua state (or
** one embedding).  Nothing in the core is global; two states never share a
** gj_ctx.  What only the binding needs (registry references) is in the
** binding's own state (gj_lua.c), not here.
*/
#ifndef GJ_CTX_H
#define GJ_CTX_H

#include <pthread.h>

#include "gj_backend.h"
#include "gj_bc.h"
#include "gj_cache.h"
#include "gj_err.h"

#define GJ_MAXBACKENDS 8

struct gj_ctx {
  gj_bcmap bcmap;
  gj_bstate *bst[GJ_MAXBACKENDS];
  int bopened[GJ_MAXBACKENDS];   /* 0 not tried, 1 open, -1 failed */
  gj_err berr[GJ_MAXBACKENDS];   /* why a backend failed to open */
  gj_err err;          /* last error of an FFI-path call */
  gj_cache_stats cache;
  /* gj_mem_host_register calls that succeeded, and those not released. */
  int64_t host_regs, host_live;
  struct gj_stream *queues;       /* the live streams (gj_stream.h) */
  /* Held by a compile while it uses the backends' compile side (the job,
  ** target, load and cache hooks): the back half of a compile may run on
  ** the background worker (gj_bg.h) while the owning thread compiles, so
  ** compiles of one context take turns there.  Recursive: a plugin's hook
  ** may compile another kernel. */
  pthread_mutex_t compile_mu;
  struct gj_bgq *bg;             /* the background compiles (gj_bg.h), or
                                 ** NULL before the first */
};

/* A context's fields that are not zero: call once on a zeroed ctx, and
** gj_ctx_fini once nothing uses it (after gj_bg_close). */
void gj_ctx_init(struct gj_ctx *ctx);
void gj_ctx_fini(struct gj_ctx *ctx);

/* Open backend bk on first use.  0, or -1 with ctx->berr[bk] copied to err. */
int gj_ctx_backend(struct gj_ctx *ctx, int bk, gj_err *err);

#endif
