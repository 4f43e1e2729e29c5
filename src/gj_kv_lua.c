/*
** Known values over a lua_State (gj_kv.h): what the typer learns about the
** upvalues, globals and table fields a kernel reaches, read with the Lua C
** API so that the typer needs none of it.
**
** The values live in one private table, anchored in the registry while the
** source is open: handle h is T[h] (the kernel function is T[1]), and a
** released handle is set to nil (the newest one is then given out again).  Every string handed out is the text of a
** Lua string kept as a key, T[s] = true, so it outlives the value it came
** from (a field that __index computed, a name copied out of a proto) until
** close; Lua strings never move, so their text pointers stay put.
*/
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "gj_bc_lua.h"
#include "gj_kv_lua.h"

typedef struct kvlua {
  gj_kvsrc src;      /* first: what the typer holds */
  lua_State *L;
  int ref;           /* registry: the table T */
  int n;             /* handles given out so far: 1 .. n */
  int ref_intr;      /* registry: intrinsic function -> its name */
  const gj_bcmap *map;
} kvlua;

static kvlua *of(gj_kvsrc *src)
{
  return (kvlua *)src;
}

/* Push T[h]. */
static void push(kvlua *k, int h)
{
  lua_rawgeti(k->L, LUA_REGISTRYINDEX, k->ref);
  lua_rawgeti(k->L, -1, h);
  lua_remove(k->L, -2);
}

/* Pop the value on the top into a new handle. */
static int put(kvlua *k)
{
  lua_State *L = k->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, k->ref);
  lua_insert(L, -2);
  lua_rawseti(L, -2, ++k->n);
  lua_pop(L, 1);
  return k->n;
}

/* The error message on the top (popped): the source's `failed` and `why`
** (gj_kv.h) when it is the first. */
static void fail(kvlua *k)
{
  lua_State *L = k->L;
  if (!k->src.failed) {
    const char *m = lua_tostring(L, -1);
    k->src.failed = 1;
    gj_err_set(&k->src.why, "%s", m ? m : "(error object is not a string)");
  }
  lua_pop(L, 1);
}

static int index_f(lua_State *L)
{
  lua_gettable(L, 1);
  return 1;
}

/* Replace the table on the top with table[key], metamethods included, as
** Lua indexes; an error raised there goes to fail() and gives nil (so does
** a value that is not a table: the typer indexes only tables and
** environments). */
static void index_top(kvlua *k, const char *key)
{
  lua_State *L = k->L;
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_pushnil(L);
    return;
  }
  lua_pushcfunction(L, index_f);
  lua_insert(L, -2);
  lua_pushstring(L, key);
  if (lua_pcall(L, 2, 1, 0) != 0) {
    fail(k);
    lua_pushnil(L);
  }
}

/* The text of the string at stack index idx, kept until close. */
static const char *keep(kvlua *k, int idx)
{
  lua_State *L = k->L;
  const char *s;
  lua_pushvalue(L, idx);
  s = lua_tostring(L, -1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, k->ref);
  lua_pushvalue(L, -2);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 2);
  return s;
}

static const char *kv_upvalue(gj_kvsrc *src, int fn, int n, int *h)
{
  kvlua *k = of(src);
  lua_State *L = k->L;
  const char *nm;
  push(k, fn);
  nm = lua_getupvalue(L, -1, n + 1);
  if (!nm) {
    lua_pop(L, 1);
    return NULL;
  }
  lua_pushstring(L, nm);
  nm = keep(k, -1);
  lua_pop(L, 1);
  if (h) *h = put(k);
  else lua_pop(L, 1);
  lua_pop(L, 1);
  return nm;
}

static const char *intr_name(kvlua *k);

/* Replace the function on the top with the one core.intrinsic registered
** as `name`, when there is one. */
static void to_intrinsic(kvlua *k, const char *name)
{
  lua_State *L = k->L;
  lua_rawgeti(L, LUA_REGISTRYINDEX, k->ref_intr);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), name) == 0) {
      lua_pop(L, 1);
      lua_replace(L, -3);   /* the key, the function, over the top */
      lua_pop(L, 1);        /* the table */
      return;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

static int kv_global(gj_kvsrc *src, int fn, const char *name)
{
  kvlua *k = of(src);
  lua_State *L = k->L;
  push(k, fn);
  lua_getfenv(L, -1);
  lua_remove(L, -2);
  index_top(k, name);
  /* a kernel's global print is the print intrinsic whatever function the
  ** host put there (a logger): its lines go to the global print of the
  ** launch (gpujit.printer) */
  if (strcmp(name, "print") == 0 && lua_isfunction(L, -1) && !intr_name(k))
    to_intrinsic(k, name);
  return put(k);
}

static int kv_stdlib(gj_kvsrc *src, const char *lib, const char *key)
{
  kvlua *k = of(src);
  lua_State *L = k->L;
  lua_pushvalue(L, LUA_GLOBALSINDEX);
  index_top(k, lib);
  if (lua_istable(L, -1))
    index_top(k, key);
  else {
    lua_pop(L, 1);
    lua_pushnil(L);
  }
  return put(k);
}

static int kv_field(gj_kvsrc *src, int t, const char *key, int idx)
{
  kvlua *k = of(src);
  push(k, t);
  if (key) {
    index_top(k, key);
  } else {
    lua_rawgeti(k->L, -1, idx);
    lua_remove(k->L, -2);
  }
  return put(k);
}

/* The name under which core.intrinsic registered the function on the top,
** or NULL. */
static const char *intr_name(kvlua *k)
{
  lua_State *L = k->L;
  const char *r = NULL;
  lua_rawgeti(L, LUA_REGISTRYINDEX, k->ref_intr);
  lua_pushvalue(L, -2);
  lua_rawget(L, -2);
  if (lua_isstring(L, -1)) r = keep(k, -1);
  lua_pop(L, 2);
  return r;
}

/* Push function gpujit.types[name] of the Lua face (when that module is
** loaded) and return 1, or push nothing and return 0. */
static int push_types_fn(lua_State *L, const char *name)
{
  int top = lua_gettop(L);
  lua_getglobal(L, "package");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "loaded");
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "gpujit.types");
      if (lua_istable(L, -1)) {
        lua_getfield(L, -1, name);
        if (lua_isfunction(L, -1)) {
          lua_replace(L, top + 1);
          lua_settop(L, top + 1);
          return 1;
        }
      }
    }
  }
  lua_settop(L, top);
  return 0;
}

/* The layout text of the struct ctype below the top (the tostring result
** is on the top), from the Lua face's type table (gpujit.types.struct), or
** NULL. */
static const char *struct_layout(kvlua *k)
{
  lua_State *L = k->L;
  const char *r = NULL;
  if (!push_types_fn(L, "struct")) return NULL;
  lua_pushvalue(L, -3);   /* the ctype */
  if (lua_pcall(L, 1, 1, 0) == 0 && lua_istable(L, -1)) {
    lua_getfield(L, -1, "spec");
    if (lua_isstring(L, -1)) r = keep(k, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);   /* the result or the error message */
  return r;
}

/* The cdata on the top: an FFI ctype (tostring gives "ctype<NAME>") or
** another cdata. */
static void classify_cdata(kvlua *k, gj_kvinfo *info)
{
  lua_State *L = k->L;
  const char *s;
  size_t len;
  lua_getglobal(L, "tostring");
  lua_pushvalue(L, -2);
  if (lua_pcall(L, 1, 1, 0) != 0) {
    /* a metatype's __tostring raised an error: not a ctype (theirs never
    ** fails), and not the program's error (it never calls tostring) */
    lua_pop(L, 1);
    return;
  }
  s = lua_tolstring(L, -1, &len);
  if (s && len > 7 && strncmp(s, "ctype<", 6) == 0 && s[len - 1] == '>') {
    lua_pushlstring(L, s + 6, len - 7);
    info->cls = GJ_KVC_CTYPE;
    info->str = keep(k, -1);
    lua_pop(L, 1);
    info->layout = struct_layout(k);
  }
  lua_pop(L, 1);
}

/* Is the Lua function on the top one of LuaJIT's library functions that
** the VM builds from bytecode (string.len, table.remove, math.deg: no line
** of their own, source "builtin:NAME")? */
static int builtin(lua_State *L)
{
  lua_Debug ar;
  lua_pushvalue(L, -1);
  return lua_getinfo(L, ">S", &ar) && ar.linedefined < 0;
}

/* FFI arrays of numbers and FFI struct values become Lua tables of their
** values (the Lua face's types.const_data) in place of the cdata; the
** copies of arrays (the array's, or a struct's array fields) are marked in
** a registry set of such copies (weak keys; the value 1, or for arrays of
** int64_t 2 and of uint64_t 3, whose elements are decimal texts), so that
** a later classify still knows them as indexed from 0.  T[cdata] keeps
** the copy until close, so that every reach of one cdata while compiling
** gives the one copy (the same known value). */
#define GJ_KV_BASE0 "gpujit.kv.base0"

/* The mark of the table on the top (0: none). */
static int base0_mark(lua_State *L)
{
  int r;
  lua_getfield(L, LUA_REGISTRYINDEX, GJ_KV_BASE0);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  lua_pushvalue(L, -2);
  lua_rawget(L, -2);
  r = (int)lua_tointeger(L, -1);
  lua_pop(L, 2);
  return r;
}

/* Mark every table of the list below the top: 1, or 2 or 3 where the
** table on the top (its element types) gives it "int64_t" or "uint64_t";
** both are popped. */
static void mark_base0(lua_State *L)
{
  int j;
  lua_getfield(L, LUA_REGISTRYINDEX, GJ_KV_BASE0);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_newtable(L);
    lua_pushstring(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, GJ_KV_BASE0);
  }
  for (j = 1;; j++) {   /* list, types, set */
    const char *e = NULL;
    lua_rawgeti(L, -3, j);
    if (!lua_istable(L, -1)) {
      lua_pop(L, 1);
      break;
    }
    if (lua_istable(L, -3)) {
      lua_pushvalue(L, -1);
      lua_rawget(L, -4);
      e = lua_tostring(L, -1);
      lua_pop(L, 1);   /* the text stays a key's value in types */
    }
    lua_pushinteger(L, !e ? 1 : strcmp(e, "uint64_t") == 0 ? 3 : 2);
    lua_rawset(L, -3);
  }
  lua_pop(L, 3);
}

/* The cdata on the top, of handle h: when it is an FFI array of numbers or
** a struct value, replace it (on the stack and as T[h]) by its copy and
** return 1. */
static int array_copy(kvlua *k, int h)
{
  lua_State *L = k->L;
  int top = lua_gettop(L);
  /* the copy this source made of it already: one value, one known value */
  lua_rawgeti(L, LUA_REGISTRYINDEX, k->ref);
  lua_pushvalue(L, -2);
  lua_rawget(L, -2);
  if (lua_istable(L, -1)) {
    lua_remove(L, -2);
    goto found;
  }
  lua_pop(L, 2);
  if (!push_types_fn(L, "const_data")) return 0;
  lua_pushvalue(L, -2);
  if (lua_pcall(L, 1, 3, 0) != 0 || !lua_istable(L, -3)) {
    lua_settop(L, top);   /* the error, or no copy */
    return 0;
  }
  if (lua_istable(L, -2)) mark_base0(L);
  else lua_pop(L, 2);
  lua_rawgeti(L, LUA_REGISTRYINDEX, k->ref);   /* T[cdata] = the copy */
  lua_pushvalue(L, -3);
  lua_pushvalue(L, -3);
  lua_rawset(L, -3);
  lua_pop(L, 1);
found:
  lua_rawgeti(L, LUA_REGISTRYINDEX, k->ref);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, h);
  lua_pop(L, 1);
  lua_replace(L, -2);   /* the copy in place of the cdata */
  return 1;
}

/* The base0 and i64 of a table's gj_kvinfo from the mark of the table on
** the top. */
static void table_info(lua_State *L, gj_kvinfo *info)
{
  int m = base0_mark(L);
  info->cls = GJ_KVC_TABLE;
  info->base0 = m != 0;
  info->i64 = m >= 2 ? m - 1 : 0;
}

static void kv_classify(gj_kvsrc *src, int h, gj_kvinfo *info)
{
  kvlua *k = of(src);
  lua_State *L = k->L;
  memset(info, 0, sizeof(*info));
  push(k, h);
  switch (lua_type(L, -1)) {
  case LUA_TNIL: info->cls = GJ_KVC_NIL; break;
  case LUA_TNUMBER:
    info->cls = GJ_KVC_NUMBER;
    info->num = lua_tonumber(L, -1);
    break;
  case LUA_TBOOLEAN:
    info->cls = GJ_KVC_BOOLEAN;
    info->num = lua_toboolean(L, -1);
    break;
  case LUA_TSTRING:
    info->cls = GJ_KVC_STRING;
    info->str = keep(k, -1);
    break;
  case LUA_TTABLE:
    table_info(L, info);
    break;
  case LUA_TFUNCTION:
    info->cls = GJ_KVC_FUNCTION;
    info->intr = intr_name(k);
    info->cfunc = lua_iscfunction(L, -1);
    info->builtin = !info->cfunc && builtin(L);
    break;
  default:
    if (strcmp(luaL_typename(L, -1), "cdata") == 0) classify_cdata(k, info);
    if (info->cls != GJ_KVC_CTYPE && strcmp(luaL_typename(L, -1), "cdata") == 0 &&
        array_copy(k, h)) {
      table_info(L, info);
      break;
    }
    if (info->cls != GJ_KVC_CTYPE) {
      info->cls = GJ_KVC_OTHER;
      info->str = luaL_typename(L, -1);   /* a static string */
    }
    break;
  }
  lua_pop(L, 1);
}

/* gpujit.types.metamethod (lua/gpujit/types.lua): it finds the metamethod
** by doing the operation under a call hook, since LuaJIT gives Lua no way
** to read a metatype's metatable. */
static int kv_meta(gj_kvsrc *src, const char *sname, const char *mm,
                   const char *key, int *isfn)
{
  kvlua *k = of(src);
  lua_State *L = k->L;
  *isfn = 0;
  if (!push_types_fn(L, "metamethod")) {
    lua_pushnil(L);
    return put(k);
  }
  lua_pushstring(L, sname);
  lua_pushstring(L, mm);
  if (key) lua_pushstring(L, key);
  else lua_pushnil(L);
  if (lua_pcall(L, 3, 2, 0) != 0) {
    fail(k);
    lua_pushnil(L);
    return put(k);
  }
  *isfn = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return put(k);   /* the metamethod, or nil */
}

static int kv_same(gj_kvsrc *src, int a, int b)
{
  kvlua *k = of(src);
  int same;
  push(k, a);
  push(k, b);
  same = lua_rawequal(k->L, -1, -2);
  lua_pop(k->L, 2);
  return same;
}

/* The typer releases most handles right after it classified them, so the
** newest handle is given out again and T stays as small as the values kept. */
static void kv_release(gj_kvsrc *src, int h)
{
  kvlua *k = of(src);
  lua_rawgeti(k->L, LUA_REGISTRYINDEX, k->ref);
  lua_pushnil(k->L);
  lua_rawseti(k->L, -2, h);
  lua_pop(k->L, 1);
  if (h == k->n && h > 1) k->n--;
}

static int kv_read(gj_kvsrc *src, int fn, gj_proto *p, gj_err *err)
{
  kvlua *k = of(src);
  int rc;
  push(k, fn);
  rc = gj_bc_lua_read(k->L, -1, k->map, p, err);
  lua_pop(k->L, 1);
  return rc;
}

static void kv_unread(gj_kvsrc *src, gj_proto *p)
{
  (void)src;
  gj_bc_free(p);
}

static void kv_close(gj_kvsrc *src)
{
  kvlua *k = of(src);
  luaL_unref(k->L, LUA_REGISTRYINDEX, k->ref);
  free(k);
}

static const gj_kvops kv_lua_ops = {
  .upvalue = kv_upvalue,
  .global = kv_global,
  .stdlib = kv_stdlib,
  .field = kv_field,
  .classify = kv_classify,
  .same = kv_same,
  .meta = kv_meta,
  .release = kv_release,
  .read = kv_read,
  .unread = kv_unread,
  .close = kv_close,
};

gj_kvsrc *gj_kv_lua_open(lua_State *L, int fidx, int ref_intr,
                         const gj_bcmap *map)
{
  kvlua *k = calloc(1, sizeof(*k));
  if (!k) return NULL;
  if (fidx < 0 && fidx > LUA_REGISTRYINDEX) fidx = lua_gettop(L) + fidx + 1;
  k->src.ops = &kv_lua_ops;
  k->L = L;
  k->ref_intr = ref_intr;
  k->map = map;
  lua_newtable(L);
  lua_pushvalue(L, fidx);
  lua_rawseti(L, -2, 1);
  k->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  k->n = 1;
  k->src.kernel = 1;
  return &k->src;
}
