/*
** Plugins read from Lua, and Lua plugins' hooks (gj_plugin_lua.h).
**
** A Lua plugin's hooks are the functions in its descriptor table.  They see
** text (gj_plugin.c prints the module and parses back what they return),
** the job as a table (gj_job_lua.c) and the kernel's description as a
** table.  A hook's error is caught, so a broken plugin never unwinds
** through LLVM's or gpujit's C frames; gj_plugin.c words it.
*/
#include <string.h>

#include <lua.h>

#include "gj_job_lua.h"
#include "gj_plugin_lua.h"

static const char *const stage_names[] = { "job", "frontend", "ir",
                                           "optimize", "optimized", "emit",
                                           "key" };

/* --- reading the descriptors --------------------------------------------- */

static const char *field_str(lua_State *L, int t, const char *k)
{
  const char *s;
  lua_getfield(L, t, k);
  s = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  lua_pop(L, 1);   /* the string stays referenced by the table */
  return s;
}

static int read_buffers(lua_State *L, int t, struct gj_plugref *r,
                        gj_err *err)
{
  int i;
  lua_getfield(L, t, "buffers");
  r->nbuf = lua_istable(L, -1) ? (int)lua_objlen(L, -1) : 0;
  if (r->nbuf > GPUJIT_PLUGIN_MAXBUF) {
    lua_pop(L, 1);
    return gj_err_set(err, "plugin %s: at most %d buffers", r->name,
                      GPUJIT_PLUGIN_MAXBUF);
  }
  for (i = 0; i < r->nbuf; i++) {
    const char *elem;
    lua_rawgeti(L, -1, i + 1);
    r->bufname[i] = lua_istable(L, -1) ? field_str(L, lua_gettop(L), "name")
                                        : NULL;
    elem = lua_istable(L, -1) ? field_str(L, lua_gettop(L), "elem") : NULL;
    lua_pop(L, 1);
    if (!r->bufname[i] || !elem || gj_scalar_parse(elem, &r->bufelem[i])) {
      lua_pop(L, 1);
      return gj_err_set(err, "plugin %s: buffer %d is malformed", r->name,
                        i + 1);
    }
  }
  lua_pop(L, 1);
  return 0;
}

static const gj_plugops lua_plugops;

int gj_plugset_lua_read(gj_plugset *ps, gj_plugset_lua *pl, lua_State *L,
                        int list, gj_err *err)
{
  int i;
  gj_plugset_init(ps);
  pl->L = L;
  pl->list = 0;
  if (!list || !lua_istable(L, list)) return 0;
  pl->list = list;
  ps->n = (int)lua_objlen(L, list);
  if (ps->n > GJ_MAXPLUGINS)
    return gj_err_set(err, "at most %d plugins apply to one kernel",
                      GJ_MAXPLUGINS);
  for (i = 0; i < ps->n; i++) {
    struct gj_plugref *r = &ps->p[i];
    int t;
    lua_rawgeti(L, list, i + 1);
    t = lua_gettop(L);
    lua_getfield(L, t, "handle");
    r->c = (gj_cplugin *)lua_touserdata(L, -1);
    lua_pop(L, 1);
    r->ops = &lua_plugops;
    r->ud = pl;
    r->slot = i;
    r->name = field_str(L, t, "name");
    r->identity = field_str(L, t, "identity");
    if (!r->name || !r->identity) {
      lua_pop(L, 1);
      return gj_err_set(err, "plugin descriptor %d has no name or identity",
                        i + 1);
    }
    if (read_buffers(L, t, r, err)) {
      lua_pop(L, 1);
      return -1;
    }
    ps->nbuf += r->nbuf;
    lua_pop(L, 1);
  }
  return 0;
}

/* --- Lua plugins' hooks (gj_plugops) ------------------------------------- */

/* Push field k of plugin slot's descriptor. */
static void push_field(gj_plugset_lua *pl, int slot, const char *k)
{
  lua_State *L = pl->L;
  lua_rawgeti(L, pl->list, slot + 1);
  lua_getfield(L, -1, k);
  lua_remove(L, -2);
}

/* Push plugin slot's hook for st; 0 when it has none (nothing pushed). */
static int push_hook(gj_plugset_lua *pl, int slot, gj_stage st)
{
  push_field(pl, slot, stage_names[st]);
  if (lua_isfunction(pl->L, -1)) return 1;
  lua_pop(pl->L, 1);
  return 0;
}

/* Call the hook pushed below its nargs arguments; on success the one
** result is left on the stack, else its message is in err. */
static int call_hook(lua_State *L, int nargs, gj_err *err)
{
  if (lua_pcall(L, nargs, 1, 0) != 0) {
    const char *m = lua_tostring(L, -1);
    gj_err_set(err, "%s", m ? m : "");
    lua_pop(L, 1);
    return -1;
  }
  return 0;
}

static int lp_key(void *ud, int slot, const gpujit_kernel_desc *kd,
                  const char **s, size_t *n, gj_err *err)
{
  gj_plugset_lua *pl = (gj_plugset_lua *)ud;
  lua_State *L = pl->L;
  push_field(pl, slot, "key");
  if (lua_isfunction(L, -1)) {
    gj_kernel_desc_push(L, kd);
    if (call_hook(L, 1, err)) return -1;
  }
  if (lua_type(L, -1) != LUA_TSTRING) {
    int none = lua_isnil(L, -1);
    lua_pop(L, 1);
    if (none) return 0;
    return gj_err_set(err, "must be (or return) a string or nil");
  }
  *s = lua_tolstring(L, -1, n);   /* popped by done */
  return 1;
}

static int lp_job(void *ud, int slot, const gpujit_kernel_desc *kd,
                  gj_job *job, gj_err *err)
{
  gj_plugset_lua *pl = (gj_plugset_lua *)ud;
  lua_State *L = pl->L;
  int t;
  gj_job_push(L, job);
  t = lua_gettop(L);
  if (!push_hook(pl, slot, GJ_STAGE_JOB)) {
    lua_pop(L, 1);
    return 0;
  }
  lua_pushvalue(L, t);
  gj_kernel_desc_push(L, kd);
  if (call_hook(L, 2, err)) {
    lua_pop(L, 1);
    return -1;
  }
  /* the table it returned, or the one it was given, changed in place */
  if (gj_job_apply(L, lua_istable(L, -1) ? -1 : t, job, "job", err)) {
    lua_pop(L, 2);
    return -1;
  }
  lua_pop(L, 2);
  return 0;
}

static int lp_frontend(void *ud, int slot, const gpujit_kernel_desc *kd,
                       gj_err *err)
{
  gj_plugset_lua *pl = (gj_plugset_lua *)ud;
  if (!push_hook(pl, slot, GJ_STAGE_FRONTEND)) return 0;
  gj_kernel_desc_push(pl->L, kd);
  if (call_hook(pl->L, 1, err)) return -1;
  lua_pop(pl->L, 1);
  return 0;
}

/* The hook for st, called with (text, desc); a string it returns is left
** on the stack until done. */
static int lp_text(void *ud, int slot, gj_stage st,
                   const gpujit_kernel_desc *kd, const char *in, size_t inlen,
                   const char *want, const char **out, size_t *outlen,
                   gj_err *err)
{
  gj_plugset_lua *pl = (gj_plugset_lua *)ud;
  lua_State *L = pl->L;
  if (!push_hook(pl, slot, st)) return 0;
  lua_pushlstring(L, in, inlen);
  gj_kernel_desc_push(L, kd);
  if (call_hook(L, 2, err)) return -1;
  if (lua_type(L, -1) == LUA_TSTRING) {
    *out = lua_tolstring(L, -1, outlen);
    return 1;
  }
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  lua_pop(L, 1);
  return gj_err_set(err, "must return %s or nil", want);
}

static void lp_done(void *ud)
{
  lua_pop(((gj_plugset_lua *)ud)->L, 1);
}

static const gj_plugops lua_plugops = {
  .key = lp_key,
  .job = lp_job,
  .frontend = lp_frontend,
  .text = lp_text,
  .done = lp_done,
};
