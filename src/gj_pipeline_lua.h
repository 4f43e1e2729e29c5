/*
** The pipeline for a kernel given as a Lua function: what the binding
** prepares from the Lua stack before gj_pipeline.c runs (gj_pipeline.h).
*/
#ifndef GJ_PIPELINE_LUA_H
#define GJ_PIPELINE_LUA_H

#include <lua.h>

#include "gj_pipeline.h"

/* Compile the Lua function at stack index fidx with o, its source, line
** and plugins (o's are not read) taken from the stack: where the function
** was defined (lua_getinfo), and the plugin descriptors of the list at
** stack index plist (0: none; lua/gpujit/plugins.lua).  ref_intr: the
** registry reference of the table of gpujit's intrinsic functions
** (gj_kv_lua_open).  0, or -1 with err set. */
int gj_pipeline_lua_compile(gj_ctx *ctx, int ref_intr, lua_State *L,
                            int fidx, int plist, const gj_compile_opts *o,
                            gj_compile_out *out, gj_err *err);

/* Start compiling the function at fidx in the background (gj_bg.h), as
** gj_pipeline_lua_compile reads it; slot as gj_bg_start's.  A compile that
** names plugins is refused (their hooks are Lua's, or may call it).  The
** compile, or NULL with err set (the refusal, memory, the thread). */
struct gj_bgc *gj_pipeline_lua_start(gj_ctx *ctx, int ref_intr, lua_State *L,
                                     int fidx, int plist,
                                     const gj_compile_opts *o,
                                     struct gj_bgc **slot, gj_err *err);

/* gj_pipeline_job for the function at fidx, as gj_pipeline_lua_compile. */
int gj_pipeline_lua_job(gj_ctx *ctx, lua_State *L, int fidx, int plist,
                        const gj_compile_opts *o, gj_job *job, gj_err *err);

#endif
