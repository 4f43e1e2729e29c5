/*
** Typer: metatypes (docs/typing.md, "Metatypes").  An arithmetic
** operation, comparison, unary minus, length or name lookup that has a
** struct operand is, in LuaJIT, a call of a metamethod of the struct's
** ffi.metatype; here it is a call of that function as a device function.
** The frontend finds the function (gj_kvops.meta); the dispatch between
** two operands is LuaJIT's (lj_carith.c, lj_carith_meta): the left
** operand's metamethod if it is a struct that has one, else the right's;
** == with neither operand's __eq compares addresses, any other operation
** without a metamethod is an error, as LuaJIT raises one.
*/
#include <stdio.h>
#include <string.h>

#include "gj_typer_int.h"

/* The metamethod of an arithmetic instruction. */
static const char *arith_mm(int op)
{
  switch (op) {
  case GJ_BC_ADDVN: case GJ_BC_ADDNV: case GJ_BC_ADDVV: return "__add";
  case GJ_BC_SUBVN: case GJ_BC_SUBNV: case GJ_BC_SUBVV: return "__sub";
  case GJ_BC_MULVN: case GJ_BC_MULNV: case GJ_BC_MULVV: return "__mul";
  case GJ_BC_DIVVN: case GJ_BC_DIVNV: case GJ_BC_DIVVV: return "__div";
  case GJ_BC_MODVN: case GJ_BC_MODNV: case GJ_BC_MODVV: return "__mod";
  default: return "__pow";
  }
}

/* A slot's type as an argument (nothing reached it yet: nil). */
static gj_ty slot_ty(const gj_tstate *st, int s)
{
  gj_ty t = st->slot[s];
  if (t.k == GJ_T_UNDEF) t.k = GJ_T_NIL;
  return t;
}

/* Value h, what the frontend found as metamethod mm of struct st, as the
** known function *kv (the handle is this function's to keep or release);
** -1 in *kv when it is nil. */
static int mm_function(gj_cs *cs, gj_fn *fn, int i, const gj_struct *st,
                       const char *mm, int h, int *kv)
{
  gj_kvsrc *src = cs->src;
  gj_kvinfo info;
  gj_ty out;
  char name[96];
  *kv = -1;
  src->ops->classify(src, h, &info);
  if (info.cls == GJ_KVC_NIL) {
    src->ops->release(src, h);
    return 0;
  }
  if (info.cls != GJ_KVC_FUNCTION || info.cfunc || info.intr) {
    src->ops->release(src, h);
    return gj_typer_error(cs, fn, i, "%s of %s%s is %s: kernels call "
                                     "metamethods written in Lua",
                          mm, gj_struct_word(st->name), st->name,
                          info.cls == GJ_KVC_FUNCTION ? "a C function"
                                                      : "not a function");
  }
  snprintf(name, sizeof(name), "%s.%s", st->name, mm);
  if (gj_typer_resolve_kv(cs, name, h, &info, &out)) return -1;
  *kv = out.aux;
  return 0;
}

/* Metamethod mm of the struct t is (when t is a struct reference). */
static int lookup(gj_cs *cs, gj_fn *fn, int i, gj_ty t, const char *mm,
                  int *kv)
{
  const gj_struct *st;
  int isfn, h;
  *kv = -1;
  if (t.k != GJ_T_SREF) return 0;
  st = gj_ty_struct(cs, t);
  h = cs->src->ops->meta(cs->src, st->name, mm, NULL, &isfn);
  return mm_function(cs, fn, i, st, mm, h, kv);
}

/* LuaJIT's dispatch of a binary operation: the left operand's metamethod,
** else the right's. */
static int dispatch2(gj_cs *cs, gj_fn *fn, int i, const char *mm, gj_meta *m)
{
  gj_ty a = m->args[0], b = m->args[1];
  if (lookup(cs, fn, i, a, mm, &m->kv)) return -1;
  if (m->kv < 0 && !(a.k == GJ_T_SREF && b.k == GJ_T_SREF && a.sid == b.sid) &&
      lookup(cs, fn, i, b, mm, &m->kv))
    return -1;
  if (m->kv >= 0 || strcmp(mm, "__eq") == 0) return 0;
  {
    const gj_struct *st = gj_ty_struct(cs, a.k == GJ_T_SREF ? a : b);
    return gj_typer_error(cs, fn, i, "%s%s has no %s", gj_struct_word(st->name),
                          st->name, mm);
  }
}

/* TGETS on struct reference m->args[0] with a name that is no field of it:
** the struct's __index.  0 with m->kv -1 and m->value nil when it has
** none (the caller's error). */
static int index_mm(gj_cs *cs, gj_fn *fn, int i, const char *key, gj_meta *m)
{
  const gj_struct *st = gj_ty_struct(cs, m->args[0]);
  gj_kvsrc *src = cs->src;
  char name[160];
  int isfn, h = src->ops->meta(src, st->name, "__index", key, &isfn);
  gj_scalar sc;
  if (isfn) {
    /* __index(obj, key): the key is a string constant, which the
    ** function may compare with constants (folded while typing) */
    if (mm_function(cs, fn, i, st, "__index", h, &m->kv)) return -1;
    m->nargs = 2;
    m->args[1] = gj_ty_kind(GJ_T_STR);
    m->args[1].s = (uint8_t)(gj_scalar_parse(key, &sc) == 0 ? sc : GJ_SCALAR__MAX);
    m->args[1].u.origin = (uint64_t)(uintptr_t)key;
    return 0;
  }
  snprintf(name, sizeof(name), "%s.%s", st->name, key);
  return gj_typer_resolve(cs, fn, i, name, h, &m->value);
}

int gj_typer_meta(gj_cs *cs, gj_fn *fn, int i, const gj_tstate *st,
                  gj_meta *m)
{
  const gj_proto *p = fn->proto;
  const gj_ins *in = &p->ins[i];
  const char *mm;
  gj_ty res[GJ_MAXRET];
  int nout = 0, j;
  memset(m, 0, sizeof(*m));
  m->kv = -1;
  m->nargs = 2;
  m->slot[0] = m->slot[1] = -1;
  switch (in->op) {
  case GJ_BC_ADDVN: case GJ_BC_SUBVN: case GJ_BC_MULVN: case GJ_BC_DIVVN:
  case GJ_BC_MODVN:
    m->slot[0] = in->b;
    m->args[1] = gj_ty_const(p->knum[in->c]);
    mm = arith_mm(in->op);
    break;
  case GJ_BC_ADDNV: case GJ_BC_SUBNV: case GJ_BC_MULNV: case GJ_BC_DIVNV:
  case GJ_BC_MODNV:
    m->args[0] = gj_ty_const(p->knum[in->c]);
    m->slot[1] = in->b;
    mm = arith_mm(in->op);
    break;
  case GJ_BC_ADDVV: case GJ_BC_SUBVV: case GJ_BC_MULVV: case GJ_BC_DIVVV:
  case GJ_BC_MODVV: case GJ_BC_POW:
    m->slot[0] = in->b;
    m->slot[1] = in->c;
    mm = arith_mm(in->op);
    break;
  case GJ_BC_UNM:   /* LuaJIT passes the operand twice */
    m->slot[0] = m->slot[1] = in->d;
    mm = "__unm";
    break;
  case GJ_BC_LEN:   /* and the operand and nil here (Lua 5.1) */
    m->slot[0] = in->d;
    m->args[1] = gj_ty_kind(GJ_T_NIL);
    mm = "__len";
    break;
  case GJ_BC_ISLT: case GJ_BC_ISGE: case GJ_BC_ISLE: case GJ_BC_ISGT:
    m->slot[0] = in->a;
    m->slot[1] = in->d;
    mm = in->op == GJ_BC_ISLT || in->op == GJ_BC_ISGE ? "__lt" : "__le";
    m->negate = in->op == GJ_BC_ISGE || in->op == GJ_BC_ISGT;
    break;
  case GJ_BC_ISEQV: case GJ_BC_ISNEV: case GJ_BC_ISEQN: case GJ_BC_ISNEN:
  case GJ_BC_ISEQP: case GJ_BC_ISNEP:
    m->slot[0] = in->a;
    if (in->op == GJ_BC_ISEQV || in->op == GJ_BC_ISNEV) m->slot[1] = in->d;
    else if (in->op == GJ_BC_ISEQN || in->op == GJ_BC_ISNEN)
      m->args[1] = gj_ty_const(p->knum[in->d]);
    else if (in->d == 0) m->args[1] = gj_ty_kind(GJ_T_NIL);
    else {
      m->args[1] = gj_ty_kind(GJ_T_BOOL);
      m->args[1].s = GJ_BOOL;
      m->args[1].hasc = 1;
      m->args[1].u.c = in->d == 2;
    }
    mm = "__eq";
    m->negate = in->op == GJ_BC_ISNEV || in->op == GJ_BC_ISNEN ||
                in->op == GJ_BC_ISNEP;
    break;
  case GJ_BC_TGETS:
    m->slot[0] = in->b;
    m->nargs = 1;
    mm = "__index";
    break;
  default:
    return 0;
  }
  for (j = 0; j < 2; j++)
    if (m->slot[j] >= 0) {
      m->args[j] = slot_ty(st, m->slot[j]);
      if (m->args[j].k == GJ_T_CONFLICT) return 0;   /* the rule reports it */
    }
  if (m->args[0].k != GJ_T_SREF && (m->nargs < 2 || m->args[1].k != GJ_T_SREF))
    return 0;
  if (in->op == GJ_BC_TGETS) {
    const char *key = p->kstr[in->c];
    if (!key || gj_struct_field(cs->structs, m->args[0].sid - 1, key)) return 0;
    if (index_mm(cs, fn, i, key, m)) return -1;
    if (m->kv < 0) return m->value.k == GJ_T_NIL ? 0 : 1;
  } else {
    if (dispatch2(cs, fn, i, mm, m)) return -1;
    if (m->kv < 0) return 0;   /* == without __eq: by address */
  }
  if (gj_typer_call_lua(cs, fn, i, m->kv, m->nargs, m->args, res, &nout))
    return -1;
  m->res = nout > 0 ? res[0] : gj_ty_kind(GJ_T_NIL);
  return 1;
}

int gj_typer_meta_new(gj_cs *cs, gj_fn *fn, int i, const gj_struct *st)
{
  gj_kvsrc *src = cs->src;
  gj_kvinfo info;
  int isfn, h = src->ops->meta(src, st->name, "__new", NULL, &isfn);
  src->ops->classify(src, h, &info);
  src->ops->release(src, h);
  if (info.cls == GJ_KVC_NIL) return 0;
  return gj_typer_error(cs, fn, i, "%s%s(...): its metatype has __new, "
                                   "which kernels do not call (they "
                                   "construct as ffi.new does)",
                        gj_struct_word(st->name), st->name);
}

int gj_typer_meta_step(gj_cs *cs, gj_fn *fn, int i, gj_tstate *st,
                       gj_edges *ed)
{
  const gj_ins *in = &fn->proto->ins[i];
  gj_meta m;
  int r = gj_typer_meta(cs, fn, i, st, &m);
  if (r <= 0) return r;
  if (gj_ins_isbranch(in->op)) {   /* on the truth of the result */
    int t = gj_ty_truth(m.res);
    if (t >= 0) {
      int jump = t != m.negate;
      ed->live[1] = jump;
      ed->live[0] = !jump;
    }
    return 1;
  }
  st->slot[in->a] = m.kv < 0 ? m.value : m.res;
  return 1;
}
