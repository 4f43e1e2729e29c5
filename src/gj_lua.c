/*
** The Lua binding: the module `gpujit.core` and the per-state context's
** Lua object.
**
** The compile path (core.compile, core.inspect) uses the Lua C API; the
** launch path (gj_launch, gj_mem_*, in gj_ctx.c) does not: lua/gpujit
** calls it through the FFI with the context and kernel pointers handed out
** here.
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  /* dladdr */
#endif
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "gj_ad.h"
#include "gj_bc_lua.h"
#include "gj_bg.h"
#include "gj_bg_lua.h"
#include "gj_ctx.h"
#include "gj_intr.h"
#include "gj_job_lua.h"
#include "gj_lua_types.h"
#include "gj_pipeline_lua.h"
#include "gj_plugin.h"
#include "gj_stream.h"
#include "gpujit.h"

#define CTX_MT "gpujit.ctx"
#define KERNEL_MT "gpujit.kernel"
#define PLUGIN_MT "gpujit.plugin"

/* Kernel objects: a userdata owning one loaded gj_kernel.  The context
** keeps a list so that closing the state unloads every kernel before the
** backends go away, whatever order the finalizers run in. */
typedef struct kobj {
  gj_kernel *k;
  struct kobj *next, *prev;
} kobj;

typedef struct ctxobj {
  gj_ctx ctx;          /* the core's */
  int ref_intr;        /* registry: table Lua function -> intrinsic name */
  kobj head;
  int closed;
} ctxobj;

static ctxobj *ctx_of(lua_State *L)
{
  ctxobj *c;
  lua_getfield(L, LUA_REGISTRYINDEX, CTX_MT ".instance");
  c = (ctxobj *)lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (!c || c->closed) luaL_error(L, "gpujit: the context is closed");
  return c;
}

/* --- Lua functions ----------------------------------------------------- */

static int core_intrinsic(lua_State *L)
{
  ctxobj *c = ctx_of(L);
  const char *name;
  luaL_checktype(L, 1, LUA_TFUNCTION);
  name = luaL_checkstring(L, 2);
  if (gj_intr_lookup(name) < 0) return luaL_error(L, "no intrinsic '%s'", name);
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref_intr);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_rawset(L, -3);
  return 0;
}

/* core.backends([bk]): every backend's entry in gj_backends' order, each
** opened to say whether it is available; with bk (0-based), that one
** only, as the list's one entry.  core.backend_names(): the names alone,
** opening none (the Lua face opens a backend when it is first asked for:
** opening opencl loads its ICD and driver, PoCL's maps LLVM). */
static int core_backend_names(lua_State *L)
{
  int i;
  lua_createtable(L, gj_nbackends, 0);
  for (i = 0; i < gj_nbackends; i++) {
    lua_pushstring(L, gj_backends[i]->name);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int core_backends(lua_State *L)
{
  ctxobj *c = ctx_of(L);
  int i, lo = 0, hi = gj_nbackends;
  if (!lua_isnoneornil(L, 1)) {
    lo = (int)luaL_checkinteger(L, 1);
    luaL_argcheck(L, lo >= 0 && lo < gj_nbackends, 1, "no such backend");
    hi = lo + 1;
  }
  lua_createtable(L, hi - lo, 0);
  for (i = lo; i < hi; i++) {
    gj_err e;
    int ok = gj_ctx_backend(&c->ctx, i, &e) == 0;
    /* Open without a device: it compiles (inspect), it does not launch. */
    int offline = ok && gj_backends[i]->ndevices(c->ctx.bst[i]) == 0;
    if (offline) e = c->ctx.berr[i];
    lua_createtable(L, 0, 5);
    lua_pushstring(L, gj_backends[i]->name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, i);
    lua_setfield(L, -2, "index");
    lua_pushboolean(L, ok && !offline);
    lua_setfield(L, -2, "available");
    if (offline) {
      lua_pushboolean(L, 1);
      lua_setfield(L, -2, "offline");
    }
    if (!ok || offline) {
      lua_pushstring(L, e.msg);
      lua_setfield(L, -2, "error");
    }
    lua_rawseti(L, -2, i - lo + 1);
  }
  return 1;
}

/* core.devices([bk]): the devices of every backend that opens (of backend
** bk only, 0-based, when given), in order. */
static int core_devices(lua_State *L)
{
  ctxobj *c = ctx_of(L);
  int i, n = 0, lo = 0, hi = gj_nbackends;
  if (!lua_isnoneornil(L, 1)) {
    lo = (int)luaL_checkinteger(L, 1);
    luaL_argcheck(L, lo >= 0 && lo < gj_nbackends, 1, "no such backend");
    hi = lo + 1;
  }
  lua_newtable(L);
  for (i = lo; i < hi; i++) {
    gj_err e;
    int d, nd;
    if (gj_ctx_backend(&c->ctx, i, &e)) continue;
    nd = gj_backends[i]->ndevices(c->ctx.bst[i]);
    for (d = 0; d < nd; d++) {
      gj_device_info di;
      memset(&di, 0, sizeof(di));
      if (gj_backends[i]->device_info(c->ctx.bst[i], d, &di)) continue;
      lua_createtable(L, 0, 10);
      lua_pushstring(L, gj_backends[i]->name);
      lua_setfield(L, -2, "backend");
      lua_pushinteger(L, i);
      lua_setfield(L, -2, "bk");
      lua_pushinteger(L, d);
      lua_setfield(L, -2, "index");
      lua_pushstring(L, di.name);
      lua_setfield(L, -2, "name");
      lua_pushstring(L, di.vendor);
      lua_setfield(L, -2, "vendor");
      lua_pushstring(L, di.type);
      lua_setfield(L, -2, "type");
      lua_pushnumber(L, (lua_Number)di.memory);
      lua_setfield(L, -2, "memory");
      lua_pushinteger(L, di.compute_units);
      lua_setfield(L, -2, "compute_units");
      lua_pushnumber(L, (lua_Number)di.max_group);
      lua_setfield(L, -2, "max_group");
      lua_createtable(L, 3, 0);
      for (int k = 0; k < 3; k++) {
        lua_pushnumber(L, (lua_Number)di.max_group_dim[k]);
        lua_rawseti(L, -2, k + 1);
      }
      lua_setfield(L, -2, "max_group_dim");
      if (gj_backends[i]->host_shares &&
          gj_backends[i]->host_shares(c->ctx.bst[i], d)) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "host_register");
      }
      if (di.arch[0]) {
        lua_pushstring(L, di.arch);
        lua_setfield(L, -2, "arch");
      }
      lua_pushboolean(L, di.host_math);
      lua_setfield(L, -2, "host_math");
      lua_pushboolean(L, di.host_shared);
      lua_setfield(L, -2, "host_shared");
      lua_pushinteger(L, di.rank);
      lua_setfield(L, -2, "rank");
      lua_pushinteger(L, (lua_Integer)di.parallel_items);
      lua_setfield(L, -2, "parallel_items");
      if (di.format[0]) {
        lua_pushstring(L, di.format);
        lua_setfield(L, -2, "format");
      }
      lua_rawseti(L, -2, ++n);
    }
  }
  return 1;
}

/* Read (fn, types, opts) at 1..3 into o.  Returns the stack index of
** opts.plugins, the plugins' descriptors, left there for the compile (0:
** none). */
static int read_compile_args(lua_State *L, gj_compile_opts *o)
{
  int j;
  memset(o, 0, sizeof(*o));
  luaL_checktype(L, 1, LUA_TFUNCTION);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  o->nparams = (int)lua_objlen(L, 2);
  if (o->nparams > GJ_MAXPARAMS)
    luaL_error(L, "a kernel takes at most %d arguments", GJ_MAXPARAMS);
  for (j = 0; j < o->nparams; j++) {
    lua_rawgeti(L, 2, j + 1);
    o->types[j] = lua_tostring(L, -1);
    lua_pop(L, 1);   /* the string stays alive in the table */
    if (!o->types[j]) luaL_error(L, "type %d is not a string", j + 1);
  }
  lua_getfield(L, 3, "bk");
  o->bk = (int)lua_tointeger(L, -1);
  lua_getfield(L, 3, "device");
  o->dev = (int)lua_tointeger(L, -1);
  lua_getfield(L, 3, "name");
  o->name = lua_isstring(L, -1) ? lua_tostring(L, -1) : "?";
  lua_getfield(L, 3, "precision");
  o->single = lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "single") == 0;
  o->lua = lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "lua") == 0;
  lua_getfield(L, 3, "fastmath");
  o->fastmath = lua_toboolean(L, -1);
  lua_getfield(L, 3, "vectorize");
  o->vectorize = lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, 3, "cache_dir");
  o->cache_dir = lua_isstring(L, -1) ? lua_tostring(L, -1) : NULL;
  lua_getfield(L, 3, "boundscheck");
  o->boundscheck = lua_toboolean(L, -1);
  /* boundscheck: "01..", per argument whether it is a 1-based Lua table */
  lua_getfield(L, 3, "one_based");
  if (lua_isstring(L, -1)) {
    const char *b = lua_tostring(L, -1);
    for (j = 0; j < GJ_MAXPARAMS && b[j]; j++)
      if (b[j] == '1') o->one_based |= 1ull << j;
  }
  lua_getfield(L, 3, "timeout");
  o->timeout = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : 0;
  if (!(o->timeout > 0 && o->timeout < 1e9)) o->timeout = 0;  /* Lua checked */
  lua_pop(L, 1);
  lua_getfield(L, 3, "print_buffer");
  {
    lua_Number b = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : 0;
    o->print_cap = b >= 1 && b <= GJ_PRINT_MAX_CAP ? (uint32_t)b : 0;  /* Lua checked */
  }
  lua_pop(L, 1);
  lua_getfield(L, 3, "derivative");   /* gj_ad.h */
  o->derivative = gj_ad_mode(lua_tostring(L, -1));
  if (o->derivative < 0)
    luaL_error(L, "derivative must be \"forward\" or \"reverse\"");
  lua_getfield(L, 3, "shadows");
  if (o->derivative && lua_isstring(L, -1))
    snprintf(o->shadow, sizeof(o->shadow), "%s", lua_tostring(L, -1));
  lua_pop(L, 2);
  lua_getfield(L, 3, "argnames");
  for (j = 0; j < o->nparams && lua_istable(L, -1); j++) {
    lua_rawgeti(L, -1, j + 1);
    o->argnames[j] = lua_tostring(L, -1);   /* referenced by the table */
    lua_pop(L, 1);
  }
  lua_pop(L, 8);   /* the strings stay referenced by the opts table */
  /* left on the stack for the compile: the plugins' descriptors */
  lua_getfield(L, 3, "plugins");
  return lua_istable(L, -1) ? lua_gettop(L) : 0;
}

static void push_sig(lua_State *L, const gj_sig *sig)
{
  int j;
  lua_pushinteger(L, (lua_Integer)sig->argsize);
  lua_setfield(L, -2, "argsize");
  lua_createtable(L, sig->nparams, 0);
  for (j = 0; j < sig->nparams; j++) {
    const gj_param *p = &sig->params[j];
    lua_createtable(L, 0, 7);
    if (p->esize) {   /* an array of structs: the Lua face names it */
      lua_pushnil(L);
    } else if (p->lnum) {
      lua_pushstring(L, gj_lnum_classes[p->lnum].name);
    } else {
      lua_pushstring(L, gj_scalar_name((gj_scalar)p->elem));
      if (p->is_array) {
        lua_pushliteral(L, "[]");
        lua_concat(L, 2);
      }
    }
    lua_setfield(L, -2, "type");
    if (p->esize) lua_pushnil(L);
    else lua_pushstring(L, gj_scalar_name((gj_scalar)p->elem));
    lua_setfield(L, -2, "elem");
    lua_pushinteger(L, p->esize);
    lua_setfield(L, -2, "esize");
    lua_pushboolean(L, p->is_array);
    lua_setfield(L, -2, "is_array");
    lua_pushboolean(L, p->read);
    lua_setfield(L, -2, "read");
    lua_pushboolean(L, p->written);
    lua_setfield(L, -2, "written");
    lua_pushboolean(L, p->len_used);
    lua_setfield(L, -2, "len_used");
    lua_pushinteger(L, (lua_Integer)p->offset);
    lua_setfield(L, -2, "offset");
    lua_pushinteger(L, (lua_Integer)p->size);
    lua_setfield(L, -2, "size");
    lua_rawseti(L, -2, j + 1);
  }
  lua_setfield(L, -2, "params");
  lua_pushboolean(L, sig->uses_barrier);
  lua_setfield(L, -2, "uses_barrier");
  lua_pushinteger(L, (lua_Integer)sig->shared_bytes);
  lua_setfield(L, -2, "shared_bytes");
}

/* prints = { { where = "file.lua:LINE", kinds = "nis", strs = { [j] =
** text } }, ... }: the kernel's print calls by site (gj_print.h), for
** lua/gpujit/printer.lua; absent when it has none. */
static void push_prints(lua_State *L, const gj_psites *ps)
{
  int i, j;
  if (ps->n == 0) return;
  lua_createtable(L, ps->n, 0);
  for (i = 0; i < ps->n; i++) {
    const gj_psite *p = &ps->v[i];
    lua_createtable(L, 0, 3);
    lua_pushstring(L, p->where);
    lua_setfield(L, -2, "where");
    lua_pushlstring(L, p->kinds, (size_t)p->nargs);
    lua_setfield(L, -2, "kinds");
    lua_createtable(L, p->nargs, 0);
    for (j = 0; j < p->nargs; j++) {
      if (!p->strs[j]) continue;
      lua_pushstring(L, p->strs[j]);
      lua_rawseti(L, -2, j + 1);
    }
    lua_setfield(L, -2, "strs");
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "prints");
}

/* The stages' times and what the disk cache did (GPUJIT_VERBOSE,
** gpu.on_compile): ms = { job = .., frontend = .., ... }, stages = the
** names in order, cache = "off" | "hit" | "miss" | "written", note = the
** target's line (gj_codegen.finish_module) when it wrote one. */
static void push_timing(lua_State *L, const gj_compile_out *out)
{
  static const char *const cache[] = { "off", "hit", "miss", "written" };
  int j;
  lua_createtable(L, 0, GJ_ST__MAX);
  for (j = 0; j < GJ_ST__MAX; j++) {
    lua_pushnumber(L, out->ms[j]);
    lua_setfield(L, -2, gj_stage_names[j]);
  }
  lua_setfield(L, -2, "ms");
  lua_createtable(L, GJ_ST__MAX, 0);
  for (j = 0; j < GJ_ST__MAX; j++) {
    lua_pushstring(L, gj_stage_names[j]);
    lua_rawseti(L, -2, j + 1);
  }
  lua_setfield(L, -2, "stages");
  lua_pushstring(L, cache[out->cache]);
  lua_setfield(L, -2, "cache");
  if (out->note[0]) {
    lua_pushstring(L, out->note);
    lua_setfield(L, -2, "note");
  }
}

void gj_lua_push_compiled(lua_State *L, const gj_compile_out *out)
{
  ctxobj *c = ctx_of(L);
  kobj *ko;
  lua_createtable(L, 0, 6);
  ko = (kobj *)lua_newuserdata(L, sizeof(kobj));
  ko->k = out->kernel;
  ko->next = c->head.next;
  ko->prev = &c->head;
  if (c->head.next) c->head.next->prev = ko;
  c->head.next = ko;
  luaL_getmetatable(L, KERNEL_MT);
  lua_setmetatable(L, -2);
  lua_setfield(L, -2, "owner");
  lua_pushlightuserdata(L, out->kernel);
  lua_setfield(L, -2, "handle");
  push_sig(L, &out->kernel->sig);
  push_prints(L, &out->kernel->prints);
  push_timing(L, out);
}

static int core_compile(lua_State *L)
{
  ctxobj *c = ctx_of(L);
  gj_compile_opts o;
  gj_compile_out out;
  gj_err err;
  int plist = read_compile_args(L, &o);
  o.want_kernel = 1;
  if (gj_pipeline_lua_compile(&c->ctx, c->ref_intr, L, 1, plist, &o, &out,
                              &err)) {
    lua_pushstring(L, err.msg);
    return lua_error(L);
  }
  gj_lua_push_compiled(L, &out);
  return 1;
}

/* core.compile_start(fn, types, opts): a compile in the background
** (gj_bg_lua.c), its handle. */
static int core_compile_start(lua_State *L)
{
  ctxobj *c = ctx_of(L);
  gj_compile_opts o;
  int plist = read_compile_args(L, &o);
  o.want_kernel = 1;
  return gj_bg_lua_start(L, &c->ctx, c->ref_intr, plist, &o);
}

static int core_inspect(lua_State *L)
{
  ctxobj *c = ctx_of(L);
  gj_compile_opts o;
  gj_compile_out out;
  gj_err err;
  const char *what = luaL_checkstring(L, 4);
  int plist = read_compile_args(L, &o);
  o.want_llvm = strcmp(what, "llvm") == 0;
  o.want_asm = strcmp(what, "asm") == 0;
  if (!o.want_llvm && !o.want_asm)
    return luaL_error(L, "inspect: what must be \"llvm\" or \"asm\"");
  if (gj_pipeline_lua_compile(&c->ctx, c->ref_intr, L, 1, plist, &o, &out,
                              &err)) {
    lua_pushstring(L, err.msg);
    return lua_error(L);
  }
  lua_pushstring(L, o.want_llvm ? out.llvm : out.asm_text);
  free(out.llvm);
  free(out.asm_text);
  return 1;
}

/* core.job(fn, types, opts): the job table the kernel would compile with. */
static int core_job(lua_State *L)
{
  ctxobj *c = ctx_of(L);
  gj_compile_opts o;
  gj_job job;
  gj_err err;
  int plist = read_compile_args(L, &o);
  if (gj_pipeline_lua_job(&c->ctx, L, 1, plist, &o, &job, &err)) {
    lua_pushstring(L, err.msg);
    return lua_error(L);
  }
  gj_job_push(L, &job);
  return 1;
}

/* --- plugins --------------------------------------------------------------- */

/* core.load_plugin(path) -> handle, { name, version, identity, buffers } */
static int core_load_plugin(lua_State *L)
{
  const char *path = luaL_checkstring(L, 1);
  gj_cplugin *cp = (gj_cplugin *)lua_newuserdata(L, sizeof(gj_cplugin));
  gj_err err;
  int i;
  if (gj_cplugin_load(cp, path, &err)) {
    lua_pushstring(L, err.msg);
    return lua_error(L);
  }
  luaL_getmetatable(L, PLUGIN_MT);
  lua_setmetatable(L, -2);
  lua_createtable(L, 0, 4);
  lua_pushstring(L, cp->p.name);
  lua_setfield(L, -2, "name");
  lua_pushstring(L, cp->p.version);
  lua_setfield(L, -2, "version");
  lua_pushstring(L, cp->identity);
  lua_setfield(L, -2, "identity");
  lua_createtable(L, cp->p.nbuffers, 0);
  for (i = 0; i < cp->p.nbuffers; i++) {
    const gpujit_plugin_buffer *b = &cp->p.buffers[i];
    lua_createtable(L, 0, 4);
    lua_pushstring(L, b->name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, b->elem);
    lua_setfield(L, -2, "elem");
    lua_pushnumber(L, (lua_Number)b->per_item);
    lua_setfield(L, -2, "per_item");
    lua_pushnumber(L, (lua_Number)b->fixed);
    lua_setfield(L, -2, "fixed");
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "buffers");
  lua_pushboolean(L, cp->p.report != NULL);
  lua_setfield(L, -2, "has_report");
  return 2;
}

static int plugin_gc(lua_State *L)
{
  gj_cplugin_close((gj_cplugin *)luaL_checkudata(L, 1, PLUGIN_MT));
  return 0;
}

/* core.plugin_report(handle, kernel, dims, items, buffers, lengths): the
** plugin's report of a finished launch (buffers: lightuserdata host
** copies). */
static int core_plugin_report(lua_State *L)
{
  gj_cplugin *cp = (gj_cplugin *)luaL_checkudata(L, 1, PLUGIN_MT);
  gpujit_launch_desc ld;
  const void *bufs[GPUJIT_PLUGIN_MAXBUF];
  int64_t lens[GPUJIT_PLUGIN_MAXBUF];
  const gj_dims *d = (const gj_dims *)lua_topointer(L, 3);
  char msg[512] = "";
  int i, top;
  memset(&ld, 0, sizeof(ld));
  ld.kernel = luaL_checkstring(L, 2);
  luaL_argcheck(L, d != NULL, 3, "dims expected");
  ld.ndim = d->ndim;
  for (i = 0; i < 3; i++) {
    ld.global[i] = d->global[i];
    ld.group[i] = d->group[i];
  }
  ld.items = (int64_t)luaL_checknumber(L, 4);
  luaL_checktype(L, 5, LUA_TTABLE);
  luaL_checktype(L, 6, LUA_TTABLE);
  ld.nbuffers = cp->p.nbuffers;
  for (i = 0; i < ld.nbuffers; i++) {
    lua_rawgeti(L, 5, i + 1);
    bufs[i] = lua_topointer(L, -1);
    lua_rawgeti(L, 6, i + 1);
    lens[i] = (int64_t)lua_tonumber(L, -1);
    lua_pop(L, 2);
  }
  ld.buffers = bufs;
  ld.lengths = lens;
  if (!cp->p.report) return 0;
  top = lua_gettop(L);
  if (cp->p.report(cp->p.ud, L, &ld, msg, sizeof(msg)) != 0) {
    lua_settop(L, top);
    /* gpujit.plugins adds "kernel K: plugin P, stage report: " */
    lua_pushstring(L, msg[0] ? msg : "(no message)");
    return lua_error(L);
  }
  if (lua_gettop(L) != top + 1) {
    lua_settop(L, top);
    lua_pushstring(L, "its report must push exactly one value");
    return lua_error(L);
  }
  return 1;
}

/* core.host_stats(): { registered, live }, this state's registrations of
** host memory for launches (gj_mem_host_register). */
static int core_host_stats(lua_State *L)
{
  ctxobj *c = ctx_of(L);
  lua_createtable(L, 0, 2);
  lua_pushnumber(L, (lua_Number)c->ctx.host_regs);
  lua_setfield(L, -2, "registered");
  lua_pushnumber(L, (lua_Number)c->ctx.host_live);
  lua_setfield(L, -2, "live");
  return 1;
}

/* --- the disk cache (gpu.cache) ----------------------------------------- */

static void set_count(lua_State *L, const char *k, uint64_t v)
{
  lua_pushnumber(L, (lua_Number)v);
  lua_setfield(L, -2, k);
}

/* core.cache_stats(dir): this state's counters and the directory's size. */
static int core_cache_stats(lua_State *L)
{
  ctxobj *c = ctx_of(L);
  const char *dir = luaL_checkstring(L, 1);
  const gj_cache_stats *s = &c->ctx.cache;
  uint64_t bytes, entries;
  gj_cache_usage(dir, &bytes, &entries);
  lua_createtable(L, 0, 10);
  set_count(L, "hits", s->hits);
  set_count(L, "misses", s->misses);
  set_count(L, "rejected", s->rejected);
  set_count(L, "writes", s->writes);
  set_count(L, "write_errors", s->write_errors);
  set_count(L, "compiles", s->compiles);
  set_count(L, "bytes", bytes);
  set_count(L, "entries", entries);
  set_count(L, "max_bytes", gj_cache_max());
  lua_pushstring(L, dir);
  lua_setfield(L, -2, "dir");
  return 1;
}

static int core_cache_clear(lua_State *L)
{
  lua_pushinteger(L, gj_cache_clear(luaL_checkstring(L, 1)));
  return 1;
}

static int core_cache_export(lua_State *L)
{
  gj_err err;
  int n = gj_cache_export(luaL_checkstring(L, 1), luaL_checkstring(L, 2),
                          &err);
  if (n < 0) {
    lua_pushstring(L, err.msg);
    return lua_error(L);
  }
  lua_pushinteger(L, n);
  return 1;
}

static int core_cache_import(lua_State *L)
{
  gj_err err;
  int rejected = 0;
  int n = gj_cache_import(luaL_checkstring(L, 1), luaL_checkstring(L, 2),
                          &rejected, &err);
  if (n < 0) {
    lua_pushstring(L, err.msg);
    return lua_error(L);
  }
  lua_pushinteger(L, n);
  lua_pushinteger(L, rejected);
  return 2;
}

static void kobj_release(kobj *ko)
{
  if (!ko->k) return;
  gj_kernel_free(ko->k);
  ko->k = NULL;
  ko->prev->next = ko->next;
  if (ko->next) ko->next->prev = ko->prev;
}

static int kernel_gc(lua_State *L)
{
  kobj_release((kobj *)luaL_checkudata(L, 1, KERNEL_MT));
  return 0;
}

static int ctx_gc(lua_State *L)
{
  ctxobj *c = (ctxobj *)luaL_checkudata(L, 1, CTX_MT);
  int i;
  if (c->closed) return 0;
  gj_bg_close(&c->ctx);        /* compiles in flight end first */
  gj_streams_close(&c->ctx);   /* their launches end before the kernels go */
  while (c->head.next) kobj_release(c->head.next);
  for (i = 0; i < gj_nbackends; i++) {
    if (c->ctx.bopened[i] > 0) gj_backends[i]->close(c->ctx.bst[i]);
    /* gpu.array finalizers that run after this free nothing. */
    c->ctx.bopened[i] = -1;
    c->ctx.bst[i] = NULL;
    gj_err_set(&c->ctx.berr[i], "the gpujit context is closed");
  }
  c->closed = 1;
  gj_ctx_fini(&c->ctx);
  return 0;
}

/* The math.* and bit.* functions of this state, by identity. */
static void register_libs(lua_State *L, int tintr)
{
  int i;
  for (i = 0; i < GJ_I__MAX; i++) {
    const char *nm = gj_intr_names[i], *dot = strchr(nm, '.');
    char lib[16];
    if (!dot || (size_t)(dot - nm) >= sizeof(lib)) continue;
    memcpy(lib, nm, (size_t)(dot - nm));
    lib[dot - nm] = '\0';
    lua_getglobal(L, "require");
    lua_pushstring(L, lib);
    if (lua_pcall(L, 1, 1, 0) != 0 || !lua_istable(L, -1)) {
      lua_pop(L, 1);
      continue;
    }
    lua_getfield(L, -1, dot + 1);
    if (lua_isfunction(L, -1)) {
      lua_pushstring(L, nm);
      lua_rawset(L, tintr);
      lua_pop(L, 1);
    } else {
      lua_pop(L, 2);
    }
  }
}

static const luaL_Reg core_funcs[] = {
  { "intrinsic", core_intrinsic },
  { "backends", core_backends },
  { "backend_names", core_backend_names },
  { "devices", core_devices },
  { "compile", core_compile },
  { "compile_start", core_compile_start },
  { "inspect", core_inspect },
  { "job", core_job },
  { "load_plugin", core_load_plugin },
  { "plugin_report", core_plugin_report },
  { "cache_stats", core_cache_stats },
  { "host_stats", core_host_stats },
  { "cache_clear", core_cache_clear },
  { "cache_export", core_cache_export },
  { "cache_import", core_cache_import },
  { NULL, NULL }
};

GJ_API int luaopen_gpujit_core(lua_State *L)
{
  ctxobj *c;
  gj_err err;
  Dl_info dl;
  lua_getfield(L, LUA_REGISTRYINDEX, CTX_MT ".instance");
  c = (ctxobj *)lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (!c) {
    c = (ctxobj *)lua_newuserdata(L, sizeof(ctxobj));
    memset(c, 0, sizeof(*c));
    gj_ctx_init(&c->ctx);
    luaL_newmetatable(L, CTX_MT);
    lua_pushcfunction(L, ctx_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, CTX_MT ".instance");
    if (gj_bc_lua_mapinit(L, &c->ctx.bcmap, &err)) {
      c->closed = 1;
      lua_pushstring(L, err.msg);
      return lua_error(L);
    }
    lua_newtable(L);
    register_libs(L, lua_gettop(L));
    c->ref_intr = luaL_ref(L, LUA_REGISTRYINDEX);
    luaL_newmetatable(L, KERNEL_MT);
    lua_pushcfunction(L, kernel_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    luaL_newmetatable(L, PLUGIN_MT);
    lua_pushcfunction(L, plugin_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
  }
  lua_newtable(L);
  luaL_register(L, NULL, core_funcs);
  gj_lua_types_register(L);   /* core.types, core.lnum_classes */
  gj_bg_lua_register(L, &c->ctx);      /* core.compile_done, compile_finish, ... */
  lua_pushlightuserdata(L, &c->ctx);
  lua_setfield(L, -2, "ctx");
  lua_pushstring(L, GPUJIT_VERSION);
  lua_setfield(L, -2, "version");
  if (dladdr((void *)luaopen_gpujit_core, &dl) && dl.dli_fname) {
    lua_pushstring(L, dl.dli_fname);
    lua_setfield(L, -2, "path");
  }
  return 1;
}
