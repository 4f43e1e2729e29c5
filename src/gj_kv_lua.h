/*
** Known values over a lua_State: the frontend's side of gj_kv.h, for a
** kernel given as a Lua function.
*/
#ifndef GJ_KV_LUA_H
#define GJ_KV_LUA_H

#include <lua.h>

#include "gj_bc.h"
#include "gj_kv.h"

/* A source whose kernel is the function at stack index fidx.  ref_intr:
** the registry reference of the table that maps gpujit's intrinsic
** functions to their names (core.intrinsic); map: the opcode map it reads
** bytecode with, which must outlive it.  Leaves the stack as it is.
** NULL when memory runs out. */
gj_kvsrc *gj_kv_lua_open(lua_State *L, int fidx, int ref_intr,
                         const gj_bcmap *map);

#endif
