/*
** Reading a Lua function's bytecode through jit.util: the binding's side
** of the frontend (gj_bc.h decodes what this reads).
*/
#ifndef GJ_BC_LUA_H
#define GJ_BC_LUA_H

#include <lua.h>

#include "gj_bc.h"

/* The opcode map of the running LuaJIT: needs jit.util, reads jit.vmdef
** when present.  Leaves the stack as is.  0, or -1 with err set. */
int gj_bc_lua_mapinit(lua_State *L, gj_bcmap *map, gj_err *err);

/* Read the function at stack index idx and decode it into p
** (gj_bc_decode's contract; a C function or another value: "a kernel must
** be a Lua function").  Free p's contents with gj_bc_free. */
int gj_bc_lua_read(lua_State *L, int idx, const gj_bcmap *map, gj_proto *p,
                   gj_err *err);

#endif
