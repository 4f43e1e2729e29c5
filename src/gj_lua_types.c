/*
** The type vocabulary to Lua, read once when gpujit loads (a cold path;
** launches never call here):
**   core.types()        the type table gj_types (gj_type.h)
**   core.lnum_classes() the classes of whole Lua numbers (gj_type.h)
** lua/gpujit/types.lua builds its name, size, alignment, kind and spelling
** tables from core.types(); it keeps no copy of its own.
*/
#include <lauxlib.h>
#include <lua.h>

#include "gj_lua_types.h"
#include "gj_type.h"

static void set_flag(lua_State *L, const char *key, unsigned flags, unsigned f)
{
  lua_pushboolean(L, (flags & f) != 0);
  lua_setfield(L, -2, key);
}

/* core.types(): { { name =, size =, align =, bits =, bool =, int =,
** float =, signed =, int64 =, spellings = { ... } }, ... }, in gj_scalar
** order (so entry i is gj_types[i - 1]).  A fresh table on each call. */
static int core_types(lua_State *L)
{
  int i, j;
  lua_createtable(L, GJ_SCALAR__MAX, 0);
  for (i = 0; i < GJ_SCALAR__MAX; i++) {
    const gj_typeinfo *t = &gj_types[i];
    lua_createtable(L, 0, 10);
    lua_pushstring(L, t->name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, t->size);
    lua_setfield(L, -2, "size");
    lua_pushinteger(L, t->align);
    lua_setfield(L, -2, "align");
    lua_pushinteger(L, t->bits);
    lua_setfield(L, -2, "bits");
    set_flag(L, "bool", t->flags, GJ_TF_BOOL);
    set_flag(L, "int", t->flags, GJ_TF_INT);
    set_flag(L, "float", t->flags, GJ_TF_FLOAT);
    set_flag(L, "signed", t->flags, GJ_TF_SIGNED);
    set_flag(L, "int64", t->flags, GJ_TF_INT64);
    lua_newtable(L);
    for (j = 0; j < GJ_TYPE_NSPELL && t->spell[j]; j++) {
      lua_pushstring(L, t->spell[j]);
      lua_rawseti(L, -2, j + 1);
    }
    lua_setfield(L, -2, "spellings");
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* core.lnum_classes(): the classes of Lua numbers that hold whole values
** (gj_type.h), as { { name =, lo =, hi = }, ... } in gj_lnum order. */
static int core_lnum_classes(lua_State *L)
{
  int i;
  lua_createtable(L, GJ_LNUM__MAX - 1, 0);
  for (i = 1; i < GJ_LNUM__MAX; i++) {
    lua_createtable(L, 0, 3);
    lua_pushstring(L, gj_lnum_classes[i].name);
    lua_setfield(L, -2, "name");
    lua_pushnumber(L, gj_lnum_classes[i].lo);
    lua_setfield(L, -2, "lo");
    lua_pushnumber(L, gj_lnum_classes[i].hi);
    lua_setfield(L, -2, "hi");
    lua_rawseti(L, -2, i);
  }
  return 1;
}

void gj_lua_types_register(lua_State *L)
{
  lua_pushcfunction(L, core_types);
  lua_setfield(L, -2, "types");
  lua_pushcfunction(L, core_lnum_classes);
  lua_setfield(L, -2, "lnum_classes");
}
