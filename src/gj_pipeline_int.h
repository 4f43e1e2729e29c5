/*
** Internal to the pipeline (gj_pipeline.c): the disk cache's side of a
** compile, stages 4 and 11 (gj_pipeline_cache.c).  What is here needs no
** LLVM: a lookup reads an entry and hands it to the runtime's load (or
** cache_load), a store writes what the runtime's cache_save (or emit) gave.
** The content key they take is the compile's (content_key in
** gj_pipeline.c, over the module codegen made); docs/architecture.md, "The
** runtime and the compiler", says why that is what keeps a hit from
** running without the compiler today.
*/
#ifndef GJ_PIPELINE_INT_H
#define GJ_PIPELINE_INT_H

#include "gj_pipeline.h"

/* A kernel of o's backend and device with signature sig, not loaded yet
** (k->prog NULL); NULL with err when out of memory. */
gj_kernel *gj_pipeline_kernel_new(gj_ctx *ctx, const gj_compile_opts *o,
                                  const gj_sig *sig, gj_err *err);

/* 4. The entry for key in o->cache_dir, loaded: 1 and *out.  On a miss the
** entry's compile lock is taken (gj_cache_lock: waiting while another
** process compiles the same kernel) and the entry looked up again; a miss
** then returns 0 with *lockfd the lock, which the caller releases
** (gj_cache_unlock) once it has stored the entry, or -1 when no lock could
** be had.  A hit releases the lock itself.  Counts go to st: a miss, a bad
** entry (one the runtime no longer takes counts as bad and a miss), a hit. */
int gj_pipeline_cache_get(gj_ctx *ctx, gj_cache_stats *st,
                          const gj_compile_opts *o, const gj_cache_key *key,
                          const gj_sig *sig, gj_kernel **out, int *lockfd);

/* 11. Keep what the runtime wants kept for loaded kernel k (its
** cache_save), else the emitted artifact art[0..artlen): 1 when written.
** A failure is counted in st, never fatal. */
int gj_pipeline_cache_put(gj_cache_stats *st, const gj_compile_opts *o,
                          const gj_cache_key *key, gj_kernel *k,
                          const char *art, size_t artlen);

#endif
