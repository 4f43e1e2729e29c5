/*
** The type vocabulary to Lua: core.types() and core.lnum_classes().
*/
#ifndef GJ_LUA_TYPES_H
#define GJ_LUA_TYPES_H

#include <lua.h>

/* Set types and lnum_classes in the module table at the top of the stack. */
void gj_lua_types_register(lua_State *L);

#endif
