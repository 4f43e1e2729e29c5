/*
** Streams (gpu.stream): the core's side of a runtime stream (gj_backend.h,
** gj_bstream).  A gj_stream owns one runtime stream and the launches made on
** it since its last wait, in order: for each, the kernel and its own fault
** record (and print area), which the runtime fills while the kernel runs.
**
** The Lua face (lua/gpujit/stream.lua) keeps, beside it, what each launch
** needs at synchronize (arrays to keep alive and copy back).  Its protocol,
** through the FFI entry points of gpujit.h:
**   gj_stream_launch   enqueue (the kernel's ids, dims and args are read
**                      before it returns); -1: nothing was enqueued
**   gj_stream_wait     wait for every launch; returns how many there are
**   gj_stream_status   per launch i (0-based): its error, if it has one
**                      (the runtime's, or its bounds-check fault)
**   gj_stream_prints   per launch i: its print records
**   gj_stream_done     forget the launches (their records are freed)
** The context keeps a list of its queues, so that closing it waits for and
** ends every runtime stream before the kernels and backends go away.
*/
#ifndef GJ_STREAM_H
#define GJ_STREAM_H

#include "gj_ctx.h"
#include "gpujit.h"   /* gj_ctx, gj_kernel, gj_stream */

/* Wait for and end every runtime stream of ctx (the state is closing);
** the gj_stream structs stay, detached, until gj_stream_free. */
void gj_streams_close(gj_ctx *ctx);

/* Wait for every stream of ctx with a launch of k not yet waited for, and
** forget k there (k is about to be freed; the Lua face keeps a kernel with
** launches on a stream alive, so this is only a safety net). */
void gj_streams_forget_kernel(gj_ctx *ctx, const gj_kernel *k);

#endif
