/*
** The typer's value types (gj_ty, declared in gj_typer.h): the lattice of
** docs/typing.md, joins, promotion, names.  Not the type table of element
** kinds and signatures, which is gj_type.c.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gj_typer.h"

gj_ty gj_ty_num(gj_scalar s)
{
  gj_ty t;
  memset(&t, 0, sizeof(t));
  t.k = s == GJ_BOOL ? GJ_T_BOOL : GJ_T_NUM;
  t.s = (uint8_t)s;
  return t;
}

gj_scalar gj_ty_deffloat(const gj_cs *cs)
{
  return cs && cs->single ? GJ_F32 : GJ_F64;
}

gj_scalar gj_ty_scalar(const gj_cs *cs, gj_ty t)
{
  switch (t.k) {
  case GJ_T_BOOL: return GJ_BOOL;
  case GJ_T_NUM:
    if (cs && cs->narrow32 && t.s == GJ_I64 && t.rng && !t.cint &&
        t.lo >= -2147483648.0 && t.hi <= 2147483647.0)
      return GJ_I32;
    return (gj_scalar)t.s;
  case GJ_T_WINT: return GJ_I64;
  case GJ_T_WFLT: return gj_ty_deffloat(cs);
  default: return GJ_SCALAR__MAX;
  }
}

int gj_ty_isnumeric(gj_ty t)
{
  return t.k == GJ_T_NUM || t.k == GJ_T_WINT || t.k == GJ_T_WFLT;
}

/* 2^53: doubles hold every integer of smaller magnitude. */
#define GJ_EXACT 9007199254740992.0

int gj_ty_bounds(gj_ty t, double *lo, double *hi)
{
  gj_scalar s = (gj_scalar)t.s;
  int bits;
  if (t.k == GJ_T_WINT && t.hasc) {   /* gj_ty_const: below 2^53, not -0 */
    *lo = *hi = t.u.c;
    return 1;
  }
  if (t.k != GJ_T_NUM || !gj_scalar_isint(s)) return 0;
  if (t.rng) {
    *lo = t.lo;
    *hi = t.hi;
    return 1;
  }
  bits = gj_scalar_bits(s);
  if (bits > 32) return 0;
  *lo = gj_scalar_issigned(s) ? -ldexp(1.0, bits - 1) : 0.0;
  *hi = gj_scalar_issigned(s) ? ldexp(1.0, bits - 1) - 1 : ldexp(1.0, bits) - 1;
  return 1;
}

gj_ty gj_ty_lnum(const gj_cs *cs, double lo, double hi)
{
  gj_ty t;
  if (!(lo > -GJ_EXACT && hi < GJ_EXACT)) return gj_ty_num(gj_ty_deffloat(cs));
  t = gj_ty_num(GJ_I64);
  t.rng = t.lnum = 1;
  t.lo = lo;
  t.hi = hi;
  return t;
}

/* Two string constants (GJ_T_STR: u.origin is the text, or 0) agree. */
static int same_text(gj_ty a, gj_ty b)
{
  const char *x = (const char *)(uintptr_t)a.u.origin;
  const char *y = (const char *)(uintptr_t)b.u.origin;
  return x == y || (x && y && strcmp(x, y) == 0);
}

int gj_ty_eq(gj_ty a, gj_ty b)
{
  if (a.k != b.k) return 0;
  switch (a.k) {
  case GJ_T_NUM:
    return a.s == b.s && a.lnum == b.lnum && a.cint == b.cint && a.rng == b.rng &&
           (!a.rng || (a.lo == b.lo && a.hi == b.hi));
  case GJ_T_ARR:
    return a.s == b.s && a.sid == b.sid && a.space == b.space && a.shp == b.shp &&
           a.nd == b.nd && (a.space != GJ_SPACE_GLOBAL || a.aux == b.aux);
  case GJ_T_SREF:
    return a.sid == b.sid && a.space == b.space;
  case GJ_T_KV: return a.aux == b.aux;
  case GJ_T_CROW: return a.aux == b.aux && a.s == b.s;
  case GJ_T_STR: return a.s == b.s && same_text(a, b);
  default: return 1;
  }
}

gj_ty gj_ty_elem(gj_ty arr)
{
  gj_ty t;
  if (arr.shp && arr.nd > 0) {   /* a row: the next level */
    t = arr;
    t.shp++;
    t.nd--;
    return t;
  }
  if (arr.sid) {
    memset(&t, 0, sizeof(t));
    t.k = GJ_T_SREF;
    t.sid = arr.sid;
    t.space = arr.space;
    t.u.origin = arr.u.origin;
    /* an element of a fixed array in a struct made with its ctype: taken
    ** as made here (returned by value) */
    t.aux = arr.space == GJ_SPACE_LOCAL;
    return t;
  }
  t = gj_ty_num((gj_scalar)arr.s);
  t.cint = arr.s == GJ_I64 || arr.s == GJ_U64;   /* cdata in LuaJIT */
  return t;
}

int64_t gj_ty_elem_bytes(const gj_cs *cs, gj_ty t)
{
  int64_t b = t.sid ? (int64_t)gj_ty_struct(cs, t)->size : gj_scalar_size((gj_scalar)t.s);
  int k;
  if (t.shp && t.nd > 0) {
    const gj_shape *sh = &cs->shapes[t.shp - 1];
    for (k = 0; k < sh->n; k++) b *= sh->dims[k];
  }
  return b;
}

gj_ty gj_ty_read(const gj_cs *cs, gj_ty t)
{
  if (cs && cs->lua && t.k == GJ_T_NUM && t.s == GJ_F32) return gj_ty_num(GJ_F64);
  return t;
}

const gj_struct *gj_ty_struct(const gj_cs *cs, gj_ty t)
{
  if ((t.k != GJ_T_ARR && t.k != GJ_T_SREF) || !t.sid || !cs || !cs->structs)
    return NULL;
  return &cs->structs->s[t.sid - 1];
}

gj_ty gj_ty_returned(gj_ty t, int nargs, const gj_ty *args)
{
  gj_ty r = t;
  int j;
  if (t.k != GJ_T_SREF || t.space != GJ_SPACE_LOCAL) return t;
  if (t.aux) {   /* by value: a new object */
    r.u.origin = 0;
    return r;
  }
  r.u.origin = 0;
  for (j = 0; j < nargs && j < 64; j++)
    if (((t.u.origin >> j) & 1) && args[j].k == GJ_T_SREF) {
      r.u.origin |= args[j].u.origin;
      r.aux |= args[j].aux;
    }
  return r;
}

gj_ty gj_ty_field(gj_ty ref, const gj_field *f)
{
  gj_ty t;
  memset(&t, 0, sizeof(t));
  t.k = GJ_T_ARR;
  t.space = ref.space;
  t.u.origin = ref.u.origin;
  if (f->scalar < GJ_SCALAR__MAX) t.s = f->scalar;
  else t.sid = (uint8_t)(f->sid + 1);
  if (f->count) {               /* a fixed array: no tag, its length known */
    if (t.space != GJ_SPACE_GLOBAL) t.aux = (int32_t)f->count;
    return t;
  }
  t = gj_ty_elem(t);            /* one value: as an element of such arrays */
  if (t.k == GJ_T_SREF && t.space == GJ_SPACE_LOCAL) t.aux = ref.aux;
  return t;
}

static int width(gj_scalar s) { return gj_scalar_size(s); }

static gj_scalar int_of(int bytes, int issigned)
{
  switch (bytes) {
  case 1: return issigned ? GJ_I8 : GJ_U8;
  case 2: return issigned ? GJ_I16 : GJ_U16;
  case 4: return issigned ? GJ_I32 : GJ_U32;
  default: return issigned ? GJ_I64 : GJ_U64;
  }
}

/* Integer arithmetic is done in 64 bits (as Numba does), so that sums and
** products of narrower values never wrap where LuaJIT's doubles would not. */
static gj_scalar promote(gj_scalar s)
{
  return (gj_scalar_isint(s) && s != GJ_U64) ? GJ_I64 : s;
}

/* Two different integer kinds meeting at a merge: the narrowest kind that
** holds both; mixed signedness goes to the next signed width, capped at
** int64_t. */
static gj_scalar int_join(gj_scalar a, gj_scalar b)
{
  int sa, sb, wa, wb, w;
  if (a == b) return a;
  sa = gj_scalar_issigned(a);
  sb = gj_scalar_issigned(b);
  wa = width(a);
  wb = width(b);
  if (sa == sb) return wa >= wb ? a : b;
  if (sa && wa > wb) return a;
  if (sb && wb > wa) return b;
  w = (wa > wb ? wa : wb) * 2;
  return int_of(w > 8 ? 8 : w, 1);
}

/* Does integer kind s hold the weak integer w (a constant known to fit)? */
static int weak_fits(gj_scalar s, gj_ty w)
{
  double lo, hi;
  int bits = width(s) * 8;
  if (!w.hasc || w.u.c != (double)(int64_t)w.u.c) return 0;
  if (bits >= 64) return !(s == GJ_U64 && w.u.c < 0);
  lo = gj_scalar_issigned(s) ? -ldexp(1.0, bits - 1) : 0.0;
  hi = gj_scalar_issigned(s) ? ldexp(1.0, bits - 1) - 1 : ldexp(1.0, bits) - 1;
  return w.u.c >= lo && w.u.c <= hi;
}

static uint32_t code(gj_ty t)
{
  /* a struct reference: its space (where the struct lives) for messages */
  return (uint32_t)t.k | ((uint32_t)(t.k == GJ_T_SREF ? t.space : t.s) << 4);
}

static gj_ty conflict(gj_ty a, gj_ty b)
{
  gj_ty t;
  memset(&t, 0, sizeof(t));
  t.k = GJ_T_CONFLICT;
  if (a.k == GJ_T_CONFLICT) return a;
  if (b.k == GJ_T_CONFLICT) return b;
  t.aux = (int32_t)(code(a) | (code(b) << 8));
  return t;
}

/* An integer join t of a and b gets the hull of their bounds. */
static gj_ty hull(gj_ty t, gj_ty a, gj_ty b)
{
  double alo, ahi, blo, bhi;
  if (t.k == GJ_T_NUM && gj_scalar_isint((gj_scalar)t.s) &&
      gj_ty_bounds(a, &alo, &ahi) && gj_ty_bounds(b, &blo, &bhi)) {
    t.rng = 1;
    t.lo = fmin(alo, blo);
    t.hi = fmax(ahi, bhi);
  }
  return t;
}

static gj_ty num_join_(const gj_cs *cs, gj_ty a, gj_ty b);

/* A C integer meeting a number gives a C integer (LuaJIT: cdata arithmetic
** on a number and a cdata integer gives cdata). */
static gj_ty num_join(const gj_cs *cs, gj_ty a, gj_ty b)
{
  gj_ty t = num_join_(cs, a, b);
  if (t.k == GJ_T_NUM && gj_scalar_isint((gj_scalar)t.s) && !t.lnum)
    t.cint = (a.k == GJ_T_NUM && a.cint) || (b.k == GJ_T_NUM && b.cint);
  return t;
}

static gj_ty num_join_(const gj_cs *cs, gj_ty a, gj_ty b)
{
  gj_ty t;
  memset(&t, 0, sizeof(t));
  /* A Lua number held as an integer meets another integer of known bounds:
  ** an lnum on the hull; anything else (a float, a weak float, an integer
  ** that may be 2^53 or more): the double it stands for (the default
  ** float: `float` with precision = "single"). */
  if ((a.k == GJ_T_NUM && a.lnum) || (b.k == GJ_T_NUM && b.lnum)) {
    double alo, ahi, blo, bhi;
    if (gj_ty_bounds(a, &alo, &ahi) && gj_ty_bounds(b, &blo, &bhi))
      return gj_ty_lnum(cs, fmin(alo, blo), fmax(ahi, bhi));
    return gj_ty_num(gj_ty_deffloat(cs));
  }
  if (a.k == GJ_T_NUM && b.k == GJ_T_NUM) {
    gj_scalar sa = (gj_scalar)a.s, sb = (gj_scalar)b.s;
    if (gj_scalar_isfloat(sa) || gj_scalar_isfloat(sb)) {
      if (gj_scalar_isfloat(sa) && gj_scalar_isfloat(sb))
        return gj_ty_num(sa == GJ_F64 || sb == GJ_F64 ? GJ_F64 : GJ_F32);
      return gj_ty_num(gj_scalar_isfloat(sa) ? sa : sb);
    }
    return hull(gj_ty_num(int_join(sa, sb)), a, b);
  }
  if (a.k == GJ_T_NUM || b.k == GJ_T_NUM) {
    gj_ty n = a.k == GJ_T_NUM ? a : b, w = a.k == GJ_T_NUM ? b : a;
    if (w.k == GJ_T_WFLT && gj_scalar_isint((gj_scalar)n.s))
      return gj_ty_num(gj_ty_deffloat(cs));
    /* A weak integer meeting a narrow integer kind (`c and u8[i] or -5`)
    ** may not fit in it: the join is then the promoted kind, as LuaJIT's
    ** numbers hold both values. */
    if (w.k == GJ_T_WINT && gj_scalar_isint((gj_scalar)n.s) &&
        !weak_fits((gj_scalar)n.s, w))
      return hull(gj_ty_num(promote((gj_scalar)n.s) == GJ_U64 ? GJ_I64 : promote((gj_scalar)n.s)), a, b);
    return hull(gj_ty_num((gj_scalar)n.s), a, b);
  }
  /* both weak (two different integer constants at a loop header: see
  ** gj_ty_join_loop) */
  t.k = (a.k == GJ_T_WINT && b.k == GJ_T_WINT) ? GJ_T_WINT : GJ_T_WFLT;
  if (a.hasc && b.hasc && a.u.c == b.u.c) {
    t.hasc = 1;
    t.u.c = a.u.c;
  }
  return t;
}

/* gj_ty_join at a loop header (a back edge's state meeting the entry's).
** Two different integer constants there are a counter's start and its next
** value (`c = 0 ... c = c + 1`): an integer on the hull, as a weak int
** materializes (int64_t), so that a guard or a loop can bound it
** (docs/typing.md, "Guards").  Only there: elsewhere two constants meeting
** stay a weak int, which keeps what folds from constants (a gpu.shared
** count of a kernel whose barriers make joins) folding. */
gj_ty gj_ty_join_loop(const gj_cs *cs, gj_ty a, gj_ty b)
{
  if (a.k == GJ_T_WINT && b.k == GJ_T_WINT && a.hasc && b.hasc && a.u.c != b.u.c)
    return hull(gj_ty_num(GJ_I64), a, b);
  return gj_ty_join(cs, a, b);
}

gj_ty gj_ty_join(const gj_cs *cs, gj_ty a, gj_ty b)
{
  if (a.k == GJ_T_UNDEF) return b;
  if (b.k == GJ_T_UNDEF) return a;
  if (gj_ty_isnumeric(a) && gj_ty_isnumeric(b)) return num_join(cs, a, b);
  if (a.k != b.k) return conflict(a, b);
  switch (a.k) {
  case GJ_T_NIL:
    return a;
  case GJ_T_BOOL:
    if (!(a.hasc && b.hasc && a.u.c == b.u.c)) a.hasc = 0;
    return a;
  case GJ_T_SREF:
    if (a.sid != b.sid || a.space != b.space) return conflict(a, b);
    a.u.origin |= b.u.origin;
    a.aux |= b.aux;
    return a;
  case GJ_T_ARR:
    if (a.s != b.s || a.sid != b.sid || a.space != b.space || a.shp != b.shp ||
        a.nd != b.nd)
      return conflict(a, b);
    a.u.origin |= b.u.origin;
    if (a.space == GJ_SPACE_GLOBAL && a.aux != b.aux) {
      /* several arguments: the first index stays known if they agree */
      int base = GJ_ARR_TAG_BASE(a.aux);
      a.aux = a.aux && b.aux && base == GJ_ARR_TAG_BASE(b.aux) ? GJ_ARR_TAG(-1, base) : 0;
    }
    return a;
  case GJ_T_KV:
    return a.aux == b.aux ? a : conflict(a, b);
  case GJ_T_CROW:
    return a.aux == b.aux && a.s == b.s ? a : conflict(a, b);
  case GJ_T_STR:
    return a.s == b.s && same_text(a, b) ? a : conflict(a, b);
  default:
    return conflict(a, b);
  }
}

gj_ty gj_ty_arith(const gj_cs *cs, gj_ty a, gj_ty b)
{
  gj_ty t = num_join(cs, a, b);
  if (t.k == GJ_T_NUM) {
    gj_scalar p = promote((gj_scalar)t.s);
    if (p != t.s) {
      gj_ty w = hull(gj_ty_num(p), t, t);   /* the narrow kind's range */
      w.lnum = t.lnum;
      w.cint = t.cint;
      t = w;
    }
  }
  return t;
}

static const char *kind_name(const gj_cs *cs, int k, int s, char *buf,
                             size_t n)
{
  switch (k) {
  case GJ_T_UNDEF: return "no value";
  case GJ_T_NIL: return "nil";
  case GJ_T_BOOL: return "a boolean";
  case GJ_T_NUM:
    snprintf(buf, n, "a number (%s)", gj_scalar_name((gj_scalar)s));
    return buf;
  case GJ_T_WINT: return "a number (integer literal)";
  case GJ_T_WFLT: return "a number (float literal)";
  case GJ_T_ARR:
    snprintf(buf, n, "an array (%s[])", gj_scalar_name((gj_scalar)s));
    return buf;
  case GJ_T_KV: return "a table or function";
  case GJ_T_CROW: return "a table of constant data";
  case GJ_T_STR: return "a string";
  case GJ_T_SREF:
    return s == GJ_SPACE_LOCAL ? "a struct made in the kernel"
                               : "a struct in an array argument";
  default: (void)cs; return "a value of mixed types";
  }
}

void gj_ty_str(const gj_cs *cs, gj_ty t, char *buf, size_t n)
{
  char b1[64], b2[64];
  if (t.k == GJ_T_CONFLICT) {
    snprintf(buf, n, "%s or %s",
             kind_name(cs, t.aux & 15, (t.aux >> 4) & 15, b1, sizeof(b1)),
             kind_name(cs, (t.aux >> 8) & 15, (t.aux >> 12) & 15, b2,
                       sizeof(b2)));
    return;
  }
  if (t.k == GJ_T_KV && cs && t.aux >= 0 && t.aux < cs->nkv) {
    const gj_kv *kv = &cs->kv[t.aux];
    snprintf(buf, n, "%s '%s'", kv->kind == GJ_KV_TABLE ? "table" : "function",
             kv->name);
    return;
  }
  if (t.k == GJ_T_CROW && cs && t.aux >= 0 && t.aux < cs->nkv) {
    snprintf(buf, n, "a table in table '%s'", cs->kv[t.aux].name);
    return;
  }
  if (t.k == GJ_T_NUM && t.lnum) {
    snprintf(buf, n, "a number (lua_int)");
    return;
  }
  if (t.k == GJ_T_ARR && t.shp && cs) {
    /* "a multi-dimensional array (float[][3][4])", "a row of a
    ** multi-dimensional array (float[3][4])": a row's own length is its
    ** parent level's first dimension */
    const gj_shape *sh = &cs->shapes[t.shp - 1];
    char dims[(GJ_MAXDIMS + 1) * 24] = "[]";
    size_t o = 2;
    int k;
    if (sh->level > 0)
      o = (size_t)snprintf(dims, sizeof(dims), "[%lld]", (long long)cs->shapes[t.shp - 2].dims[0]);
    for (k = 0; k < sh->n && o < sizeof(dims); k++)
      o += (size_t)snprintf(dims + o, sizeof(dims) - o, "[%lld]", (long long)sh->dims[k]);
    snprintf(buf, n, "%s (%s%s)", sh->level ? "a row of a multi-dimensional array"
                                            : "a multi-dimensional array",
             gj_ty_struct(cs, t) ? gj_ty_struct(cs, t)->name : gj_scalar_name((gj_scalar)t.s),
             dims);
    return;
  }
  if (gj_ty_struct(cs, t)) {
    const char *nm = gj_ty_struct(cs, t)->name;
    if (t.k == GJ_T_ARR) snprintf(buf, n, "an array (%s[])", nm);
    else snprintf(buf, n, "a %s%s", gj_struct_word(nm), nm);
    return;
  }
  snprintf(buf, n, "%s", kind_name(cs, t.k, t.s, b1, sizeof(b1)));
}
