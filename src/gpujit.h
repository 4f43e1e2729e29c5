/*
** gpujit — the C API.
**
** Embedding: a host that runs LuaJIT links libgpujit.so (or the module
** gpujit/core.so) and calls luaopen_gpujit(L) for each lua_State that should
** have gpujit (examples/embed/host.c).  Each state gets its own context
** (gj_ctx): compiled kernels, backend states and errors are never shared
** between states.  Nothing here
** calls exit() or abort() on bad input; errors come back as return codes and
** gj_errmsg(), or as Lua errors at the Lua boundary.
**
** The functions below marked FFI are what lua/gpujit calls through the
** LuaJIT FFI on the launch path; they take no lua_State and never call the
** Lua C API, so a launch that hits the compile cache stays out of it.
*/
#ifndef GPUJIT_H
#define GPUJIT_H

#include <stdint.h>

#include "gj_type.h"

#if defined(__GNUC__)
#define GJ_API __attribute__((visibility("default")))
#else
#define GJ_API
#endif

#define GPUJIT_VERSION "0.1.0"

typedef struct lua_State lua_State;
typedef struct gj_ctx gj_ctx;        /* one per lua_State */
typedef struct gj_kernel gj_kernel;  /* one compiled overload, launchable */
typedef struct gj_job gj_job;        /* the compile job: gj_job.h, which
                                     ** needs LLVM's C headers */
typedef struct gj_job_field gj_job_field;   /* one member of gj_job */

/* The Lua module `gpujit.core` (the compiler and the device layer). */
GJ_API int luaopen_gpujit_core(lua_State *L);

/* The whole module: pushes the same table as require("gpujit") and stores
** it in package.loaded.gpujit.  Needs the state's standard libraries
** (luaL_openlibs) and lua/gpujit on package.path; the core is the library
** this function is linked from, never a copy from package.cpath.  Raises a
** Lua error on failure: call it with lua_pcall (or lua_cpcall). */
GJ_API int luaopen_gpujit(lua_State *L);

/* FFI: run a compiled kernel and wait for it.  args is the argument block
** (gj_sig_layout).  Returns 0, or -1 with the message in gj_errmsg(). */
GJ_API int gj_launch(gj_kernel *k, const gj_dims *dims, void *args);

/* FFI: kernel k's print records of its last launch (gpu.print; each a
** gj_print_rec, gj_backend.h): the first, or NULL when the kernel has no
** print; *written: how many records it holds, *dropped: how many did
** not fit (both 0 with NULL). */
GJ_API const void *gj_prints(gj_kernel *k, uint64_t *written,
                             uint64_t *dropped);

/* FFI: the message of the last failed call in this context. */
GJ_API const char *gj_errmsg(gj_ctx *c);

/* FFI: device memory of backend `bk` (an index from core.backends()). */
GJ_API void *gj_mem_alloc(gj_ctx *c, int bk, int dev, uint64_t bytes);
GJ_API void gj_mem_free(gj_ctx *c, int bk, int dev, void *p);
/* dir: 0 host -> device, 1 device -> host. */
GJ_API int gj_mem_copy(gj_ctx *c, int bk, int dev, void *dst,
                       const void *src, uint64_t bytes, int dir);
GJ_API int gj_sync(gj_ctx *c, int bk, int dev);
/* FFI: host memory as a launch's array argument, on devices whose devices()
** entry has host_register (gj_backend.h): a device address for the bytes at
** host until gj_mem_host_release, or NULL with gj_errmsg().  The release
** frees it even when it fails (-1); quiet: leave gj_errmsg() as it is. */
GJ_API void *gj_mem_host_register(gj_ctx *c, int bk, int dev, void *host,
                                  uint64_t bytes, int written);
GJ_API int gj_mem_host_release(gj_ctx *c, int bk, int dev, void *p,
                               int quiet);

/* FFI: streams (gpu.stream; the protocol is in src/gj_stream.h).  new:
** a stream on device dev of backend bk, or NULL with gj_errmsg().  free
** waits for its launches first.  launch enqueues k and returns; wait
** returns how many launches were waited for; status gives 0, or -1 with
** gj_errmsg() for launch i's error (i = -1: an error of the stream that no
** launch owns); prints is gj_prints for launch i; done forgets them. */
typedef struct gj_stream gj_stream;
GJ_API gj_stream *gj_stream_new(gj_ctx *c, int bk, int dev);
GJ_API void gj_stream_free(gj_stream *q);
GJ_API int gj_stream_launch(gj_stream *q, gj_kernel *k, const gj_dims *dims,
                            void *args);
/* copy: gj_mem_copy enqueued on q after what is there (one more of q's
** launches for wait and status); the host memory stays valid until wait. */
GJ_API int gj_stream_copy(gj_stream *q, void *dst, const void *src,
                          uint64_t bytes, int dir);
GJ_API int gj_stream_wait(gj_stream *q);
GJ_API int gj_stream_status(gj_stream *q, int i);
GJ_API const void *gj_stream_prints(gj_stream *q, int i, uint64_t *written,
                                    uint64_t *dropped);
GJ_API void gj_stream_done(gj_stream *q);
/* FFI: events (s:record()).  record: an event at q's current end, or NULL
** with gj_errmsg().  query: 1 finished, 0 not yet, -1 error.  sync: the
** host waits.  wait_event: q's later work waits for e (of another backend:
** the host waits now).  elapsed: *ms from a to b (waits for both; one
** device).  Errors (-1) in gj_errmsg() of the queue's or a's context. */
typedef struct gj_event gj_event;
GJ_API gj_event *gj_event_record(gj_stream *q);
GJ_API void gj_event_free(gj_event *e);
GJ_API int gj_event_query(gj_event *e);
GJ_API int gj_event_sync(gj_event *e);
GJ_API int gj_stream_wait_event(gj_stream *q, gj_event *e);
GJ_API int gj_event_elapsed(gj_event *a, gj_event *b, double *ms);

/* FFI: the SIGINT handler of watched launches alone (gj_watch.h; the sim
** backend's Ctrl-C): begin gives 0, or -1 when sigaction failed (nothing
** installed, end must not be called); nested begins are counted and the
** last end restores the previous action; count is how many SIGINTs the
** handler has seen so far. */
GJ_API int gj_sigint_begin(void);
GJ_API void gj_sigint_end(void);
GJ_API long gj_sigint_count(void);

/* FFI: a size as GPUJIT_CACHE_MAX is written ("512M", "1.5G", "1e9",
** "1000000"): 0 with *out in bytes, or -1 (gj_cache.h). */
GJ_API int gj_cache_parse_size(const char *s, uint64_t *out);

/* The compile job backend `backend` ("cpu", "opencl", "cuda") proposes for
** device dev, before any kernel's job option or plugin (gpu.job gives it
** after those, for one kernel).  Returns 0, or -1 with gj_errmsg().  It
** writes gj_job_size() bytes: code that declares gj_job itself (through
** the FFI) checks its declaration against that first, since gj_job gains
** fields at its end. */
GJ_API size_t gj_job_size(void);
/* gj_job's members, in order, *n of them (gj_job.h: GJ_JOBDEF): what such
** a declaration is checked against, member by member. */
GJ_API const gj_job_field *gj_job_fields(int *n);
GJ_API int gj_job_from_backend(gj_ctx *c, const char *backend, int dev,
                               gj_job *job);
/* The job's part of the content key (gj_job_key: every field GJ_JOBDEF
** marks KEY, libraries as if the kernel called each), as 64 hex digits
** into hex (at least 65 bytes): what a spec checks each keyed field
** against (a field whose change leaves it equal is missing from the key). */
GJ_API void gj_job_key_hex(const gj_job *job, char *hex);

#endif
