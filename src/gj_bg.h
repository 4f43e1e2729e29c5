/*
** Compiles in the background (k:compile(types, { async = true }), issue
** 22): the front half of the pipeline (gj_pipeline.h: stages 1-3, every
** question to the known-value source) runs at once on the thread that owns
** the context; the back half (stages 4-11: the disk cache, LLVM's
** optimizer and code generation, the backend's load and build) is queued
** for the context's worker thread, one compile after another, each in the
** LLVM context its front half made.
**
** Threads.  Every function here is the owning thread's (the lua_State's);
** the worker only runs back halves, under ctx->compile_mu, and writes a
** compile's result and state.  What the worker counts of the disk cache
** goes to the compile's own counts, added to ctx->cache on the owning
** thread when the result is taken or the compile freed.
**
** Ownership.  gj_bg_start gives the compile to its holder (the binding's
** handle).  The holder takes the result once (gj_bg_wait) and lets go
** (gj_bg_release); a compile let go while in flight is freed once it
** finishes, at the owning thread's next call here or at gj_bg_close, with
** the kernel it made when nobody took it.  gj_bg_close (closing the
** state) waits for the compile that runs, drops those queued, frees every
** compile and stops the worker: no compile outlives its context.
*/
#ifndef GJ_BG_H
#define GJ_BG_H

#include "gj_pipeline.h"

typedef struct gj_bgc gj_bgc;

/* Start compiling src->kernel with o (o->want_kernel; no plugins: their
** hooks run on the owning thread, and a back half may call them, so the
** caller refuses compiles that name any).  o and its strings are copied;
** src is the compile's and is closed before this returns.  A front half
** that fails gives a compile already finished with its error.  *slot is
** where the holder keeps the compile: gj_bg_close sets it to NULL.  NULL
** with err set when memory or the worker thread cannot be had. */
gj_bgc *gj_bg_start(gj_ctx *ctx, gj_kvsrc *src, const gj_compile_opts *o,
                    gj_bgc **slot, gj_err *err);

/* 1 when the compile has finished, successfully or not; never waits. */
int gj_bg_done(gj_bgc *b);

/* Wait until it has finished; then 0 with *out, whose kernel is the
** caller's from here, or -1 with the compile's error (again on each
** call).  A second call after a success fails ("taken"). */
int gj_bg_wait(gj_bgc *b, gj_compile_out *out, gj_err *err);

/* The holder lets go of b (see the top). */
void gj_bg_release(gj_bgc *b);

/* Free the finished compiles whose holder let go (see the top). */
void gj_bg_reap(gj_ctx *ctx);

/* How many compiles are queued or running (the worker's backlog). */
int gj_bg_pending(gj_ctx *ctx);

/* Before the context's kernels and backends go (see the top). */
void gj_bg_close(gj_ctx *ctx);

#endif
