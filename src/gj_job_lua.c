/*
** The compile job as a Lua table and back, and the kernel description
** Lua plugins get (gj_job_lua.h).  Both directions are made from GJ_JOBDEF
** (gj_job.h): a field's Lua name ("a.b": field b of the subtable a), and
** its access.
**
** Only what a kernel may change without breaking its backend's conventions
** is writable (RW): the CPU, its features, the pass pipeline, the code
** generator's level, the bitcode libraries and vectorize.  The triple,
** data layout, address spaces and the rest (RO) describe what the
** backend's entry point and intrinsics assume; a table that changes them
** is refused, never ignored.
*/
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "gj_job_lua.h"

static const char *const opt_names[] = { "none", "less", "default",
                                         "aggressive" };

/* t[path] = the value on top (popped); t is below it.  "a.b" makes the
** subtable a when it is not there. */
static void set_path(lua_State *L, const char *path)
{
  const char *dot = strchr(path, '.');
  if (!dot) {
    lua_setfield(L, -2, path);
    return;
  }
  lua_pushlstring(L, path, (size_t)(dot - path));
  lua_rawget(L, -3);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 3);
    lua_pushlstring(L, path, (size_t)(dot - path));
    lua_pushvalue(L, -2);
    lua_rawset(L, -5);
  }
  lua_insert(L, -2);
  lua_setfield(L, -2, dot + 1);
  lua_pop(L, 1);
}

/* Push t[path] (nil when a subtable on the way is not a table). */
static void get_path(lua_State *L, int idx, const char *path)
{
  const char *dot = strchr(path, '.');
  if (!dot) {
    lua_getfield(L, idx, path);
    return;
  }
  lua_pushlstring(L, path, (size_t)(dot - path));
  lua_gettable(L, idx);
  if (lua_istable(L, -1))
    lua_getfield(L, -1, dot + 1);
  else
    lua_pushnil(L);
  lua_remove(L, -2);
}

static void set_str(lua_State *L, const char *k, const char *v)
{
  lua_pushstring(L, v ? v : "");
  set_path(L, k);
}

static void set_int(lua_State *L, const char *k, lua_Integer v)
{
  lua_pushinteger(L, v);
  set_path(L, k);
}

static void set_bool(lua_State *L, const char *k, int v)
{
  lua_pushboolean(L, v);
  set_path(L, k);
}

static void set_libs(lua_State *L, const char *k, int n,
                     const gj_job_lib *libs)
{
  int i;
  lua_createtable(L, n, 0);
  for (i = 0; i < n; i++) {
    lua_createtable(L, 0, 2);
    set_str(L, "path", libs[i].path);
    set_str(L, "prefix", libs[i].prefix);
    lua_rawseti(L, -2, i + 1);
  }
  set_path(L, k);
}

#define PUSH_STR(f, k)    set_str(L, k, job->f);
#define PUSH_TEXT(f, k)   set_str(L, k, job->f);
#define PUSH_UINT(f, k)   set_int(L, k, (lua_Integer)job->f);
#define PUSH_INT(f, k)    set_int(L, k, (lua_Integer)job->f);
#define PUSH_BOOL(f, k)   set_bool(L, k, job->f != 0);
#define PUSH_OPT(f, k)    set_str(L, k, opt_names[job->f & 3]);
#define PUSH_RELOC(f, k)  set_int(L, k, (lua_Integer)job->f);
#define PUSH_CMODEL(f, k) set_int(L, k, (lua_Integer)job->f);
#define PUSH_LIBS(f, k)   set_libs(L, k, job->n##f, job->f);
#define PUSH(kind, f, dim, lua, key, access) PUSH_##kind(f, lua)

void gj_job_push(lua_State *L, const gj_job *job)
{
  lua_createtable(L, 0, 20);
  GJ_JOBDEF(PUSH)
}

/* A string field into buf; 1 when present. */
static int get_str(lua_State *L, int idx, const char *k, char *buf, size_t n,
                   const char *who, gj_err *err, int *bad)
{
  size_t len;
  const char *s;
  get_path(L, idx, k);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
  if (!s) {
    *bad = gj_err_set(err, "%s: job.%s must be a string", who, k);
  } else if (len >= n) {
    *bad = gj_err_set(err, "%s: job.%s is longer than %zu bytes", who, k,
                      n - 1);
  } else {
    memcpy(buf, s, len + 1);
  }
  lua_pop(L, 1);
  return !*bad;
}

static int put_str(lua_State *L, int idx, const char *k, char *buf, size_t n,
                   const char *who, gj_err *err)
{
  int bad = 0;
  get_str(L, idx, k, buf, n, who, err, &bad);
  return bad;
}

static int put_bool(lua_State *L, int idx, const char *k, int *v,
                    const char *who, gj_err *err)
{
  int r = 0;
  get_path(L, idx, k);
  if (lua_isboolean(L, -1))
    *v = lua_toboolean(L, -1);
  else if (!lua_isnil(L, -1))
    r = gj_err_set(err, "%s: job.%s must be a boolean", who, k);
  lua_pop(L, 1);
  return r;
}

static int put_opt(lua_State *L, int idx, const char *k,
                   LLVMCodeGenOptLevel *v, const char *who, gj_err *err)
{
  int r = 0;
  get_path(L, idx, k);
  if (lua_type(L, -1) == LUA_TNUMBER) {
    lua_Integer n = lua_tointeger(L, -1);
    if (n < 0 || n > 3 || (lua_Number)n != lua_tonumber(L, -1))
      r = gj_err_set(err, "%s: job.%s must be 0..3", who, k);
    else
      *v = (LLVMCodeGenOptLevel)n;
  } else if (lua_type(L, -1) == LUA_TSTRING) {
    int i;
    for (i = 0; i < 4 && strcmp(lua_tostring(L, -1), opt_names[i]); i++) {}
    if (i == 4)
      r = gj_err_set(err, "%s: job.%s must be none, less, default or "
                     "aggressive (or 0..3)", who, k);
    else
      *v = (LLVMCodeGenOptLevel)i;
  } else if (!lua_isnil(L, -1)) {
    r = gj_err_set(err, "%s: job.%s must be a string or a number", who, k);
  }
  lua_pop(L, 1);
  return r;
}

static int put_libs(lua_State *L, int idx, const char *k, int *nlibs,
                    gj_job_lib *libs, const char *who, gj_err *err)
{
  int i, n, bad = 0;
  gj_job_lib out[GJ_JOB_MAXLIBS];
  get_path(L, idx, k);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return gj_err_set(err, "%s: job.%s must be a list", who, k);
  }
  n = (int)lua_objlen(L, -1);
  if (n > GJ_JOB_MAXLIBS) {
    lua_pop(L, 1);
    return gj_err_set(err, "%s: job.%s holds at most %d libraries", who, k,
                      GJ_JOB_MAXLIBS);
  }
  for (i = 0; i < n && !bad; i++) {
    gj_job_lib *lib = &out[i];
    int t = lua_gettop(L) + 1;
    memset(lib, 0, sizeof(*lib));
    lua_rawgeti(L, -1, i + 1);
    if (lua_type(L, -1) == LUA_TSTRING) {   /* a path alone */
      lua_createtable(L, 0, 1);
      lua_pushvalue(L, -2);
      lua_setfield(L, -2, "path");
      lua_replace(L, t);
    }
    if (!lua_istable(L, t)) {
      bad = gj_err_set(err, "%s: job.%s[%d] must be a path or "
                       "{ path = , prefix = }", who, k, i + 1);
    } else if (!get_str(L, t, "path", lib->path, sizeof(lib->path), who, err,
                        &bad) && !bad) {
      bad = gj_err_set(err, "%s: job.%s[%d] has no path", who, k, i + 1);
    } else if (!bad) {
      get_str(L, t, "prefix", lib->prefix, sizeof(lib->prefix), who, err,
              &bad);
    }
    lua_settop(L, t - 1);
  }
  lua_pop(L, 1);
  if (!bad) {
    *nlibs = n;
    memcpy(libs, out, (size_t)n * sizeof(out[0]));
  }
  return bad;
}

/* A read-only field: absent, or equal to job's value, which is a string
** s (type LUA_TSTRING), a number n (LUA_TNUMBER) or a boolean n
** (LUA_TBOOLEAN, where any Lua value counts as its truth). */
static int same(lua_State *L, int idx, const char *k, int type,
                const char *s, lua_Number n, const char *who, gj_err *err)
{
  int r = 0, eq;
  get_path(L, idx, k);
  if (!lua_isnil(L, -1)) {
    if (type == LUA_TBOOLEAN)
      eq = lua_toboolean(L, -1) == (n != 0);
    else if (lua_type(L, -1) != type)
      eq = 0;
    else if (type == LUA_TSTRING)
      eq = strcmp(lua_tostring(L, -1), s ? s : "") == 0;
    else
      eq = lua_tonumber(L, -1) == n;
    if (!eq)
      r = gj_err_set(err, "%s: job.%s cannot be changed (it is what the "
                     "backend's entry point and intrinsics assume)", who, k);
  }
  lua_pop(L, 1);
  return r;
}

/* RW fields are read into j; RO fields are compared with job's.  A kind
** without a macro for an access does not compile until it gets one. */
#define PUT_STR(f, k)    put_str(L, idx, k, j.f, sizeof(j.f), who, err)
#define PUT_BOOL(f, k)   put_bool(L, idx, k, &j.f, who, err)
#define PUT_OPT(f, k)    put_opt(L, idx, k, &j.f, who, err)
#define PUT_LIBS(f, k)   put_libs(L, idx, k, &j.n##f, j.f, who, err)
#define SAME_S(v, k) same(L, idx, k, LUA_TSTRING, v, 0, who, err)
#define SAME_N(v, k) same(L, idx, k, LUA_TNUMBER, NULL, (lua_Number)(v), who, err)
#define SAME_STR(f, k)    SAME_S(job->f, k)
#define SAME_TEXT(f, k)   SAME_S(job->f, k)
#define SAME_UINT(f, k)   SAME_N(job->f, k)
#define SAME_INT(f, k)    SAME_N(job->f, k)
#define SAME_RELOC(f, k)  SAME_N(job->f, k)
#define SAME_CMODEL(f, k) SAME_N(job->f, k)
#define SAME_BOOL(f, k)   same(L, idx, k, LUA_TBOOLEAN, NULL, job->f != 0, who, \
                               err)
#define ACCESS_RW(kind, f, k) PUT_##kind(f, k)
#define ACCESS_RO(kind, f, k) SAME_##kind(f, k)
#define APPLY(kind, f, dim, lua, key, access) \
  if (ACCESS_##access(kind, f, lua)) return -1;

int gj_job_apply(lua_State *L, int idx, gj_job *job, const char *who,
                 gj_err *err)
{
  gj_job j = *job;
  if (idx < 0) idx = lua_gettop(L) + idx + 1;
  if (!lua_istable(L, idx))
    return gj_err_set(err, "%s: the job must be a table", who);
  GJ_JOBDEF(APPLY)
  *job = j;
  return 0;
}

static void push_list(lua_State *L, int n, const char *const *v)
{
  int i;
  lua_createtable(L, n, 0);
  for (i = 0; i < n && v; i++) {
    if (!v[i]) continue;
    lua_pushstring(L, v[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

void gj_kernel_desc_push(lua_State *L, const gpujit_kernel_desc *kd)
{
  int i;
  lua_createtable(L, 0, 16);
  set_str(L, "name", kd->name);
  set_str(L, "source", kd->source);
  set_int(L, "line", kd->line);
  set_str(L, "backend", kd->backend);
  set_int(L, "device", kd->device);
  push_list(L, kd->nparams, kd->types);
  lua_setfield(L, -2, "types");
  push_list(L, kd->nparams, kd->argnames);
  lua_setfield(L, -2, "argnames");
  lua_pushstring(L, kd->single ? "single" : kd->lua ? "lua" : "double");
  lua_setfield(L, -2, "precision");
  lua_pushboolean(L, kd->fastmath);
  lua_setfield(L, -2, "fastmath");
  lua_pushboolean(L, kd->boundscheck);
  lua_setfield(L, -2, "boundscheck");
  set_int(L, "buffer_param", kd->buffer_param);
  if (kd->job) {
    gj_job_push(L, kd->job);
    lua_setfield(L, -2, "job");
  }
  if (kd->nfunctions) {
    lua_createtable(L, kd->nfunctions, 0);
    for (i = 0; i < kd->nfunctions; i++) {
      const gpujit_fn_desc *f = &kd->functions[i];
      lua_createtable(L, 0, 6);
      set_str(L, "name", f->name);
      set_str(L, "source", f->source);
      set_int(L, "line", f->line);
      push_list(L, f->nparams, f->param_types);
      lua_setfield(L, -2, "params");
      push_list(L, f->nret, f->ret_types);
      lua_setfield(L, -2, "returns");
      lua_pushboolean(L, f->uses_barrier);
      lua_setfield(L, -2, "uses_barrier");
      lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "functions");
  }
}
