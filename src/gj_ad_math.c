/*
** The derivative rules of the math functions of the kernel subset
** (src/gj_ad.h, docs/autodiff.md): gj_ad_math gives the tangent of
** y = gj.math.<fn>(x [, z]) for given tangents dx and dz.  Forward mode
** calls it with the operands' tangents, reverse mode with the adjoint in
** one operand's place and 0 in the other's (each rule is linear in dx, dz).
*/
#include <stdio.h>
#include <string.h>

#include "gj_ad_int.h"

int gj_ad_is_zero(LLVMValueRef v)
{
  return LLVMIsAConstant(v) && LLVMIsNull(v);
}

/* a*b with zeros folded, likewise a+b, a-b, -a. */
LLVMValueRef gj_ad_fmul(LLVMBuilderRef B, LLVMValueRef x, LLVMValueRef y)
{
  if (gj_ad_is_zero(x)) return x;
  if (gj_ad_is_zero(y)) return y;
  return LLVMBuildFMul(B, x, y, "");
}

LLVMValueRef gj_ad_fadd(LLVMBuilderRef B, LLVMValueRef x, LLVMValueRef y)
{
  if (gj_ad_is_zero(x)) return y;
  if (gj_ad_is_zero(y)) return x;
  return LLVMBuildFAdd(B, x, y, "");
}

LLVMValueRef gj_ad_fsub(LLVMBuilderRef B, LLVMValueRef x, LLVMValueRef y)
{
  if (gj_ad_is_zero(y)) return x;
  if (gj_ad_is_zero(x)) return LLVMBuildFNeg(B, y, "");
  return LLVMBuildFSub(B, x, y, "");
}

static LLVMValueRef kf(LLVMTypeRef t, double v)
{
  return LLVMConstReal(t, v);
}

/* gj.math.<fn>.<f32|f64>(args) */
static LLVMValueRef mcall(gj_ad *a, const char *fn, LLVMTypeRef t,
                          LLVMValueRef *args, unsigned n)
{
  char name[64];
  LLVMTypeRef ps[2] = { t, t }, fty = LLVMFunctionType(t, ps, n, 0);
  LLVMValueRef f;
  snprintf(name, sizeof(name), "gj.math.%s.%s", fn,
           LLVMGetTypeKind(t) == LLVMFloatTypeKind ? "f32" : "f64");
  f = LLVMGetNamedFunction(a->m, name);
  if (!f) f = LLVMAddFunction(a->m, name, fty);
  return LLVMBuildCall2(a->B, fty, f, args, n, "");
}

/* The tangent of y = gj.math.<fn>(x [, z]) (call: the instruction, for
** messages) for the tangents dx and dz (NULL: unary), built at a->B's
** position; *out, or refused (gj_ad_int.h). */
int gj_ad_math(gj_ad *a, LLVMValueRef call, const char *fn, LLVMValueRef x,
               LLVMValueRef dx, LLVMValueRef z, LLVMValueRef dz, LLVMValueRef y,
               LLVMValueRef *out)
{
  LLVMBuilderRef B = a->B;
  LLVMTypeRef t = LLVMTypeOf(x);
  LLVMValueRef r;
  char what[96];
  if (gj_ad_is_zero(dx) && (!dz || gj_ad_is_zero(dz))) {
    *out = LLVMConstNull(t);
    return 0;
  }
  if (!strcmp(fn, "sqrt")) {               /* dx / (2 y) */
    r = LLVMBuildFDiv(B, dx, LLVMBuildFMul(B, kf(t, 2.0), y, ""), "");
  } else if (!strcmp(fn, "exp")) {
    r = gj_ad_fmul(B, y, dx);
  } else if (!strcmp(fn, "log")) {
    r = LLVMBuildFDiv(B, dx, x, "");
  } else if (!strcmp(fn, "log2") || !strcmp(fn, "log10")) {
    double ln = !strcmp(fn, "log2") ? 0.69314718055994530942 : 2.30258509299404568402;
    r = LLVMBuildFDiv(B, dx, LLVMBuildFMul(B, x, kf(t, ln), ""), "");
  } else if (!strcmp(fn, "sin")) {
    r = gj_ad_fmul(B, mcall(a, "cos", t, &x, 1), dx);
  } else if (!strcmp(fn, "cos")) {
    r = LLVMBuildFNeg(B, gj_ad_fmul(B, mcall(a, "sin", t, &x, 1), dx), "");
  } else if (!strcmp(fn, "tan")) {          /* (1 + y^2) dx */
    r = gj_ad_fmul(B, LLVMBuildFAdd(B, kf(t, 1.0), LLVMBuildFMul(B, y, y, ""), ""), dx);
  } else if (!strcmp(fn, "asin") || !strcmp(fn, "acos")) {   /* ±dx/sqrt(1-x^2) */
    LLVMValueRef s = LLVMBuildFSub(B, kf(t, 1.0), LLVMBuildFMul(B, x, x, ""), "");
    r = LLVMBuildFDiv(B, dx, mcall(a, "sqrt", t, &s, 1), "");
    if (!strcmp(fn, "acos")) r = LLVMBuildFNeg(B, r, "");
  } else if (!strcmp(fn, "atan")) {
    r = LLVMBuildFDiv(B, dx, LLVMBuildFAdd(B, kf(t, 1.0), LLVMBuildFMul(B, x, x, ""), ""), "");
  } else if (!strcmp(fn, "sinh")) {
    r = gj_ad_fmul(B, mcall(a, "cosh", t, &x, 1), dx);
  } else if (!strcmp(fn, "cosh")) {
    r = gj_ad_fmul(B, mcall(a, "sinh", t, &x, 1), dx);
  } else if (!strcmp(fn, "tanh")) {         /* (1 - y^2) dx */
    r = gj_ad_fmul(B, LLVMBuildFSub(B, kf(t, 1.0), LLVMBuildFMul(B, y, y, ""), ""), dx);
  } else if (!strcmp(fn, "fabs")) {         /* sign(x) dx, sign(0) = 0 */
    LLVMValueRef pos = LLVMBuildFCmp(B, LLVMRealOGT, x, LLVMConstNull(t), "");
    LLVMValueRef neg = LLVMBuildFCmp(B, LLVMRealOLT, x, LLVMConstNull(t), "");
    r = LLVMBuildSelect(B, pos, dx,
                        LLVMBuildSelect(B, neg, LLVMBuildFNeg(B, dx, ""), LLVMConstNull(t), ""), "");
  } else if (!strcmp(fn, "floor") || !strcmp(fn, "ceil") || !strcmp(fn, "trunc")) {
    r = LLVMConstNull(t);                         /* 0 almost everywhere */
  } else if (!strcmp(fn, "pow")) {
    /* d(x^z) = z x^(z-1) dx + log(x) x^z dz; the dz term only where dz is
    ** not 0 (log(x) is NaN for x < 0, where a constant exponent is fine) */
    LLVMValueRef e[2];
    e[0] = x;
    e[1] = LLVMBuildFSub(B, z, kf(t, 1.0), "");
    r = gj_ad_is_zero(dx) ? dx : gj_ad_fmul(B, gj_ad_fmul(B, z, mcall(a, "pow", t, e, 2)), dx);
    if (!gj_ad_is_zero(dz)) {
      LLVMValueRef lg = gj_ad_fmul(B, gj_ad_fmul(B, mcall(a, "log", t, &x, 1), y), dz);
      LLVMValueRef nz = LLVMBuildFCmp(B, LLVMRealUNE, dz, LLVMConstNull(t), "");
      r = gj_ad_fadd(B, r, LLVMBuildSelect(B, nz, lg, LLVMConstNull(t), ""));
    }
  } else if (!strcmp(fn, "atan2")) {        /* (x dz - z dx) / (x^2 + z^2) */
    LLVMValueRef den = LLVMBuildFAdd(B, LLVMBuildFMul(B, x, x, ""),
                                     LLVMBuildFMul(B, z, z, ""), "");
    /* atan2(x, z): x is y, z is the x of atan2(y, x) */
    r = LLVMBuildFDiv(B, gj_ad_fsub(B, gj_ad_fmul(B, z, dx), gj_ad_fmul(B, x, dz)), den, "");
  } else if (!strcmp(fn, "fmod")) {         /* dx - trunc(x/z) dz */
    LLVMValueRef q = LLVMBuildFDiv(B, x, z, "");
    r = gj_ad_fsub(B, dx, gj_ad_fmul(B, mcall(a, "trunc", t, &q, 1), dz));
  } else {
    snprintf(what, sizeof(what), "math function '%s' has no derivative rule", fn);
    return gj_ad_refuse(a, call, what);
  }
  *out = r;
  return 0;
}

