/*
** Frontend: reading bytecode through jit.util (see gj_bc.h).
*/
#include "gj_bc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

const char *const gj_bc_names[GJ_BC__MAX] = {
#define GJ_BCNAME(name) #name,
  GJ_BCDEF(GJ_BCNAME)
#undef GJ_BCNAME
};

/* jit.vmdef.bcnames of LuaJIT 2.1 (jit.version_num 20100), for LuaJITs that
** ship without jit/vmdef.lua (embedded builds often do).  Six characters a
** name, in LuaJIT's opcode order. */
static const char bcnames_20100[] =
  "ISLT  ISGE  ISLE  ISGT  ISEQV ISNEV ISEQS ISNES ISEQN ISNEN ISEQP ISNEP "
  "ISTC  ISFC  IST   ISF   ISTYPEISNUM MOV   NOT   UNM   LEN   ADDVN SUBVN "
  "MULVN DIVVN MODVN ADDNV SUBNV MULNV DIVNV MODNV ADDVV SUBVV MULVV DIVVV "
  "MODVV POW   CAT   KSTR  KCDATAKSHORTKNUM  KPRI  KNIL  UGET  USETV USETS "
  "USETN USETP UCLO  FNEW  TNEW  TDUP  GGET  GSET  TGETV TGETS TGETB TGETR "
  "TSETV TSETS TSETB TSETM TSETR CALLM CALL  CALLMTCALLT ITERC ITERN VARG  "
  "ISNEXTRETM  RET   RET0  RET1  FORI  JFORI FORL  IFORL JFORL ITERL IITERL"
  "JITERLLOOP  ILOOP JLOOP JMP   FUNCF IFUNCFJFUNCFFUNCV IFUNCVJFUNCVFUNCC "
  "FUNCCW";

/* Push jit.util.<name>; error when jit.util is missing. */
static int push_jitutil(lua_State *L, const char *name, gj_err *err)
{
  lua_getglobal(L, "require");
  lua_pushliteral(L, "jit.util");
  if (lua_pcall(L, 1, 1, 0) != 0 || !lua_istable(L, -1)) {
    lua_pop(L, 1);
    return gj_err_set(err, "gpujit needs LuaJIT's jit.util module");
  }
  lua_getfield(L, -1, name);
  lua_remove(L, -2);
  return 0;
}

/* Names string of the running LuaJIT: jit.vmdef, else the kept table. */
static int push_bcnames(lua_State *L, gj_err *err)
{
  lua_getglobal(L, "require");
  lua_pushliteral(L, "jit.vmdef");
  if (lua_pcall(L, 1, 1, 0) == 0 && lua_istable(L, -1)) {
    lua_getfield(L, -1, "bcnames");
    lua_remove(L, -2);
    if (lua_isstring(L, -1)) return 0;
  }
  lua_pop(L, 1);
  lua_getglobal(L, "jit");
  lua_getfield(L, -1, "version_num");
  if (lua_tointeger(L, -1) == 20100) {
    lua_pop(L, 2);
    lua_pushstring(L, bcnames_20100);
    return 0;
  }
  lua_pop(L, 2);
  return gj_err_set(err, "gpujit cannot read this LuaJIT's bytecode: no "
                         "jit.vmdef and an unknown jit.version_num");
}

/* Does a call's first argument sit two slots above the function (GC64
** frames, LJ_FR2) or one?  Read from the bytecode of `local f; f(0)`. */
static int probe_fr2(lua_State *L, const gj_bcmap *map, gj_err *err)
{
  int pc, fr2 = -1, callbase = -1, kbase = -1;
  if (luaL_loadstring(L, "local f; f(0)") != 0) {
    lua_pop(L, 1);
    return gj_err_set(err, "gpujit: cannot load its bytecode probe");
  }
  for (pc = 1; pc < 16; pc++) {
    lua_Integer ins;
    if (push_jitutil(L, "funcbc", err)) { lua_pop(L, 1); return -1; }
    lua_pushvalue(L, -2);
    lua_pushinteger(L, pc);
    lua_call(L, 2, 1);
    if (lua_isnil(L, -1)) { lua_pop(L, 1); break; }
    ins = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (map->op[ins & 0xff] == GJ_BC_KSHORT) kbase = (int)((ins >> 8) & 0xff);
    if (map->op[ins & 0xff] == GJ_BC_CALL) callbase = (int)((ins >> 8) & 0xff);
  }
  lua_pop(L, 1);
  if (callbase >= 0 && kbase > callbase) fr2 = kbase - callbase - 1;
  if (fr2 != 0 && fr2 != 1)
    return gj_err_set(err, "gpujit: cannot tell this LuaJIT's call frame layout");
  return fr2;
}

int gj_bc_mapinit(lua_State *L, gj_bcmap *map, gj_err *err)
{
  const char *names;
  size_t len, n, i;
  int fr2;
  memset(map->op, GJ_BC__MAX, sizeof(map->op));
  if (push_bcnames(L, err)) return -1;
  names = lua_tolstring(L, -1, &len);
  for (n = 0; n * 6 + 6 <= len && n < 256; n++) {
    char nm[7];
    size_t k = 6;
    memcpy(nm, names + n * 6, 6);
    while (k > 0 && nm[k - 1] == ' ') k--;
    nm[k] = '\0';
    for (i = 0; i < GJ_BC__MAX; i++)
      if (strcmp(nm, gj_bc_names[i]) == 0) { map->op[n] = (uint8_t)i; break; }
  }
  lua_pop(L, 1);
  fr2 = probe_fr2(L, map, err);
  if (fr2 < 0) return -1;
  map->fr2 = fr2;
  return 0;
}

/* Source name as Lua's own messages show it. */
static void chunk_name(char *dst, size_t n, const char *src)
{
  if (src == NULL) src = "?";
  if (*src == '@' || *src == '=') {
    snprintf(dst, n, "%s", src + 1);
  } else {
    size_t k = strcspn(src, "\n");
    if (k > 40) k = 40;
    snprintf(dst, n, "[string \"%.*s%s\"]", (int)k, src,
             src[k] ? "..." : "");
  }
}

/* funcinfo(f [, pc]) -> table on the stack. fidx: absolute index of f. */
static int funcinfo(lua_State *L, int fidx, int pc, gj_err *err)
{
  if (push_jitutil(L, "funcinfo", err)) return -1;
  lua_pushvalue(L, fidx);
  if (pc >= 0) lua_pushinteger(L, pc); else lua_pushnil(L);
  lua_call(L, 2, 1);
  return 0;
}

static int field_int(lua_State *L, int t, const char *k)
{
  int v;
  lua_getfield(L, t, k);
  v = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return v;
}

static int is_jump(int op)
{
  switch (op) {
  case GJ_BC_JMP: case GJ_BC_UCLO: case GJ_BC_FORI: case GJ_BC_JFORI:
  case GJ_BC_ISNEXT: case GJ_BC_ITERL: case GJ_BC_IITERL:
    return 1;
  default:
    return 0;
  }
}

/* Fold the JIT's specialized forms into their base op: the compiler must
** read the same code whether or not LuaJIT has run the function hot. */
static int base_op(int op)
{
  switch (op) {
  case GJ_BC_JFORI: return GJ_BC_FORI;
  case GJ_BC_IFORL: case GJ_BC_JFORL: return GJ_BC_FORL;
  case GJ_BC_IITERL: case GJ_BC_JITERL: return GJ_BC_ITERL;
  case GJ_BC_ILOOP: case GJ_BC_JLOOP: return GJ_BC_LOOP;
  default: return op;
  }
}

int gj_bc_read(lua_State *L, int idx, const gj_bcmap *map, gj_proto *p,
               gj_err *err)
{
  int fidx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  int info, nbc, i;
  memset(p, 0, sizeof(*p));
  p->fnref = LUA_NOREF;
  if (!lua_isfunction(L, fidx) || lua_iscfunction(L, fidx))
    return gj_err_set(err, "a kernel must be a Lua function");
  if (funcinfo(L, fidx, -1, err)) return -1;
  info = lua_gettop(L);
  lua_getfield(L, info, "source");
  chunk_name(p->chunk, sizeof(p->chunk), lua_tostring(L, -1));
  lua_pop(L, 1);
  p->linedefined = field_int(L, info, "linedefined");
  p->nparams = field_int(L, info, "params");
  p->framesize = field_int(L, info, "stackslots");
  p->nuv = field_int(L, info, "upvalues");
  p->nknum = field_int(L, info, "nconsts");
  p->nkgc = field_int(L, info, "gcconsts");
  nbc = field_int(L, info, "bytecodes");
  lua_getfield(L, info, "isvararg");
  if (lua_toboolean(L, -1)) {
    lua_pop(L, 2);
    return gj_err_set(err, "%s:%d: vararg functions (...) are not supported",
                      p->chunk, p->linedefined);
  }
  lua_pop(L, 2);
  if (nbc < 2) return gj_err_set(err, "%s: empty function", p->chunk);
  p->nins = nbc - 1;
  p->ins = calloc((size_t)p->nins, sizeof(gj_ins));
  p->knum = calloc((size_t)p->nknum + 1, sizeof(double));
  p->kstr = calloc((size_t)p->nkgc + 1, sizeof(char *));
  if (!p->ins || !p->knum || !p->kstr) {
    gj_bc_free(L, p);
    return gj_err_set(err, "out of memory reading bytecode");
  }
  for (i = 0; i < p->nins; i++) {
    gj_ins *in = &p->ins[i];
    lua_Integer ins;
    int pc = i + 1, op;
    if (push_jitutil(L, "funcbc", err)) goto fail;
    lua_pushvalue(L, fidx);
    lua_pushinteger(L, pc);
    lua_call(L, 2, 1);
    ins = lua_tointeger(L, -1);
    lua_pop(L, 1);
    op = map->op[ins & 0xff];
    if (op == GJ_BC__MAX) {
      gj_err_set(err, "%s: unknown bytecode %d", p->chunk, (int)(ins & 0xff));
      goto fail;
    }
    in->op = (uint8_t)base_op(op);
    in->a = (uint8_t)((ins >> 8) & 0xff);
    in->c = (uint8_t)((ins >> 16) & 0xff);
    in->b = (uint8_t)((ins >> 24) & 0xff);
    in->d = (uint16_t)((ins >> 16) & 0xffff);
    in->target = -1;
    if (is_jump(op))
      in->target = pc + (int)in->d - 0x8000;  /* (pc+1+D-BIAS) - 1 */
    if (funcinfo(L, fidx, pc, err)) goto fail;
    in->line = field_int(L, -1, "currentline");
    lua_pop(L, 1);
  }
  /* FORL's own D is a trace number once the loop is compiled (JFORL); its
  ** target is always the instruction after the FORI that exits past it. */
  for (i = 0; i < p->nins; i++) {
    gj_ins *in = &p->ins[i];
    if (in->op == GJ_BC_FORI && in->target >= 1 && in->target <= p->nins &&
        p->ins[in->target - 1].op == GJ_BC_FORL)
      p->ins[in->target - 1].target = i + 1;
  }
  for (i = 0; i < p->nknum; i++) {
    if (push_jitutil(L, "funck", err)) goto fail;
    lua_pushvalue(L, fidx);
    lua_pushinteger(L, i);
    lua_call(L, 2, 1);
    p->knum[i] = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  for (i = 0; i < p->nkgc; i++) {
    if (push_jitutil(L, "funck", err)) goto fail;
    lua_pushvalue(L, fidx);
    lua_pushinteger(L, -i - 1);
    lua_call(L, 2, 1);
    if (lua_type(L, -1) == LUA_TSTRING) {
      size_t n;
      const char *s = lua_tolstring(L, -1, &n);
      p->kstr[i] = malloc(n + 1);
      if (p->kstr[i]) memcpy(p->kstr[i], s, n + 1);
    }
    lua_pop(L, 1);
  }
  if (gj_bc_check(p, map->fr2, err)) goto fail;
  lua_pushvalue(L, fidx);
  p->fnref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
fail:
  gj_bc_free(L, p);
  return -1;
}

void gj_bc_free(lua_State *L, gj_proto *p)
{
  int i;
  if (p->kstr)
    for (i = 0; i < p->nkgc; i++) free(p->kstr[i]);
  free(p->kstr);
  free(p->knum);
  free(p->ins);
  if (p->fnref != LUA_NOREF && L) luaL_unref(L, LUA_REGISTRYINDEX, p->fnref);
  p->kstr = NULL;
  p->knum = NULL;
  p->ins = NULL;
  p->fnref = LUA_NOREF;
}
