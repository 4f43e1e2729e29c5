/*
** Typer: the numeric results -- the type and the range of + - * / % ^ and
** of a numeric for loop's counter (docs/typing.md, "Arithmetic", "Loops",
** "Whole numbers").  gj_typer_step and codegen both call these, so the
** rules live in one place.
*/
#include <math.h>

#include "gj_typer.h"
#include "gj_typer_int.h"

#define GJ_EXACT 9007199254740992.0   /* 2^53 */

/* Negative zero.  LuaJIT's numbers are doubles: -x for x == 0, and a
** product of 0 and a negative number, are -0, which an integer cannot
** hold.  So an integer that stands for a Lua number (every integer but a C
** one, gj_ty.cint, and but an lnum, whose rules are in int_range) gets
** such an operation in double where its operands' bounds do not rule -0
** out; a sum, a difference and a floored remainder of integers are never
** -0.  Unknown bounds (a weak int variable, a value whose range a loop
** widened) may hold anything.  With precision = "single" the kernel does
** not promise LuaJIT's doubles, and integers stay integers. */
static int luanum_int(const gj_cs *cs, gj_ty t)
{
  if (cs && cs->single) return 0;
  return t.k == GJ_T_WINT ||
         (t.k == GJ_T_NUM && gj_scalar_isint((gj_scalar)t.s) && !t.cint && !t.lnum);
}

static int may_zero(gj_ty t)
{
  double lo, hi;
  return !gj_ty_bounds(t, &lo, &hi) || (lo <= 0 && hi >= 0);
}

static int may_neg(gj_ty t)
{
  double lo, hi;
  return !gj_ty_bounds(t, &lo, &hi) || lo < 0;
}

/* The double a -0 result is computed in: a weak float for weak operands. */
static gj_ty negzero_dbl(gj_ty t)
{
  if (t.k == GJ_T_WINT) {
    t.k = GJ_T_WFLT;
    t.hasc = 0;
    return t;
  }
  return gj_ty_num(GJ_F64);
}

/* The range of integer result t = a op b (op + - * %), from its operands'
** bounds.  For an lnum result (a Lua number held as an integer) this is
** where exactness is decided: the integer operation gives what LuaJIT's
** double gives when the exact result is below 2^53 in magnitude and is not
** -0 (a product of 0 and a negative number), and for % when the divisor is
** never 0 (LuaJIT gives NaN) and |a| + |b| < 2^53 (then a - floor(a/b)*b in
** doubles is exact; docs/typing.md has the argument).  Otherwise the result
** is the double, computed from the operands converted exactly. */
static gj_ty int_range(const gj_cs *cs, int op, gj_ty t, gj_ty a, gj_ty b)
{
  gj_ty dbl = gj_ty_num(gj_ty_deffloat(cs));
  double alo, ahi, blo, bhi, lo, hi;
  t.rng = 0;
  if (!gj_ty_bounds(a, &alo, &ahi) || !gj_ty_bounds(b, &blo, &bhi))
    return t.lnum ? dbl : t;
  switch (op) {
  case GJ_BC_ADDVV: lo = alo + blo; hi = ahi + bhi; break;
  case GJ_BC_SUBVV: lo = alo - bhi; hi = ahi - blo; break;
  case GJ_BC_MULVV: {
    double p1 = alo * blo, p2 = alo * bhi, p3 = ahi * blo, p4 = ahi * bhi;
    if (t.lnum && ((alo <= 0 && ahi >= 0 && blo < 0) ||
                   (blo <= 0 && bhi >= 0 && alo < 0)))
      return dbl;   /* may be -0 */
    lo = fmin(fmin(p1, p2), fmin(p3, p4));
    hi = fmax(fmax(p1, p2), fmax(p3, p4));
    break;
  }
  default: {   /* floored %: the sign of b, |r| < |b| (x % 0 is 0) */
    double ma = fmax(fabs(alo), fabs(ahi)), mb = fmax(fabs(blo), fabs(bhi));
    if (t.lnum && ((blo <= 0 && bhi >= 0) || ma + mb >= GJ_EXACT))
      return dbl;
    lo = blo < 0 ? blo + 1 : 0;
    hi = bhi > 0 ? bhi - 1 : 0;
    if (alo >= 0 && blo > 0) hi = fmin(hi, ahi);
    break;
  }
  }
  /* rounding in the bounds' own arithmetic only makes them reach 2^53
  ** sooner: an exact bound of 2^53 or more never compares below it */
  if (!(lo > -GJ_EXACT && hi < GJ_EXACT)) return t.lnum ? dbl : t;
  t.rng = 1;
  t.lo = lo;
  t.hi = hi;
  return t;
}

static int is_cint(gj_ty t)
{
  return t.k == GJ_T_NUM && t.cint && gj_scalar_isint((gj_scalar)t.s);
}

int gj_typer_carith(gj_ty a, gj_ty b, gj_scalar *s)
{
  if (!is_cint(a) && !is_cint(b)) return 0;
  *s = (is_cint(a) && a.s == GJ_U64) || (is_cint(b) && b.s == GJ_U64) ? GJ_U64 : GJ_I64;
  return 1;
}

/* A C integer operation (gj_typer_carith): + - * keep a range where both
** operands have one and the result cannot wrap (then nsw); / % ^ have
** none. */
static gj_ty carith(const gj_cs *cs, int op, gj_scalar s, gj_ty a, gj_ty b)
{
  gj_ty t = gj_ty_num(s);
  t.cint = 1;
  if (op == GJ_BC_ADDVV || op == GJ_BC_SUBVV || op == GJ_BC_MULVV) {
    t = int_range(cs, op, t, a, b);
    if (t.rng && s == GJ_U64 && t.lo < 0) t.rng = 0;
  }
  return t;
}

gj_ty gj_typer_arith(const gj_cs *cs, int op, gj_ty a, gj_ty b)
{
  gj_scalar s64;
  gj_ty t;
  if (gj_typer_carith(a, b, &s64)) return carith(cs, op, s64, a, b);
  t = gj_ty_arith(cs, a, b);
  int folded = a.hasc && b.hasc;
  double c = 0;
  t.hasc = 0;
  switch (op) {
  case GJ_BC_ADDVV: c = a.u.c + b.u.c; break;
  case GJ_BC_SUBVV: c = a.u.c - b.u.c; break;
  case GJ_BC_MULVV: c = a.u.c * b.u.c; break;
  case GJ_BC_MODVV:
    folded = 0;
    break;
  case GJ_BC_DIVVV: case GJ_BC_POW:
    folded = 0;
    if (t.k == GJ_T_WINT) t.k = GJ_T_WFLT;
    else if (t.k == GJ_T_NUM && gj_scalar_isint((gj_scalar)t.s))
      t = gj_ty_num(gj_ty_deffloat(cs));
    break;
  default: break;
  }
  if (folded && (t.k == GJ_T_WINT || t.k == GJ_T_WFLT)) {
    gj_ty f = gj_ty_const(c);
    if (t.k == GJ_T_WFLT) f.k = GJ_T_WFLT;
    return f;
  }
  if (op == GJ_BC_MULVV && luanum_int(cs, t) &&
      ((may_zero(a) && may_neg(b)) || (may_zero(b) && may_neg(a))))
    return negzero_dbl(t);   /* 0 * -3 is -0 */
  if (t.k == GJ_T_NUM && gj_scalar_isint((gj_scalar)t.s) &&
      op != GJ_BC_DIVVV && op != GJ_BC_POW)
    t = int_range(cs, op, t, a, b);
  return t;
}

gj_ty gj_typer_unm(const gj_cs *cs, gj_ty b)
{
  gj_ty a;
  double lo, hi;
  gj_scalar s64;
  if (gj_typer_carith(b, b, &s64)) {   /* lj_carith: -(int64_t)x, in its kind */
    a = gj_ty_num(s64);
    a.cint = 1;
    if (a.s == GJ_I64 && gj_ty_bounds(b, &lo, &hi) && lo > -GJ_EXACT && hi < GJ_EXACT) {
      a.rng = 1;
      a.lo = -hi;
      a.hi = -lo;
    }
    return a;
  }
  a = gj_ty_arith(cs, b, b);
  if (b.hasc) {   /* folded as LuaJIT does: -0 stays a float */
    a = gj_ty_const(-b.u.c);
    if (b.k == GJ_T_WFLT) a.k = GJ_T_WFLT;
    return a;
  }
  if (a.k == GJ_T_NUM && gj_scalar_isint((gj_scalar)a.s) &&
      !gj_scalar_issigned((gj_scalar)a.s)) {
    int cint = a.cint;
    a = gj_ty_num(GJ_I64);
    a.cint = (uint8_t)cint;
  }
  if ((a.lnum || luanum_int(cs, a)) && may_zero(b))
    return a.lnum ? gj_ty_num(gj_ty_deffloat(cs)) : negzero_dbl(a);   /* -0 */
  if (a.k == GJ_T_NUM && gj_scalar_isint((gj_scalar)a.s)) {
    a.rng = 0;
    if (gj_ty_bounds(b, &lo, &hi)) {
      a.rng = 1;
      a.lo = -hi;
      a.hi = -lo;
    }
  }
  return a;
}

gj_ty gj_typer_fortype(const gj_cs *cs, gj_ty start, gj_ty stop, gj_ty step)
{
  int intlike = (start.k == GJ_T_WINT ||
                 (start.k == GJ_T_NUM && gj_scalar_isint((gj_scalar)start.s))) &&
                (step.k == GJ_T_WINT ||
                 (step.k == GJ_T_NUM && gj_scalar_isint((gj_scalar)step.s)));
  gj_ty t;
  if (intlike) {
    double slo, shi, llo, lhi, plo, phi;
    t = gj_ty_arith(cs, start, step);
    if (t.k == GJ_T_WINT) t = gj_ty_num(GJ_I64);
    /* The counter seen in the body lies between start and the limit: its
    ** range, when all three have bounds (an lnum counter needs it, else it
    ** counts in the double it stands for). */
    t.rng = 0;
    if (t.k == GJ_T_NUM && gj_ty_bounds(start, &slo, &shi) &&
        gj_ty_bounds(stop, &llo, &lhi) && gj_ty_bounds(step, &plo, &phi)) {
      t.rng = 1;
      t.lo = plo >= 0 ? slo : fmin(slo, llo);
      t.hi = phi <= 0 ? shi : fmax(shi, lhi);
      if (t.hi < t.lo) t.hi = t.lo;   /* the body never runs */
      /* FORL adds the step once more before the test that ends the loop:
      ** the hidden counter reaches a step past the limit, which a counter
      ** held in 32 bits (narrow_ints) must hold too */
      if (t.hi + fmax(phi, 0) < GJ_EXACT && t.lo + fmin(plo, 0) > -GJ_EXACT) {
        t.hi += fmax(phi, 0);
        t.lo += fmin(plo, 0);
      }
    } else if (t.k == GJ_T_NUM && t.lnum) {
      t = gj_ty_num(gj_ty_deffloat(cs));
    }
  } else {
    t = gj_ty_arith(cs, gj_ty_arith(cs, start, stop), step);
    if (t.k != GJ_T_NUM || gj_scalar_isint((gj_scalar)t.s))
      t = gj_ty_num(gj_ty_deffloat(cs));
  }
  t.hasc = 0;
  return t;
}

/* Ranges refined by conditions (docs/typing.md, "Guards"): on the edge
** where `a < d` (or <=, >, >=) is known to hold, an integer operand's range
** is cut by the other's bounds.  Only when both operands are integers of
** known bounds, compared as signed 64-bit or narrower integers: there the
** comparison in the kernel is the exact comparison of the two values that
** LuaJIT's doubles compare (no NaN, no rounding), so the cut range holds
** every value that can take the edge.  A float, a weak float, an integer
** without bounds (a uint64_t, an int64_t element) cuts nothing. */
static int cuttable(gj_ty t)
{
  return t.k == GJ_T_NUM && gj_scalar_isint((gj_scalar)t.s) && t.s != GJ_U64;
}

static void cut(gj_ty *t, double lo, double hi)
{
  double olo, ohi;
  if (!cuttable(*t) || !gj_ty_bounds(*t, &olo, &ohi)) return;
  lo = fmax(lo, olo);
  hi = fmin(hi, ohi);
  if (lo > hi || (lo == olo && hi == ohi)) return;   /* no value, or no news */
  t->rng = 1;
  t->lo = lo;
  t->hi = hi;
}

void gj_typer_refine(int op, int holds, gj_ty *a, gj_ty *d)
{
  double alo, ahi, dlo, dhi;
  int lt, strict;   /* the edge's relation: a < d (lt) or a > d, or equal */
  if (!gj_ty_bounds(*a, &alo, &ahi) || !gj_ty_bounds(*d, &dlo, &dhi)) return;
  if ((a->k == GJ_T_NUM && a->s == GJ_U64) || (d->k == GJ_T_NUM && d->s == GJ_U64))
    return;
  switch (op) {   /* ISGE and ISGT are the negations of ISLT and ISLE */
  case GJ_BC_ISLT: lt = holds; strict = holds; break;
  case GJ_BC_ISGE: lt = !holds; strict = !holds; break;
  case GJ_BC_ISLE: lt = holds; strict = !holds; break;
  case GJ_BC_ISGT: lt = !holds; strict = holds; break;
  default: return;
  }
  if (lt) {            /* a < d or a <= d */
    cut(a, alo, dhi - strict);
    cut(d, alo + strict, dhi);
  } else {             /* a > d or a >= d */
    cut(a, dlo + strict, ahi);
    cut(d, dlo, ahi - strict);
  }
}
