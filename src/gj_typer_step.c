/*
** Typer: the rule for each instruction (docs/typing.md); calls and
** returns are gj_typer_call.c's, intrinsics gj_typer_intr.c's.
** Unsupported constructs are rejected here, with the line of the
** instruction, so codegen only sees code it can compile.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gj_intr.h"
#include "gj_typer.h"
#include "gj_typer_int.h"

#define S(x) (st->slot[(x)])

gj_ty gj_ty_kind(int k)
{
  gj_ty t;
  memset(&t, 0, sizeof(t));
  t.k = (uint8_t)k;
  return t;
}

static gj_ty ty_bool(int hasc, int v)
{
  gj_ty t = gj_ty_kind(GJ_T_BOOL);
  t.s = GJ_BOOL;
  t.hasc = (uint8_t)hasc;
  t.u.c = v;
  return t;
}

gj_ty gj_ty_const(double v)
{
  gj_ty t = gj_ty_kind(GJ_T_WFLT);
  if (v == floor(v) && fabs(v) < 9007199254740992.0 && !(v == 0 && signbit(v)))
    t.k = GJ_T_WINT;
  t.hasc = 1;
  t.u.c = v;
  return t;
}

int gj_ty_truth(gj_ty t)
{
  switch (t.k) {
  case GJ_T_NIL: return 0;
  case GJ_T_BOOL: return t.hasc ? (t.u.c != 0) : -1;
  default: return 1;
  }
}

/* Read a slot that may hold a string: only moves and call arguments do
** (a string is the type name of gpu.shared and gpu.local_array).  A value
** of mixed types is an error here, where it is used. */
int gj_typer_rd_any(gj_cs *cs, gj_fn *fn, int i, gj_tstate *st, int slot,
                  gj_ty *out)
{
  gj_ty t = S(slot);
  if (t.k == GJ_T_CONFLICT) {
    char b[200];
    gj_ty_str(cs, t, b, sizeof(b));
    return gj_typer_error(cs, fn, i, "a value here may be %s", b);
  }
  if (t.k == GJ_T_UNDEF) t.k = GJ_T_NIL;
  *out = t;
  return 0;
}

int gj_typer_rd(gj_cs *cs, gj_fn *fn, int i, gj_tstate *st, int slot, gj_ty *out)
{
  if (gj_typer_rd_any(cs, fn, i, st, slot, out)) return -1;
  if (out->k == GJ_T_STR)
    return gj_typer_error(cs, fn, i, "strings are not supported in kernels "
                                     "(a string may only name the element "
                                     "type of gpu.shared or gpu.local_array)");
  return 0;
}

/* A type name ("float", "int32_t", ...) as a GJ_T_STR. */
static gj_ty ty_str(const char *name)
{
  gj_ty t = gj_ty_kind(GJ_T_STR);
  gj_scalar sc;
  t.s = (uint8_t)(name && gj_scalar_parse(name, &sc) == 0 ? sc : GJ_SCALAR__MAX);
  t.u.origin = (uint64_t)(uintptr_t)name;   /* print's text */
  return t;
}

int gj_typer_num_operand(gj_cs *cs, gj_fn *fn, int i, gj_ty t,
                         const char *what)
{
  char b[200];
  if (gj_ty_isnumeric(t)) return 0;
  gj_ty_str(cs, t, b, sizeof(b));
  return gj_typer_error(cs, fn, i, "%s on %s", what, b);
}

/* --- Known values ------------------------------------------------------ */

/* The handle of fn's own function in cs->src. */
static int fn_handle(const gj_cs *cs, const gj_fn *fn)
{
  return fn->kv < 0 ? cs->src->kernel : cs->kv[fn->kv].h;
}

/* Table or function h as a known value: the entry it already has, or a
** new one that keeps h. */
int gj_typer_resolve_kv(gj_cs *cs, const char *name, int h,
                        const gj_kvinfo *info, gj_ty *out)
{
  gj_kvsrc *src = cs->src;
  int k;
  for (k = 0; k < cs->nkv; k++) {
    if (src->ops->same(src, cs->kv[k].h, h)) {
      src->ops->release(src, h);
      *out = gj_ty_kind(GJ_T_KV);
      out->aux = k;
      return 0;
    }
  }
  if (cs->nkv == cs->maxkv) {
    int m = cs->maxkv ? cs->maxkv * 2 : 16;
    gj_kv *n = realloc(cs->kv, sizeof(gj_kv) * (size_t)m);
    if (!n) {
      src->ops->release(src, h);
      return gj_err_set(cs->err, "out of memory");
    }
    cs->kv = n;
    cs->maxkv = m;
  }
  {
    gj_kv *kv = &cs->kv[cs->nkv];
    memset(kv, 0, sizeof(*kv));
    snprintf(kv->name, sizeof(kv->name), "%s", name);
    kv->intr = info->intr ? gj_intr_lookup(info->intr) : -1;
    kv->kind = info->cls == GJ_KVC_TABLE ? GJ_KV_TABLE
             : kv->intr >= 0            ? GJ_KV_INTR
                                        : GJ_KV_FUNC;
    kv->h = h;
    kv->base0 = info->base0;
    kv->ci64 = info->i64;
  }
  *out = gj_ty_kind(GJ_T_KV);
  out->aux = cs->nkv++;
  return 0;
}

/* Value h (the handle is this function's to keep or release) reached as
** `name`, as a type: numbers and booleans are constants, tables and
** functions known values. */
int gj_typer_resolve(gj_cs *cs, gj_fn *fn, int i, const char *name, int h,
                     gj_ty *out)
{
  gj_kvsrc *src = cs->src;
  gj_kvinfo info;
  src->ops->classify(src, h, &info);
  switch (info.cls) {
  case GJ_KVC_TABLE: case GJ_KVC_FUNCTION:
    return gj_typer_resolve_kv(cs, name, h, &info, out);
  case GJ_KVC_NUMBER: *out = gj_ty_const(info.num); break;
  case GJ_KVC_BOOLEAN: *out = ty_bool(1, info.num != 0); break;
  case GJ_KVC_STRING: *out = ty_str(info.str); break;  /* only a type name */
  case GJ_KVC_NIL: *out = gj_ty_kind(GJ_T_NIL); break;  /* only in comparisons */
  case GJ_KVC_CTYPE:
    /* an FFI ctype of a number type, e.g. ffi.typeof("float"), is a type
    ** name like the string "float", but no text for print (Lua writes
    ** "ctype<float>"): print refuses it */
    *out = ty_str(info.str);
    out->u.origin = 0;
    if (out->s != GJ_SCALAR__MAX) break;
    if (info.layout) {   /* a struct's ctype: its constructor */
      int sid;
      if (gj_cs_struct(cs, info.layout, &sid)) {
        src->ops->release(src, h);
        return gj_typer_error(cs, fn, i, "'%s': %s", name, cs->err->msg);
      }
      out->sid = (uint8_t)(sid + 1);
      break;
    }
    src->ops->release(src, h);
    return gj_typer_error(cs, fn, i, "'%s' is an FFI ctype that is not a "
                                     "number type", name);
  default:
    src->ops->release(src, h);
    /* a boxed number (int64_t, or a struct value's 64-bit integer field):
    ** constant data holds such numbers only as array elements */
    return gj_typer_error(cs, fn, i, "'%s' is a %s, which a kernel cannot use%s",
                          name, info.str, strcmp(info.str, "cdata") == 0 ?
                          " (a boxed number such as an int64_t: pass it as an "
                          "argument, or keep it in an FFI array, which a kernel "
                          "reads as constant data)" : "");
  }
  src->ops->release(src, h);   /* the strings stay (gj_kv.h) */
  return 0;
}

/* Field `key` of known table kv (or index when key is NULL). */
static int resolve_field(gj_cs *cs, gj_fn *fn, int i, int kv, const char *key,
                         int idx, gj_ty *out)
{
  char name[160];
  if (key) snprintf(name, sizeof(name), "%s.%s", cs->kv[kv].name, key);
  else snprintf(name, sizeof(name), "%s[%d]", cs->kv[kv].name, idx);
  return gj_typer_resolve(cs, fn, i, name,
                 cs->src->ops->field(cs->src, cs->kv[kv].h, key, idx), out);
}

static int resolve_upvalue(gj_cs *cs, gj_fn *fn, int i, int uv, gj_ty *out)
{
  const char *nm;
  char name[96];
  int h;
  nm = cs->src->ops->upvalue(cs->src, fn_handle(cs, fn), uv, &h);
  if (!nm) return gj_typer_error(cs, fn, i, "bad upvalue %d", uv);
  snprintf(name, sizeof(name), "%s", *nm ? nm : "?");
  return gj_typer_resolve(cs, fn, i, name, h, out);
}

static int resolve_global(gj_cs *cs, gj_fn *fn, int i, const char *name,
                          gj_ty *out)
{
  return gj_typer_resolve(cs, fn, i, name,
                 cs->src->ops->global(cs->src, fn_handle(cs, fn), name), out);
}

/* --- Arithmetic -------------------------------------------------------- */

/* The VV form of an arithmetic op (gj_typer_arith, gj_typer_num.c). */
static int arith_vv(int op)
{
  switch (op) {
  case GJ_BC_ADDVN: case GJ_BC_ADDNV: case GJ_BC_ADDVV: return GJ_BC_ADDVV;
  case GJ_BC_SUBVN: case GJ_BC_SUBNV: case GJ_BC_SUBVV: return GJ_BC_SUBVV;
  case GJ_BC_MULVN: case GJ_BC_MULNV: case GJ_BC_MULVV: return GJ_BC_MULVV;
  case GJ_BC_DIVVN: case GJ_BC_DIVNV: case GJ_BC_DIVVV: return GJ_BC_DIVVV;
  case GJ_BC_MODVN: case GJ_BC_MODNV: case GJ_BC_MODVV: return GJ_BC_MODVV;
  default: return GJ_BC_POW;
  }
}

/* --- Arrays ------------------------------------------------------------ */

static int index_check(gj_cs *cs, gj_fn *fn, int i, gj_ty arr, gj_ty idx)
{
  char b[200];
  if (arr.k != GJ_T_ARR) {
    if (arr.k == GJ_T_KV && cs->kv[arr.aux].kind == GJ_KV_TABLE)
      return gj_typer_error(cs, fn, i, "table '%s' can only be indexed with "
                                       "constant names or numbers in a kernel",
                            cs->kv[arr.aux].name);
    gj_ty_str(cs, arr, b, sizeof(b));
    return gj_typer_error(cs, fn, i, "attempt to index %s", b);
  }
  return gj_typer_num_operand(cs, fn, i, idx, "indexing an array");
}

/* Is row value a (an ARR) of the type of b's rows (b an ARR with nd > 0):
** the same element, the same dimensions (its own length, the previous
** level's first dimension, included)? */
static int same_row(const gj_cs *cs, gj_ty a, gj_ty b)
{
  const gj_shape *ab, *bb = &cs->shapes[b.shp - 1];
  if (a.k != GJ_T_ARR || a.shp < 2 || a.s != b.s || a.sid != b.sid ||
      a.nd != b.nd - 1 || cs->shapes[a.shp - 1].level == 0)
    return 0;
  ab = &cs->shapes[a.shp - 2];   /* a's parent level: a's length is dims[0] */
  return ab->n == bb->n && memcmp(ab->dims, bb->dims, sizeof(int64_t) * (size_t)bb->n) == 0;
}

/* --- Struct fields ------------------------------------------------------ */

/* The field name of struct reference ref (instruction i), or an error
** naming the struct and the field. */
static int struct_field(gj_cs *cs, gj_fn *fn, int i, gj_ty ref,
                        const char *name, const gj_field **out)
{
  const gj_struct *st = gj_ty_struct(cs, ref);
  *out = name ? gj_struct_field(cs->structs, ref.sid - 1, name) : NULL;
  if (*out) return 0;
  return gj_typer_error(cs, fn, i, "no field '%s' in %s%s",
                        name ? name : "?", gj_struct_word(st->name), st->name);
}

/* ref.name = v (TSETS on a struct reference). */
static int store_field(gj_cs *cs, gj_fn *fn, int i, gj_ty ref,
                       const char *name, gj_ty v)
{
  const gj_field *f;
  const char *sn = gj_ty_struct(cs, ref)->name;
  if (struct_field(cs, fn, i, ref, name, &f)) return -1;
  if (f->count || f->scalar >= GJ_SCALAR__MAX)
    return gj_typer_error(cs, fn, i, "cannot assign to field '%s' of %s%s: "
                                     "it is %s; assign its fields or "
                                     "elements", name, gj_struct_word(sn), sn,
                          f->count ? "a fixed array" : "a struct");
  if (!gj_ty_isnumeric(v) && v.k != GJ_T_BOOL) {
    char b[200];
    gj_ty_str(cs, v, b, sizeof(b));
    return gj_typer_error(cs, fn, i, "cannot store %s into field '%s' of "
                                     "%s%s", b, name, gj_struct_word(sn), sn);
  }
  fn->wmask |= ref.u.origin;
  return 0;
}

/* --- One instruction --------------------------------------------------- */

int gj_typer_step(gj_cs *cs, gj_fn *fn, int i, gj_tstate *st, gj_edges *ed)
{
  const gj_proto *p = fn->proto;
  const gj_ins *in = &p->ins[i];
  gj_ty a, b, c;
  int mr;
  ed->dead = 0;
  mr = gj_typer_meta_step(cs, fn, i, st, ed);   /* metatypes */
  if (mr) return mr < 0 ? -1 : 0;
  switch (in->op) {
  case GJ_BC_ISLT: case GJ_BC_ISGE: case GJ_BC_ISLE: case GJ_BC_ISGT:
    if (gj_typer_rd(cs, fn, i, st, in->a, &a) || gj_typer_rd(cs, fn, i, st, in->d, &b)) return -1;
    if (gj_typer_num_operand(cs, fn, i, a, "comparison") ||
        gj_typer_num_operand(cs, fn, i, b, "comparison"))
      return -1;
    return 0;
  case GJ_BC_ISEQV: case GJ_BC_ISNEV: case GJ_BC_ISEQN: case GJ_BC_ISNEN:
  case GJ_BC_ISEQP: case GJ_BC_ISNEP: {
    int eq;   /* 1 equal, 0 unequal, -1 known at run time */
    if (gj_typer_rd(cs, fn, i, st, in->a, &a)) return -1;
    if (in->op == GJ_BC_ISEQV || in->op == GJ_BC_ISNEV) {
      if (gj_typer_rd(cs, fn, i, st, in->d, &b)) return -1;
    } else if (in->op == GJ_BC_ISEQN || in->op == GJ_BC_ISNEN) {
      b = gj_ty_const(p->knum[in->d]);
    } else {
      b = in->d == 0 ? gj_ty_kind(GJ_T_NIL) : ty_bool(1, in->d == 2);
    }
    if (gj_ty_isnumeric(a) && gj_ty_isnumeric(b)) eq = -1;
    else if (a.k != b.k) eq = 0;
    else if (a.k == GJ_T_NIL) eq = 1;
    else if (a.k == GJ_T_BOOL) eq = (a.hasc && b.hasc) ? a.u.c == b.u.c : -1;
    else if (a.k == GJ_T_KV) eq = a.aux == b.aux;
    else eq = -1;   /* arrays: compared by address */
    if (eq >= 0) {
      int jump = (in->op == GJ_BC_ISEQV || in->op == GJ_BC_ISEQN ||
                  in->op == GJ_BC_ISEQP) ? eq : !eq;
      ed->live[1] = jump;
      ed->live[0] = !jump;
    }
    return 0;
  }
  case GJ_BC_ISEQS: case GJ_BC_ISNES:
    /* a string constant (the key an __index function is given) compared
    ** with one: decided while typing */
    if (gj_typer_rd_any(cs, fn, i, st, in->a, &a)) return -1;
    if (a.k == GJ_T_STR && a.u.origin && p->kstr[in->d]) {
      int eq = strcmp((const char *)(uintptr_t)a.u.origin, p->kstr[in->d]) == 0;
      int jump = in->op == GJ_BC_ISEQS ? eq : !eq;
      ed->live[1] = jump;
      ed->live[0] = !jump;
      return 0;
    }
    return gj_typer_error(cs, fn, i, "strings are not supported in kernels");
  case GJ_BC_KSTR:
    S(in->a) = ty_str(p->kstr[in->d]);
    return 0;
  case GJ_BC_ISTC: case GJ_BC_ISFC: case GJ_BC_IST: case GJ_BC_ISF: {
    int t;
    if (gj_typer_rd(cs, fn, i, st, in->d, &b)) return -1;
    t = gj_ty_truth(b);
    if (t >= 0) {
      int jump = (in->op == GJ_BC_ISTC || in->op == GJ_BC_IST) ? t : !t;
      ed->live[1] = jump;
      ed->live[0] = !jump;
    }
    if (in->op == GJ_BC_ISTC || in->op == GJ_BC_ISFC) {
      ed->copy_a = in->a;
      ed->copy_d = in->d;
    }
    return 0;
  }
  case GJ_BC_MOV:
    if (gj_typer_rd_any(cs, fn, i, st, in->d, &b)) return -1;
    S(in->a) = b;
    return 0;
  case GJ_BC_NOT: {
    int t;
    if (gj_typer_rd(cs, fn, i, st, in->d, &b)) return -1;
    t = gj_ty_truth(b);
    S(in->a) = ty_bool(t >= 0, t == 0);
    return 0;
  }
  case GJ_BC_UNM:
    if (gj_typer_rd(cs, fn, i, st, in->d, &b)) return -1;
    if (gj_typer_num_operand(cs, fn, i, b, "unary minus")) return -1;
    a = gj_typer_unm(cs, b);
    S(in->a) = a;
    return 0;
  case GJ_BC_LEN:
    if (gj_typer_rd(cs, fn, i, st, in->d, &b)) return -1;
    if (b.k != GJ_T_ARR || b.space != GJ_SPACE_GLOBAL) {
      char s[200];
      gj_ty_str(cs, b, s, sizeof(s));
      return gj_typer_error(cs, fn, i, "attempt to get the length of %s%s", s,
                            b.k == GJ_T_ARR ? " (a shared or local array: its "
                                              "size is the constant it was "
                                              "made with)" : "");
    }
    fn->lmask |= b.u.origin;
    S(in->a) = gj_ty_num(GJ_I64);
    return 0;
  case GJ_BC_ADDVN: case GJ_BC_SUBVN: case GJ_BC_MULVN: case GJ_BC_DIVVN:
  case GJ_BC_MODVN:
    if (gj_typer_rd(cs, fn, i, st, in->b, &b)) return -1;
    c = gj_ty_const(p->knum[in->c]);
    if (gj_typer_num_operand(cs, fn, i, b, "arithmetic")) return -1;
    S(in->a) = gj_typer_arith(cs, arith_vv(in->op), b, c);
    return 0;
  case GJ_BC_ADDNV: case GJ_BC_SUBNV: case GJ_BC_MULNV: case GJ_BC_DIVNV:
  case GJ_BC_MODNV:
    if (gj_typer_rd(cs, fn, i, st, in->b, &b)) return -1;
    c = gj_ty_const(p->knum[in->c]);
    if (gj_typer_num_operand(cs, fn, i, b, "arithmetic")) return -1;
    S(in->a) = gj_typer_arith(cs, arith_vv(in->op), c, b);
    return 0;
  case GJ_BC_ADDVV: case GJ_BC_SUBVV: case GJ_BC_MULVV: case GJ_BC_DIVVV:
  case GJ_BC_MODVV: case GJ_BC_POW:
    if (gj_typer_rd(cs, fn, i, st, in->b, &b) || gj_typer_rd(cs, fn, i, st, in->c, &c)) return -1;
    if (gj_typer_num_operand(cs, fn, i, b, "arithmetic") ||
        gj_typer_num_operand(cs, fn, i, c, "arithmetic"))
      return -1;
    S(in->a) = gj_typer_arith(cs, arith_vv(in->op), b, c);
    return 0;
  case GJ_BC_CAT:
    return gj_typer_error(cs, fn, i, "string concatenation (..) is not "
                                     "supported in kernels");
  case GJ_BC_KCDATA:
    return gj_typer_error(cs, fn, i, "cdata literals (such as 1LL) are not "
                                     "supported in kernels");
  case GJ_BC_KSHORT:
    S(in->a) = gj_ty_const((double)(int16_t)in->d);
    return 0;
  case GJ_BC_KNUM:
    S(in->a) = gj_ty_const(p->knum[in->d]);
    return 0;
  case GJ_BC_KPRI:
    S(in->a) = in->d == 0 ? gj_ty_kind(GJ_T_NIL) : ty_bool(1, in->d == 2);
    return 0;
  case GJ_BC_KNIL: {
    int s;
    for (s = in->a; s <= (int)in->d; s++) S(s) = gj_ty_kind(GJ_T_NIL);
    return 0;
  }
  case GJ_BC_UGET:
    return resolve_upvalue(cs, fn, i, in->d, &S(in->a));
  case GJ_BC_USETV: case GJ_BC_USETS: case GJ_BC_USETN: case GJ_BC_USETP: {
    const char *nm = cs->src->ops->upvalue(cs->src, fn_handle(cs, fn), in->a,
                                           NULL);
    return gj_typer_error(cs, fn, i, "assigning to upvalue '%s' is not "
                                     "supported in kernels (upvalues are "
                                     "read once, as constants)",
                          nm ? nm : "?");
  }
  case GJ_BC_UCLO: case GJ_BC_JMP: case GJ_BC_LOOP:
    return 0;
  case GJ_BC_FNEW:
    return gj_typer_error(cs, fn, i, "closures cannot be created inside a "
                                     "kernel (define the function outside)");
  case GJ_BC_TNEW: case GJ_BC_TDUP:
    return gj_typer_error(cs, fn, i, "table constructors are not supported "
                                     "in kernels");
  case GJ_BC_GGET:
    if (!p->kstr[in->d]) return gj_typer_error(cs, fn, i, "bad global name");
    return resolve_global(cs, fn, i, p->kstr[in->d], &S(in->a));
  case GJ_BC_GSET:
    return gj_typer_error(cs, fn, i, "assigning to global '%s' is not "
                                     "supported in kernels",
                          p->kstr[in->d] ? p->kstr[in->d] : "?");
  case GJ_BC_TGETS:
    if (gj_typer_rd(cs, fn, i, st, in->b, &b)) return -1;
    if (b.k == GJ_T_KV && cs->kv[b.aux].kind == GJ_KV_TABLE && p->kstr[in->c])
      return resolve_field(cs, fn, i, b.aux, p->kstr[in->c], 0, &S(in->a));
    if (b.k == GJ_T_SREF) {
      const gj_field *f;
      if (struct_field(cs, fn, i, b, p->kstr[in->c], &f)) return -1;
      fn->rmask |= b.u.origin;
      S(in->a) = gj_ty_read(cs, gj_ty_field(b, f));
      return 0;
    }
    {
      char s[200];
      gj_ty_str(cs, b, s, sizeof(s));
      return gj_typer_error(cs, fn, i, "attempt to index %s with '%s'", s,
                            p->kstr[in->c] ? p->kstr[in->c] : "?");
    }
  case GJ_BC_TGETB:
    if (gj_typer_rd(cs, fn, i, st, in->b, &b)) return -1;
    if (b.k == GJ_T_KV && cs->kv[b.aux].kind == GJ_KV_TABLE && cs->kv[b.aux].ci64)
      return gj_typer_const_table(cs, fn, i, b.aux, gj_ty_const(in->c), &S(in->a));
    if (b.k == GJ_T_KV && cs->kv[b.aux].kind == GJ_KV_TABLE)
      return resolve_field(cs, fn, i, b.aux, NULL, in->c + cs->kv[b.aux].base0, &S(in->a));
    if (b.k == GJ_T_CROW)
      return gj_typer_const_row(cs, fn, i, b, gj_ty_const(in->c), &S(in->a));
    if (index_check(cs, fn, i, b, gj_ty_const(in->c))) return -1;
    if (!(b.shp && b.nd > 0)) fn->rmask |= b.u.origin;   /* a row reads nothing */
    S(in->a) = gj_ty_read(cs, gj_ty_elem(b));
    return 0;
  case GJ_BC_TGETV: case GJ_BC_TGETR:
    if (gj_typer_rd(cs, fn, i, st, in->b, &b) || gj_typer_rd(cs, fn, i, st, in->c, &c)) return -1;
    if (b.k == GJ_T_KV && cs->kv[b.aux].kind == GJ_KV_TABLE && c.hasc &&
        c.k == GJ_T_WINT && !cs->kv[b.aux].ci64)
      return resolve_field(cs, fn, i, b.aux, NULL, (int)c.u.c + cs->kv[b.aux].base0,
                           &S(in->a));
    if (b.k == GJ_T_KV && cs->kv[b.aux].kind == GJ_KV_TABLE)
      return gj_typer_const_table(cs, fn, i, b.aux, c, &S(in->a));
    if (b.k == GJ_T_CROW) return gj_typer_const_row(cs, fn, i, b, c, &S(in->a));
    if (index_check(cs, fn, i, b, c)) return -1;
    if (!(b.shp && b.nd > 0)) fn->rmask |= b.u.origin;   /* a row reads nothing */
    S(in->a) = gj_ty_read(cs, gj_ty_elem(b));
    return 0;
  case GJ_BC_TSETV: case GJ_BC_TSETR: case GJ_BC_TSETB:
    if (gj_typer_rd(cs, fn, i, st, in->b, &b) || gj_typer_rd(cs, fn, i, st, in->a, &a)) return -1;
    if (in->op == GJ_BC_TSETB) c = gj_ty_const(in->c);
    else if (gj_typer_rd(cs, fn, i, st, in->c, &c)) return -1;
    if ((b.k == GJ_T_KV && cs->kv[b.aux].kind == GJ_KV_TABLE) || b.k == GJ_T_CROW)
      return gj_typer_error(cs, fn, i, "assigning to table '%s'%s is not "
                                       "supported in kernels (a table a kernel "
                                       "reads is constant data)",
                            cs->kv[b.aux].name, b.k == GJ_T_CROW ? " (to a "
                            "table in it)" : "");
    if (index_check(cs, fn, i, b, c)) return -1;
    if (b.shp && b.nd > 0) {   /* a[y] = r: a copy of row r, as LuaJIT's */
      char t[200], u[200];
      if (same_row(cs, a, b)) {
        fn->rmask |= a.u.origin;
        fn->wmask |= b.u.origin;
        return 0;
      }
      gj_ty_str(cs, b, t, sizeof(t));
      gj_ty_str(cs, a, u, sizeof(u));
      return gj_typer_error(cs, fn, i, "cannot store %s into a row of %s: a row "
                                       "takes a row of the same type (a copy) "
                                       "or its elements are assigned "
                                       "(a[y][x] = v)", u, t);
    }
    if (b.sid ? !(a.k == GJ_T_SREF && a.sid == b.sid)
              : !gj_ty_isnumeric(a) && a.k != GJ_T_BOOL) {
      char s[200], t[200];
      gj_ty_str(cs, a, s, sizeof(s));
      gj_ty_str(cs, b, t, sizeof(t));
      if (!b.sid)
        return gj_typer_error(cs, fn, i, "cannot store %s into an array "
                                         "element", s);
      return gj_typer_error(cs, fn, i, "cannot store %s into an element of %s",
                            s, t);
    }
    if (a.k == GJ_T_SREF) fn->rmask |= a.u.origin;   /* a copy reads it */
    fn->wmask |= b.u.origin;
    return 0;
  case GJ_BC_TSETS:
    if (gj_typer_rd(cs, fn, i, st, in->b, &b)) return -1;
    if (b.k == GJ_T_SREF) {
      if (gj_typer_rd(cs, fn, i, st, in->a, &a)) return -1;
      return store_field(cs, fn, i, b, p->kstr[in->c], a);
    }
    if (b.k == GJ_T_KV && cs->kv[b.aux].kind == GJ_KV_TABLE)
      return gj_typer_error(cs, fn, i, "assigning to table '%s' (field '%s') is "
                                       "not supported in kernels (a table a "
                                       "kernel reads is constant data)",
                            cs->kv[b.aux].name, p->kstr[in->c] ? p->kstr[in->c] : "?");
    /* fall through */
  case GJ_BC_TSETM:
    return gj_typer_error(cs, fn, i, "assigning to table fields is not "
                                     "supported in kernels");
  case GJ_BC_CALL: case GJ_BC_CALLM: case GJ_BC_CALLT: case GJ_BC_CALLMT:
    return gj_typer_call(cs, fn, i, st, ed);
  case GJ_BC_RET0: case GJ_BC_RET1: case GJ_BC_RET: case GJ_BC_RETM:
    return gj_typer_ret(cs, fn, i, st);
  case GJ_BC_ITERC: case GJ_BC_ITERN: case GJ_BC_ISNEXT: case GJ_BC_ITERL:
    return gj_typer_error(cs, fn, i, "generic for loops (pairs, ipairs, next) "
                                     "are not supported in kernels");
  case GJ_BC_VARG:
    return gj_typer_error(cs, fn, i, "varargs (...) are not supported in "
                                     "kernels");
  case GJ_BC_FORI: {
    gj_ty t;
    if (gj_typer_rd(cs, fn, i, st, in->a, &a) || gj_typer_rd(cs, fn, i, st, in->a + 1, &b) ||
        gj_typer_rd(cs, fn, i, st, in->a + 2, &c))
      return -1;
    if (gj_typer_num_operand(cs, fn, i, a, "'for' initial value") ||
        gj_typer_num_operand(cs, fn, i, b, "'for' limit") ||
        gj_typer_num_operand(cs, fn, i, c, "'for' step"))
      return -1;
    t = gj_typer_fortype(cs, a, b, c);
    S(in->a) = S(in->a + 1) = S(in->a + 2) = S(in->a + 3) = t;
    return 0;
  }
  case GJ_BC_FORL:
    S(in->a + 3) = S(in->a);
    return 0;
  default:
    return gj_typer_error(cs, fn, i, "%s is not supported in kernels "
                                     "(bytecode %s)",
                          in->op == GJ_BC_ISTYPE || in->op == GJ_BC_ISNUM
                              ? "a type check"
                              : "this construct",
                          gj_bc_names[in->op]);
  }
}
