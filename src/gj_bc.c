/*
** Frontend: decoding LuaJIT bytecode (see gj_bc.h).  The words, constants
** and line numbers come read already (gj_bc_lua.c reads them through
** jit.util); this file needs no Lua stack.
*/
#include "gj_bc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gj_bc_names[GJ_BC__MAX] = {
#define GJ_BCNAME(name) #name,
  GJ_BCDEF(GJ_BCNAME)
#undef GJ_BCNAME
};

void gj_bc_mapnames(gj_bcmap *map, const char *names, size_t len)
{
  size_t n, i;
  memset(map->op, GJ_BC__MAX, sizeof(map->op));
  for (n = 0; n * 6 + 6 <= len && n < 256; n++) {
    char nm[7];
    size_t k = 6;
    memcpy(nm, names + n * 6, 6);
    while (k > 0 && nm[k - 1] == ' ') k--;
    nm[k] = '\0';
    for (i = 0; i < GJ_BC__MAX; i++)
      if (strcmp(nm, gj_bc_names[i]) == 0) { map->op[n] = (uint8_t)i; break; }
  }
}

int gj_bc_mapfr2(gj_bcmap *map, const uint32_t *ins, int n, gj_err *err)
{
  int pc, fr2 = -1, callbase = -1, kbase = -1;
  for (pc = 0; pc < n; pc++) {
    if (map->op[ins[pc] & 0xff] == GJ_BC_KSHORT)
      kbase = (int)((ins[pc] >> 8) & 0xff);
    if (map->op[ins[pc] & 0xff] == GJ_BC_CALL)
      callbase = (int)((ins[pc] >> 8) & 0xff);
  }
  if (callbase >= 0 && kbase > callbase) fr2 = kbase - callbase - 1;
  if (fr2 != 0 && fr2 != 1)
    return gj_err_set(err, "gpujit: cannot tell this LuaJIT's call frame layout");
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

int gj_bc_decode(const gj_bcraw *raw, const gj_bcmap *map, gj_proto *p,
                 gj_err *err)
{
  int i;
  memset(p, 0, sizeof(*p));
  chunk_name(p->chunk, sizeof(p->chunk), raw->source);
  p->linedefined = raw->linedefined;
  p->nparams = raw->nparams;
  p->framesize = raw->framesize;
  p->nuv = raw->nuv;
  p->nknum = raw->nknum;
  p->nkgc = raw->nkgc;
  if (raw->isvararg)
    return gj_err_set(err, "%s:%d: vararg functions (...) are not supported",
                      p->chunk, p->linedefined);
  if (raw->nbc < 2) return gj_err_set(err, "%s: empty function", p->chunk);
  p->nins = raw->nbc - 1;
  p->ins = calloc((size_t)p->nins, sizeof(gj_ins));
  p->knum = calloc((size_t)p->nknum + 1, sizeof(double));
  p->kstr = calloc((size_t)p->nkgc + 1, sizeof(char *));
  if (!p->ins || !p->knum || !p->kstr) {
    gj_bc_free(p);
    return gj_err_set(err, "out of memory reading bytecode");
  }
  for (i = 0; i < p->nins; i++) {
    gj_ins *in = &p->ins[i];
    uint32_t ins = raw->ins[i];
    int pc = i + 1, op;
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
    in->line = raw->lines[i];
  }
  /* FORL's own D is a trace number once the loop is compiled (JFORL); its
  ** target is always the instruction after the FORI that exits past it. */
  for (i = 0; i < p->nins; i++) {
    gj_ins *in = &p->ins[i];
    if (in->op == GJ_BC_FORI && in->target >= 1 && in->target <= p->nins &&
        p->ins[in->target - 1].op == GJ_BC_FORL)
      p->ins[in->target - 1].target = i + 1;
  }
  for (i = 0; i < p->nknum; i++) p->knum[i] = raw->knum[i];
  for (i = 0; i < p->nkgc; i++) {
    if (!raw->kstr[i]) continue;
    p->kstr[i] = malloc(raw->kstrlen[i] + 1);
    if (p->kstr[i]) {
      memcpy(p->kstr[i], raw->kstr[i], raw->kstrlen[i]);
      p->kstr[i][raw->kstrlen[i]] = '\0';
    }
  }
  if (gj_bc_check(p, map->fr2, err)) goto fail;
  return 0;
fail:
  gj_bc_free(p);
  return -1;
}

void gj_bc_free(gj_proto *p)
{
  int i;
  if (p->kstr)
    for (i = 0; i < p->nkgc; i++) free(p->kstr[i]);
  free(p->kstr);
  free(p->knum);
  free(p->ins);
  p->kstr = NULL;
  p->knum = NULL;
  p->ins = NULL;
}
