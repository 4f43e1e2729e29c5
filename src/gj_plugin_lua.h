/*
** Plugins of one compile read from Lua (gj_plugin.h): the descriptors
** core.compile's opts.plugins gives (lua/gpujit/plugins.lua), C plugins
** by their handle and Lua plugins, whose hooks are the functions in their
** descriptor tables, run through gj_plugops.
*/
#ifndef GJ_PLUGIN_LUA_H
#define GJ_PLUGIN_LUA_H

#include <lua.h>

#include "gj_plugin.h"

/* What the Lua plugins of a set refer to: the caller's storage, which
** must outlive the set's use. */
typedef struct gj_plugset_lua {
  lua_State *L;
  int list;              /* stack index of the descriptors' list */
} gj_plugset_lua;

/* Read the list of plugin descriptors at stack index list (absolute; 0:
** none) into ps.  The list stays on the stack while ps is used: names,
** identities and hooks are its.  0, or -1 with err set. */
int gj_plugset_lua_read(gj_plugset *ps, gj_plugset_lua *pl, lua_State *L,
                        int list, gj_err *err);

#endif
