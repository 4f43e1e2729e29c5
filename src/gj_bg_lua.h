/*
** The Lua side of compiles in the background (gj_bg.h): the handle that
** core.compile_start returns, and core.compile_done, compile_finish and
** compile_pending on it (lua/gpujit/bgcompile.lua wraps them).
*/
#ifndef GJ_BG_LUA_H
#define GJ_BG_LUA_H

#include <lua.h>

#include "gj_pipeline.h"

/* core.compile_start's work, with (fn, types, opts) at 1..3 read into o
** and the plugins' list at plist (0: none): pushes the handle, or raises
** the error of a compile that cannot start (plugins, memory).  Returns 1. */
int gj_bg_lua_start(lua_State *L, gj_ctx *ctx, int ref_intr, int plist,
                    const gj_compile_opts *o);

/* Add compile_done, compile_finish and compile_pending to the table at the
** top of the stack (the module) for context ctx, and make the handles'
** metatable. */
void gj_bg_lua_register(lua_State *L, gj_ctx *ctx);

/* Push what core.compile returns for out, whose kernel the new kernel
** object owns from here (gj_lua.c). */
void gj_lua_push_compiled(lua_State *L, const gj_compile_out *out);

#endif
