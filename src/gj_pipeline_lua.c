/*
** The pipeline for a Lua function (gj_pipeline_lua.h): the binding's side
** of a compile.  It reads from the Lua stack what the core takes already
** read (where the function was defined, the plugins that apply) and opens
** the function as a known-values source (gj_kv_lua.c).
*/
#include <stdio.h>
#include <string.h>

#include <lua.h>

#include "gj_bg.h"
#include "gj_kv_lua.h"
#include "gj_plugin_lua.h"
#include "gj_pipeline_lua.h"

/* Where the function at fidx was defined: o->source (in src) and o->line. */
static void where(lua_State *L, int fidx, gj_compile_opts *o, char *src,
                  size_t nsrc)
{
  lua_Debug ar;
  src[0] = '\0';
  o->line = 0;
  lua_pushvalue(L, fidx);
  if (lua_getinfo(L, ">S", &ar)) {
    snprintf(src, nsrc, "%s", ar.short_src);
    o->line = ar.linedefined;
  }
  o->source = src;
}

int gj_pipeline_lua_compile(gj_ctx *ctx, int ref_intr, lua_State *L,
                            int fidx, int plist, const gj_compile_opts *o,
                            gj_compile_out *out, gj_err *err)
{
  gj_compile_opts lo = *o;
  gj_plugset ps;
  gj_plugset_lua pl;
  char src[256];
  where(L, fidx, &lo, src, sizeof(src));
  if (gj_plugset_lua_read(&ps, &pl, L, plist, err)) {
    memset(out, 0, sizeof(*out));
    return -1;
  }
  lo.plugins = &ps;
  return gj_pipeline_compile(
      ctx, gj_kv_lua_open(L, fidx, ref_intr, &ctx->bcmap), &lo, out, err);
}

gj_bgc *gj_pipeline_lua_start(gj_ctx *ctx, int ref_intr, lua_State *L,
                              int fidx, int plist, const gj_compile_opts *o,
                              gj_bgc **slot, gj_err *err)
{
  gj_compile_opts lo = *o;
  gj_plugset ps;
  gj_plugset_lua pl;
  char src[256];
  where(L, fidx, &lo, src, sizeof(src));
  if (gj_plugset_lua_read(&ps, &pl, L, plist, err)) return NULL;
  if (ps.n > 0) {
    gj_err_set(err, "kernel %s: a compile in the background takes no "
               "plugins (plugin '%s' applies): compile it without async",
               o->name ? o->name : "?", ps.p[0].name ? ps.p[0].name : "?");
    return NULL;
  }
  lo.plugins = NULL;
  return gj_bg_start(ctx, gj_kv_lua_open(L, fidx, ref_intr, &ctx->bcmap),
                     &lo, slot, err);
}

int gj_pipeline_lua_job(gj_ctx *ctx, lua_State *L, int fidx, int plist,
                        const gj_compile_opts *o, gj_job *job, gj_err *err)
{
  gj_compile_opts lo = *o;
  gj_plugset ps;
  gj_plugset_lua pl;
  char src[256];
  where(L, fidx, &lo, src, sizeof(src));
  if (gj_plugset_lua_read(&ps, &pl, L, plist, err)) return -1;
  lo.plugins = &ps;
  return gj_pipeline_job(ctx, &lo, job, err);
}
