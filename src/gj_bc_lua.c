/*
** Reading bytecode through jit.util (gj_bc_lua.h): the instruction words,
** constants and line numbers of a function, and the running LuaJIT's
** opcode names, handed to the decoder in gj_bc.c.
*/
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "gj_bc_lua.h"

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
static int probe_fr2(lua_State *L, gj_bcmap *map, gj_err *err)
{
  uint32_t ins[16];
  int pc, n = 0;
  if (luaL_loadstring(L, "local f; f(0)") != 0) {
    lua_pop(L, 1);
    return gj_err_set(err, "gpujit: cannot load its bytecode probe");
  }
  for (pc = 1; pc < 16; pc++) {
    if (push_jitutil(L, "funcbc", err)) { lua_pop(L, 1); return -1; }
    lua_pushvalue(L, -2);
    lua_pushinteger(L, pc);
    lua_call(L, 2, 1);
    if (lua_isnil(L, -1)) { lua_pop(L, 1); break; }
    ins[n++] = (uint32_t)lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return gj_bc_mapfr2(map, ins, n, err);
}

int gj_bc_lua_mapinit(lua_State *L, gj_bcmap *map, gj_err *err)
{
  const char *names;
  size_t len;
  if (push_bcnames(L, err)) return -1;
  names = lua_tolstring(L, -1, &len);
  gj_bc_mapnames(map, names, len);
  lua_pop(L, 1);
  return probe_fr2(L, map, err);
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

/* The words, lines and constants of the function at fidx into the arrays
** (raw's sizes).  The string constants' bytes stay the function's, which
** is on the stack meanwhile. */
static int read_body(lua_State *L, int fidx, gj_bcraw *raw, uint32_t *ins,
                     int32_t *lines, double *knum, const char **kstr,
                     size_t *kstrlen, gj_err *err)
{
  int i, nins = raw->nbc - 1;
  for (i = 0; i < nins; i++) {
    if (push_jitutil(L, "funcbc", err)) return -1;
    lua_pushvalue(L, fidx);
    lua_pushinteger(L, i + 1);
    lua_call(L, 2, 1);
    ins[i] = (uint32_t)lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (funcinfo(L, fidx, i + 1, err)) return -1;
    lines[i] = field_int(L, -1, "currentline");
    lua_pop(L, 1);
  }
  for (i = 0; i < raw->nknum; i++) {
    if (push_jitutil(L, "funck", err)) return -1;
    lua_pushvalue(L, fidx);
    lua_pushinteger(L, i);
    lua_call(L, 2, 1);
    knum[i] = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  for (i = 0; i < raw->nkgc; i++) {
    if (push_jitutil(L, "funck", err)) return -1;
    lua_pushvalue(L, fidx);
    lua_pushinteger(L, -i - 1);
    lua_call(L, 2, 1);
    kstr[i] = NULL;
    if (lua_type(L, -1) == LUA_TSTRING)   /* a constant of the function */
      kstr[i] = lua_tolstring(L, -1, &kstrlen[i]);
    lua_pop(L, 1);
  }
  return 0;
}

int gj_bc_lua_read(lua_State *L, int idx, const gj_bcmap *map, gj_proto *p,
                   gj_err *err)
{
  int fidx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
  int info, rc = -1, n;
  gj_bcraw raw;
  uint32_t *ins = NULL;
  int32_t *lines = NULL;
  double *knum = NULL;
  const char **kstr = NULL;
  size_t *kstrlen = NULL;
  memset(p, 0, sizeof(*p));
  memset(&raw, 0, sizeof(raw));
  if (!lua_isfunction(L, fidx) || lua_iscfunction(L, fidx))
    return gj_err_set(err, "a kernel must be a Lua function");
  if (funcinfo(L, fidx, -1, err)) return -1;
  info = lua_gettop(L);
  lua_getfield(L, info, "source");
  raw.source = lua_tostring(L, -1);   /* the string stays in info */
  lua_pop(L, 1);
  raw.linedefined = field_int(L, info, "linedefined");
  raw.nparams = field_int(L, info, "params");
  raw.framesize = field_int(L, info, "stackslots");
  raw.nuv = field_int(L, info, "upvalues");
  raw.nknum = field_int(L, info, "nconsts");
  raw.nkgc = field_int(L, info, "gcconsts");
  raw.nbc = field_int(L, info, "bytecodes");
  lua_getfield(L, info, "isvararg");
  raw.isvararg = lua_toboolean(L, -1);
  lua_pop(L, 1);
  /* a vararg or empty function is refused before its body is read */
  if (!raw.isvararg && raw.nbc >= 2) {
    n = raw.nbc - 1;
    ins = calloc((size_t)n, sizeof(*ins));
    lines = calloc((size_t)n, sizeof(*lines));
    knum = calloc((size_t)raw.nknum + 1, sizeof(*knum));
    kstr = calloc((size_t)raw.nkgc + 1, sizeof(*kstr));
    kstrlen = calloc((size_t)raw.nkgc + 1, sizeof(*kstrlen));
    if (!ins || !lines || !knum || !kstr || !kstrlen) {
      gj_err_set(err, "out of memory reading bytecode");
      goto done;
    }
    if (read_body(L, fidx, &raw, ins, lines, knum, kstr, kstrlen, err))
      goto done;
    raw.ins = ins;
    raw.lines = lines;
    raw.knum = knum;
    raw.kstr = kstr;
    raw.kstrlen = kstrlen;
  }
  rc = gj_bc_decode(&raw, map, p, err);
done:
  lua_pop(L, 1);   /* info */
  free(ins);
  free(lines);
  free(knum);
  free(kstr);
  free(kstrlen);
  return rc;
}
