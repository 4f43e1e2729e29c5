/*
** The disk cache's side of a compile, stages 4 and 11 of the pipeline
** (gj_pipeline_int.h): a lookup that loads an entry through the runtime, a
** store of what the runtime keeps.  No LLVM here: the part of the pipeline
** a process whose kernels all hit the cache needs, besides the key.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gj_pipeline_int.h"

gj_kernel *gj_pipeline_kernel_new(gj_ctx *ctx, const gj_compile_opts *o,
                                  const gj_sig *sig, gj_err *err)
{
  gj_kernel *k = calloc(1, sizeof(gj_kernel));
  if (!k) {
    gj_err_set(err, "out of memory");
    return NULL;
  }
  k->ctx = ctx;
  k->be = gj_backends[o->bk];
  k->bst = ctx->bst[o->bk];
  k->bk = o->bk;
  k->dev = o->dev;
  k->sig = *sig;
  k->timeout = sig->cancel ? o->timeout : 0;
  snprintf(k->name, sizeof(k->name), "%s", o->name ? o->name : "?");
  return k;
}

/* A sound entry for key, loaded: 1 and *out.  0 on a miss, which includes
** an entry the backend no longer takes (a new driver, say): the compile
** goes on and replaces it. */
static int cache_lookup(gj_ctx *ctx, gj_cache_stats *st,
                        const gj_compile_opts *o, const gj_cache_key *key,
                        const gj_sig *sig, gj_kernel **out)
{
  const gj_backend *be = gj_backends[o->bk];
  char *bin = NULL;
  size_t len = 0;
  int bad = 0, r;
  gj_err e;
  gj_kernel *k;
  if (!gj_cache_get(o->cache_dir, key, &bin, &len, &bad)) {
    st->misses++;
    st->rejected += bad != 0;
    return 0;
  }
  k = gj_pipeline_kernel_new(ctx, o, sig, &e);
  r = !k ? -1 : (be->cache_load ? be->cache_load : be->load)(
                    k->bst, o->dev, bin, len, sig, &k->prog, &e);
  free(bin);
  if (r) {
    free(k);
    st->misses++;
    st->rejected++;
    return 0;
  }
  st->hits++;
  *out = k;
  return 1;
}

/* cache_lookup again, once the entry's compile lock is held (another
** process may have written it meanwhile): the miss, and a bad entry, were
** counted by the first lookup; only a hit counts. */
static int cache_relookup(gj_ctx *ctx, gj_cache_stats *st,
                          const gj_compile_opts *o,
                          const gj_cache_key *key, const gj_sig *sig,
                          gj_kernel **out)
{
  gj_cache_stats again;
  int r;
  memset(&again, 0, sizeof(again));
  r = cache_lookup(ctx, &again, o, key, sig, out);
  st->hits += again.hits;
  return r;
}

/* Keep what the backend wants kept for k (else the emitted artifact).  A
** failure is counted, never fatal: the kernel is compiled and loaded. */
int gj_pipeline_cache_put(gj_cache_stats *st, const gj_compile_opts *o,
                          const gj_cache_key *key, gj_kernel *k,
                          const char *art, size_t artlen)
{
  char *bin = NULL;
  size_t len = 0;
  gj_err e;
  int ok;
  if (k->be->cache_save) {
    if (k->be->cache_save(k->bst, k->prog, &bin, &len, &e)) {
      st->write_errors++;
      return 0;
    }
    art = bin;
    artlen = len;
  }
  ok = gj_cache_put(o->cache_dir, key, art, artlen, &e) == 0;
  if (ok)
    st->writes++;
  else
    st->write_errors++;
  free(bin);
  return ok;
}

int gj_pipeline_cache_get(gj_ctx *ctx, gj_cache_stats *st,
                          const gj_compile_opts *o, const gj_cache_key *key,
                          const gj_sig *sig, gj_kernel **out, int *lockfd)
{
  *lockfd = -1;
  if (cache_lookup(ctx, st, o, key, sig, out)) return 1;
  *lockfd = gj_cache_lock(o->cache_dir, key);
  if (*lockfd < 0 || !cache_relookup(ctx, st, o, key, sig, out)) return 0;
  gj_cache_unlock(o->cache_dir, key, *lockfd);
  *lockfd = -1;
  return 1;
}
