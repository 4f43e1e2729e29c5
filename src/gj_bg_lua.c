/*
** The Lua side of compiles in the background (gj_bg_lua.h).  A handle is
** a userdata holding one gj_bgc; gj_bg_close (closing the state) sets the
** pointer to NULL through the slot it was given, so a handle that outlives
** its context, or is collected after it, touches nothing freed.
*/
#include <lauxlib.h>
#include <lua.h>

#include "gj_bg.h"
#include "gj_bg_lua.h"
#include "gj_pipeline_lua.h"

#define BG_MT "gpujit.bgcompile"

typedef struct bghandle {
  gj_bgc *b;            /* NULL once the context closed */
  gj_ctx *ctx;
} bghandle;

static bghandle *handle_of(lua_State *L)
{
  bghandle *h = (bghandle *)luaL_checkudata(L, 1, BG_MT);
  if (!h->b) luaL_error(L, "gpujit: the context of this compile is closed");
  return h;
}

int gj_bg_lua_start(lua_State *L, gj_ctx *ctx, int ref_intr, int plist,
                    const gj_compile_opts *o)
{
  gj_err err;
  bghandle *h = (bghandle *)lua_newuserdata(L, sizeof(bghandle));
  int hidx = lua_gettop(L);
  h->b = NULL;
  h->ctx = ctx;
  luaL_getmetatable(L, BG_MT);
  lua_setmetatable(L, -2);
  h->b = gj_pipeline_lua_start(ctx, ref_intr, L, 1, plist, o, &h->b, &err);
  if (!h->b) {
    lua_pushstring(L, err.msg);
    return lua_error(L);
  }
  lua_pushvalue(L, hidx);
  return 1;
}

/* core.compile_done(h): true once the compile has finished, either way. */
static int core_compile_done(lua_State *L)
{
  bghandle *h = handle_of(L);
  gj_bg_reap(h->ctx);
  lua_pushboolean(L, gj_bg_done(h->b));
  return 1;
}

/* core.compile_finish(h): waits; what core.compile returns, or raises the
** compile's error. */
static int core_compile_finish(lua_State *L)
{
  bghandle *h = handle_of(L);
  gj_compile_out out;
  gj_err err;
  if (gj_bg_wait(h->b, &out, &err)) {
    lua_pushstring(L, err.msg);
    return lua_error(L);
  }
  gj_lua_push_compiled(L, &out);
  return 1;
}

/* core.compile_pending(): compiles queued or running in the background
** (the context is the closure's upvalue). */
static int core_compile_pending(lua_State *L)
{
  gj_ctx *ctx = (gj_ctx *)lua_touserdata(L, lua_upvalueindex(1));
  lua_pushinteger(L, gj_bg_pending(ctx));   /* closed: ctx->bg is NULL */
  return 1;
}

static int handle_gc(lua_State *L)
{
  bghandle *h = (bghandle *)luaL_checkudata(L, 1, BG_MT);
  if (h->b) gj_bg_release(h->b);
  h->b = NULL;
  return 0;
}

void gj_bg_lua_register(lua_State *L, gj_ctx *ctx)
{
  if (luaL_newmetatable(L, BG_MT)) {
    lua_pushcfunction(L, handle_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, core_compile_done);
  lua_setfield(L, -2, "compile_done");
  lua_pushcfunction(L, core_compile_finish);
  lua_setfield(L, -2, "compile_finish");
  lua_pushlightuserdata(L, ctx);
  lua_pushcclosure(L, core_compile_pending, 1);
  lua_setfield(L, -2, "compile_pending");
}
