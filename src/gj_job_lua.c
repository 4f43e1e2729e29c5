/*
** The compile job as a Lua table and back, and the kernel description
** Lua plugins get (gj_job_lua.h).
**
** Only what a kernel may change without breaking its backend's conventions
** is writable: the CPU, its features, the pass pipeline, the code
** generator's level and the bitcode libraries.  The triple, data layout,
** address spaces and the rest describe what the backend's entry point and
** intrinsics assume; a table that changes them is refused, never ignored.
*/
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "gj_job_lua.h"

static const char *const opt_names[] = { "none", "less", "default",
                                         "aggressive" };

static void set_str(lua_State *L, const char *k, const char *v)
{
  lua_pushstring(L, v ? v : "");
  lua_setfield(L, -2, k);
}

static void set_int(lua_State *L, const char *k, lua_Integer v)
{
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

void gj_job_push(lua_State *L, const gj_job *job)
{
  int i;
  lua_createtable(L, 0, 16);
  set_str(L, "triple", job->triple);
  set_str(L, "datalayout", job->datalayout);
  set_str(L, "cpu", job->cpu);
  set_str(L, "features", job->features);
  set_str(L, "target_id", job->target_id);
  set_str(L, "format", job->format);
  lua_createtable(L, 0, 3);
  set_int(L, "global", job->as_global);
  set_int(L, "shared", job->as_shared);
  set_int(L, "local", job->as_local);
  lua_setfield(L, -2, "address_spaces");
  lua_pushboolean(L, job->serial_groups);
  lua_setfield(L, -2, "serial_groups");
  lua_pushboolean(L, job->vectorize);
  lua_setfield(L, -2, "vectorize");
  set_str(L, "intrinsics", job->intrinsics_ir);
  lua_createtable(L, job->nlibs, 0);
  for (i = 0; i < job->nlibs; i++) {
    lua_createtable(L, 0, 2);
    set_str(L, "path", job->libs[i].path);
    set_str(L, "prefix", job->libs[i].prefix);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "libraries");
  set_str(L, "passes", job->passes);
  set_str(L, "opt_level", opt_names[job->codegen_opt & 3]);
  set_int(L, "reloc", job->reloc);
  set_int(L, "code_model", job->code_model);
}

/* A string field into buf; 1 when present. */
static int get_str(lua_State *L, int idx, const char *k, char *buf, size_t n,
                   const char *who, gj_err *err, int *bad)
{
  size_t len;
  const char *s;
  lua_getfield(L, idx, k);
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

/* A read-only string field: absent, or equal to have. */
static int same_str(lua_State *L, int idx, const char *k, const char *have,
                    const char *who, gj_err *err)
{
  int r = 0;
  lua_getfield(L, idx, k);
  if (!lua_isnil(L, -1) &&
      (lua_type(L, -1) != LUA_TSTRING ||
       strcmp(lua_tostring(L, -1), have ? have : "") != 0))
    r = gj_err_set(err, "%s: job.%s cannot be changed (it is what the "
                   "backend's entry point and intrinsics assume)", who, k);
  lua_pop(L, 1);
  return r;
}

static int get_opt(lua_State *L, int idx, gj_job *job, const char *who,
                   gj_err *err)
{
  int r = 0;
  lua_getfield(L, idx, "opt_level");
  if (lua_type(L, -1) == LUA_TNUMBER) {
    lua_Integer v = lua_tointeger(L, -1);
    if (v < 0 || v > 3 || (lua_Number)v != lua_tonumber(L, -1))
      r = gj_err_set(err, "%s: job.opt_level must be 0..3", who);
    else
      job->codegen_opt = (LLVMCodeGenOptLevel)v;
  } else if (lua_type(L, -1) == LUA_TSTRING) {
    int i;
    for (i = 0; i < 4 && strcmp(lua_tostring(L, -1), opt_names[i]); i++) {}
    if (i == 4)
      r = gj_err_set(err, "%s: job.opt_level must be none, less, default or "
                     "aggressive (or 0..3)", who);
    else
      job->codegen_opt = (LLVMCodeGenOptLevel)i;
  } else if (!lua_isnil(L, -1)) {
    r = gj_err_set(err, "%s: job.opt_level must be a string or a number", who);
  }
  lua_pop(L, 1);
  return r;
}

static int get_libs(lua_State *L, int idx, gj_job *job, const char *who,
                    gj_err *err)
{
  int i, n, bad = 0;
  gj_job out = *job;
  lua_getfield(L, idx, "libraries");
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return gj_err_set(err, "%s: job.libraries must be a list", who);
  }
  n = (int)lua_objlen(L, -1);
  if (n > GJ_JOB_MAXLIBS) {
    lua_pop(L, 1);
    return gj_err_set(err, "%s: job.libraries holds at most %d libraries",
                      who, GJ_JOB_MAXLIBS);
  }
  out.nlibs = n;
  for (i = 0; i < n && !bad; i++) {
    gj_job_lib *lib = &out.libs[i];
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
      bad = gj_err_set(err, "%s: job.libraries[%d] must be a path or "
                       "{ path = , prefix = }", who, i + 1);
    } else if (!get_str(L, t, "path", lib->path, sizeof(lib->path), who, err,
                        &bad) && !bad) {
      bad = gj_err_set(err, "%s: job.libraries[%d] has no path", who, i + 1);
    } else if (!bad) {
      get_str(L, t, "prefix", lib->prefix, sizeof(lib->prefix), who, err,
              &bad);
    }
    lua_settop(L, t - 1);
  }
  lua_pop(L, 1);
  if (!bad) *job = out;
  return bad;
}

/* The read-only address spaces and serial_groups: absent or unchanged. */
static int same_layout(lua_State *L, int idx, const gj_job *job,
                       const char *who, gj_err *err)
{
  static const char *const as[] = { "global", "shared", "local" };
  unsigned have[3];
  int i, r = 0;
  have[0] = job->as_global;
  have[1] = job->as_shared;
  have[2] = job->as_local;
  lua_getfield(L, idx, "address_spaces");
  for (i = 0; i < 3 && lua_istable(L, -1) && !r; i++) {
    lua_getfield(L, -1, as[i]);
    if (!lua_isnil(L, -1) && (lua_type(L, -1) != LUA_TNUMBER ||
                              lua_tonumber(L, -1) != (lua_Number)have[i]))
      r = gj_err_set(err, "%s: job.address_spaces.%s cannot be changed", who,
                     as[i]);
    lua_pop(L, 1);
  }
  lua_getfield(L, idx, "serial_groups");
  if (!r && !lua_isnil(L, -1) &&
      lua_toboolean(L, -1) != (job->serial_groups != 0))
    r = gj_err_set(err, "%s: job.serial_groups cannot be changed", who);
  lua_pop(L, 2);
  return r;
}

int gj_job_apply(lua_State *L, int idx, gj_job *job, const char *who,
                 gj_err *err)
{
  gj_job j = *job;
  int bad = 0;
  if (idx < 0) idx = lua_gettop(L) + idx + 1;
  if (!lua_istable(L, idx))
    return gj_err_set(err, "%s: the job must be a table", who);
  get_str(L, idx, "cpu", j.cpu, sizeof(j.cpu), who, err, &bad);
  if (!bad) get_str(L, idx, "features", j.features, sizeof(j.features), who,
                    err, &bad);
  if (!bad) get_str(L, idx, "passes", j.passes, sizeof(j.passes), who, err,
                    &bad);
  lua_getfield(L, idx, "vectorize");
  if (lua_isboolean(L, -1))
    j.vectorize = lua_toboolean(L, -1);
  else if (!bad && !lua_isnil(L, -1))
    bad = gj_err_set(err, "%s: job.vectorize must be a boolean", who);
  lua_pop(L, 1);
  if (bad || get_opt(L, idx, &j, who, err) || get_libs(L, idx, &j, who, err))
    return -1;
  if (same_str(L, idx, "triple", job->triple, who, err) ||
      same_str(L, idx, "datalayout", job->datalayout, who, err) ||
      same_str(L, idx, "target_id", job->target_id, who, err) ||
      same_str(L, idx, "format", job->format, who, err) ||
      same_str(L, idx, "intrinsics", job->intrinsics_ir, who, err) ||
      same_layout(L, idx, job, who, err))
    return -1;
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
  lua_pushstring(L, kd->single ? "single" : "double");
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
