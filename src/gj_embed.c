/*
** The embedding entry point luaopen_gpujit (gpujit.h): the whole module,
** the Lua API in lua/gpujit included, for a host that links the library.
**
** Invariant: the core a state uses is the copy of the library this function
** lives in.  The host's library is registered as package.preload
** ["gpujit.core"], so lua/gpujit/init.lua never loads a second copy from
** package.cpath (whose FFI entry points would not know this state's
** context).
*/
#include <lauxlib.h>
#include <lua.h>

#include "gpujit.h"

/* package.loaded.gpujit when it is there; else gpujit/init.lua (or
** gpujit.lua) from package.path, run as require would run it.  The file is
** found here rather than through require so that a host may also register
** luaopen_gpujit itself as package.preload.gpujit without a loop. */
GJ_API int luaopen_gpujit(lua_State *L)
{
  const char *file;
  lua_getglobal(L, "package");
  if (!lua_istable(L, -1))
    return luaL_error(L, "luaopen_gpujit: open the package library first "
                         "(luaL_openlibs)");
  lua_getfield(L, -1, "loaded");
  lua_getfield(L, -1, "gpujit");
  if (lua_istable(L, -1)) return 1;
  lua_pop(L, 2);
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_gpujit_core);
  lua_setfield(L, -2, "gpujit.core");
  lua_pop(L, 1);
  lua_getfield(L, -1, "searchpath");
  lua_pushliteral(L, "gpujit");
  lua_getfield(L, -3, "path");
  lua_call(L, 2, 2);
  file = lua_tostring(L, -2);
  if (!file)
    return luaL_error(L, "luaopen_gpujit: the Lua part of gpujit (gpujit/init.lua) "
                         "is not on package.path:%s", lua_tostring(L, -1));
  if (luaL_loadfile(L, file) != 0) return lua_error(L);
  lua_pushliteral(L, "gpujit");
  lua_call(L, 1, 1);
  if (!lua_istable(L, -1))
    return luaL_error(L, "luaopen_gpujit: %s did not return a table", file);
  lua_getfield(L, -4, "loaded");
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, "gpujit");
  lua_pop(L, 1);
  return 1;
}
