/*
** Codegen of values: conversions, arithmetic with Lua's meaning,
** comparisons, and the math/bit/id intrinsics.  Math goes through
** gj.math.<fn>.<f32|f64> calls that each target defines in its job.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gj_cg_int.h"
#include "gj_intr.h"

int gj_cg_lt(const gj_cs *cs, gj_ty t)
{
  static const int8_t of_scalar[GJ_SCALAR__MAX] = {
    LT_I1, LT_I8, LT_I8, LT_I16, LT_I16, LT_I32, LT_I32, LT_I64, LT_I64,
    LT_F32, LT_F64
  };
  gj_scalar s;
  if (t.k == GJ_T_ARR || t.k == GJ_T_SREF) return LT_ARR + t.space;
  if (t.k == GJ_T_CROW) return LT_I32;   /* its node id */
  s = gj_ty_scalar(cs, t);
  return s == GJ_SCALAR__MAX ? -1 : of_scalar[s];
}

LLVMTypeRef gj_cg_type(gj_cg *g, gj_ty t)
{
  int lt = gj_cg_lt(g->cs, t);
  return lt < 0 ? NULL : g->lt[lt];
}

LLVMTypeRef gj_cg_scalar_type(gj_cg *g, gj_scalar s)
{
  return gj_cg_type(g, gj_ty_num(s));
}

LLVMValueRef gj_cg_const(gj_cg *g, gj_ty t)
{
  gj_scalar s = gj_ty_scalar(g->cs, t);
  LLVMTypeRef ty = gj_cg_scalar_type(g, s);
  if (gj_scalar_isfloat(s)) return LLVMConstReal(ty, t.u.c);
  if (s == GJ_BOOL) return LLVMConstInt(ty, t.u.c != 0, 0);
  return LLVMConstInt(ty, (unsigned long long)(long long)t.u.c, 1);
}

LLVMValueRef gj_cg_call(gj_cg *g, const char *name, LLVMTypeRef ret,
                        LLVMTypeRef *params, unsigned n, LLVMValueRef *args)
{
  LLVMTypeRef fty = LLVMFunctionType(ret, params, n, 0);
  LLVMValueRef f = LLVMGetNamedFunction(g->M, name);
  if (!f) f = LLVMAddFunction(g->M, name, fty);
  return LLVMBuildCall2(g->B, fty, f, args, n, "");
}

void gj_cg_branch_weights(gj_cg *g, LLVMValueRef br, unsigned first,
                          unsigned second)
{
  LLVMMetadataRef md[3];
  unsigned kind = LLVMGetMDKindIDInContext(g->C, "prof", 4);
  md[0] = LLVMMDStringInContext2(g->C, "branch_weights", 14);
  md[1] = LLVMValueAsMetadata(LLVMConstInt(g->lt[LT_I32], first, 0));
  md[2] = LLVMValueAsMetadata(LLVMConstInt(g->lt[LT_I32], second, 0));
  LLVMSetMetadata(br, kind,
                  LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, md, 3)));
}

/* llvm.fptosi.sat: out-of-range floats saturate and NaN gives 0, where a
** plain fptosi would be poison. */
static LLVMValueRef fptosi_sat(gj_cg *g, LLVMValueRef v, LLVMTypeRef to)
{
  LLVMTypeRef tys[2] = { to, LLVMTypeOf(v) };
  unsigned id = LLVMLookupIntrinsicID("llvm.fptosi.sat", 15);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->M, id, tys, 2);
  LLVMTypeRef fty = LLVMIntrinsicGetType(g->C, id, tys, 2);
  return LLVMBuildCall2(g->B, fty, f, &v, 1, "");
}

LLVMValueRef gj_cg_to_scalar(gj_cg *g, LLVMValueRef v, gj_ty from,
                             gj_scalar ts)
{
  LLVMBuilderRef B = g->B;
  gj_scalar fs = gj_ty_scalar(g->cs, from);
  LLVMTypeRef to = gj_cg_scalar_type(g, ts);
  if (fs == ts) return v;
  if (fs == GJ_BOOL || ts == GJ_BOOL) {
    if (fs == GJ_BOOL)
      return gj_scalar_isfloat(ts) ? LLVMBuildUIToFP(B, v, to, "")
                                   : LLVMBuildZExt(B, v, to, "");
    return gj_scalar_isfloat(fs)
               ? LLVMBuildFCmp(B, LLVMRealUNE, v, LLVMConstReal(LLVMTypeOf(v), 0), "")
               : LLVMBuildICmp(B, LLVMIntNE, v, LLVMConstInt(LLVMTypeOf(v), 0, 0), "");
  }
  if (gj_scalar_isint(fs) && gj_scalar_isint(ts)) {
    int fb = gj_scalar_bits(fs), tb = gj_scalar_bits(ts);
    if (fb == tb) return v;
    if (fb > tb) return LLVMBuildTrunc(B, v, to, "");
    return gj_scalar_issigned(fs) ? LLVMBuildSExt(B, v, to, "")
                                  : LLVMBuildZExt(B, v, to, "");
  }
  if (gj_scalar_isint(fs))
    return gj_scalar_issigned(fs) ? LLVMBuildSIToFP(B, v, to, "")
                                  : LLVMBuildUIToFP(B, v, to, "");
  if (gj_scalar_isfloat(ts))
    return fs == GJ_F32 ? LLVMBuildFPExt(B, v, to, "")
                        : LLVMBuildFPTrunc(B, v, to, "");
  /* float -> integer, exactly as LuaJIT's FFI converts (x86 cvttsd2si):
  ** truncate toward zero; kinds up to 32 bits (but uint32_t) go through
  ** int32_t, uint32_t and int64_t through int64_t, and a value out of that
  ** range (or NaN) gives its minimum; the low bits are then kept. */
  {
    int via32 = gj_scalar_bits(ts) < 32 || ts == GJ_I32;
    LLVMTypeRef vt = via32 ? g->lt[LT_I32] : g->lt[LT_I64];
    double lim = via32 ? 2147483648.0 : 9223372036854775808.0;
    LLVMValueRef d = fs == GJ_F32 ? LLVMBuildFPExt(B, v, g->lt[LT_F64], "") : v;
    LLVMValueRef f64 = LLVMConstReal(g->lt[LT_F64], lim);
    LLVMValueRef inr = LLVMBuildAnd(B,
        LLVMBuildFCmp(B, LLVMRealOLT, d, f64, ""),
        LLVMBuildFCmp(B, via32 ? LLVMRealOGT : LLVMRealOGE, d,
                      LLVMConstReal(g->lt[LT_F64], via32 ? -lim - 1.0 : -lim), ""), "");
    LLVMValueRef r = LLVMBuildSelect(B, inr, fptosi_sat(g, d, vt),
                                     LLVMConstInt(vt, via32 ? 0x80000000ull : 1ull << 63, 0), "");
    if (ts == GJ_U64) {
      /* LuaJIT (as built for x86-64): -1 < d < 2^63 converts directly,
      ** 2^63 <= d < 2^64+2^63 as d - 2^64 wrapped, anything else 2^63. */
      LLVMValueRef tf = LLVMConstReal(g->lt[LT_F64], 18446744073709551616.0);
      LLVMValueRef lowok = LLVMBuildAnd(B,
          LLVMBuildFCmp(B, LLVMRealOGT, d, LLVMConstReal(g->lt[LT_F64], -1.0), ""),
          LLVMBuildFCmp(B, LLVMRealOLT, d, f64, ""), "");
      LLVMValueRef hiok = LLVMBuildAnd(B,
          LLVMBuildFCmp(B, LLVMRealOGE, d, f64, ""),
          LLVMBuildFCmp(B, LLVMRealOLT, d, LLVMConstReal(g->lt[LT_F64], 18446744073709551616.0 + 9223372036854775808.0), ""), "");
      LLVMValueRef hi = fptosi_sat(g, LLVMBuildFSub(B, d, tf, ""), g->lt[LT_I64]);
      r = LLVMBuildSelect(B, lowok, r, LLVMBuildSelect(B, hiok, hi, LLVMConstInt(vt, 1ull << 63, 0), ""), "");
    }
    return gj_scalar_bits(ts) < gj_scalar_bits(via32 ? GJ_I32 : GJ_I64)
               ? LLVMBuildTrunc(B, r, to, "") : r;
  }
}

LLVMValueRef gj_cg_to_elem(gj_cg *g, LLVMValueRef v, gj_ty from, gj_scalar ts)
{
  gj_scalar fs = gj_ty_scalar(g->cs, from);
  /* LuaJIT stores a number through int32_t into kinds of 32 bits or fewer
  ** (but uint32_t): an integer outside int32_t's range gives its minimum,
  ** as the same value held in a double would.  A C integer (cdata)
  ** converts as C converts it, to its low bits. */
  int num = !(from.k == GJ_T_NUM && from.cint);
  if (num && gj_scalar_isint(fs) && gj_scalar_bits(fs) > 32 &&
      (gj_scalar_bits(ts) < 32 || ts == GJ_I32)) {
    LLVMBuilderRef B = g->B;
    LLVMTypeRef t = LLVMTypeOf(v);
    LLVMValueRef lo = LLVMConstInt(t, (unsigned long long)-2147483648LL, 1);
    LLVMValueRef inr = gj_scalar_issigned(fs)
        ? LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntSGE, v, lo, ""),
                       LLVMBuildICmp(B, LLVMIntSLE, v, LLVMConstInt(t, 2147483647, 0), ""), "")
        : LLVMBuildICmp(B, LLVMIntULE, v, LLVMConstInt(t, 2147483647, 0), "");
    v = LLVMBuildSelect(B, inr, v, lo, "");
  }
  /* ... and a negative number into uint64_t gives 2^63 */
  if (num && ts == GJ_U64 && gj_scalar_isint(fs) && gj_scalar_issigned(fs)) {
    LLVMValueRef neg = LLVMBuildICmp(g->B, LLVMIntSLT, v, LLVMConstNull(LLVMTypeOf(v)), "");
    v = gj_cg_to_scalar(g, v, from, ts);
    return LLVMBuildSelect(g->B, neg, LLVMConstInt(LLVMTypeOf(v), 1ull << 63, 0), v, "");
  }
  return gj_cg_to_scalar(g, v, from, ts);
}

LLVMValueRef gj_cg_convert(gj_cg *g, LLVMValueRef v, gj_ty from, gj_ty to)
{
  if (to.k == GJ_T_ARR || from.k == GJ_T_ARR || to.k == GJ_T_SREF ||
      from.k == GJ_T_SREF || to.k == GJ_T_CROW)
    return v;
  return gj_cg_to_scalar(g, v, from, gj_ty_scalar(g->cs, to));
}

static LLVMValueRef math1(gj_cg *g, const char *fn, gj_scalar s,
                          LLVMValueRef a)
{
  char name[64];
  LLVMTypeRef t = gj_cg_scalar_type(g, s);
  snprintf(name, sizeof(name), "gj.math.%s.%s", fn, s == GJ_F32 ? "f32" : "f64");
  return gj_cg_call(g, name, t, &t, 1, &a);
}

static LLVMValueRef math2(gj_cg *g, const char *fn, gj_scalar s,
                          LLVMValueRef a, LLVMValueRef b)
{
  char name[64];
  LLVMTypeRef t = gj_cg_scalar_type(g, s), ps[2] = { t, t };
  LLVMValueRef args[2] = { a, b };
  snprintf(name, sizeof(name), "gj.math.%s.%s", fn, s == GJ_F32 ? "f32" : "f64");
  return gj_cg_call(g, name, t, ps, 2, args);
}

/* |mag| with the sign bit of sgn (float or double), built at B. */
static LLVMValueRef copysign_at(LLVMBuilderRef B, LLVMValueRef mag, LLVMValueRef sgn)
{
  LLVMTypeRef t = LLVMTypeOf(mag);
  int f32 = LLVMGetTypeKind(t) == LLVMFloatTypeKind;
  LLVMTypeRef it = LLVMIntTypeInContext(LLVMGetTypeContext(t), f32 ? 32 : 64);
  LLVMValueRef bit = LLVMConstInt(it, f32 ? 0x80000000ull : 1ull << 63, 0);
  LLVMValueRef m = LLVMBuildAnd(B, LLVMBuildBitCast(B, mag, it, ""), LLVMBuildNot(B, bit, ""), "");
  LLVMValueRef sg = LLVMBuildAnd(B, LLVMBuildBitCast(B, sgn, it, ""), bit, "");
  return LLVMBuildBitCast(B, LLVMBuildOr(B, m, sg, ""), t, "");
}

/* math.floor / math.ceil exactly as LuaJIT's vm_floor/vm_ceil: round |x|
** to nearest by adding and subtracting 2^52 (2^23 for float), put the sign
** back, then step by one toward the requested side.  This differs from C's
** floor/ceil in the sign of some zeros: ceil(-0.75) is +0 in LuaJIT. */
LLVMValueRef gj_cg_floor_at(LLVMModuleRef M, LLVMBuilderRef B, LLVMValueRef x,
                            int ceil)
{
  LLVMTypeRef t = LLVMTypeOf(x);
  int f32 = LLVMGetTypeKind(t) == LLVMFloatTypeKind;
  double big = f32 ? 8388608.0 : 4503599627370496.0;
  LLVMValueRef two = LLVMConstReal(t, big), one = LLVMConstReal(t, 1.0);
  LLVMValueRef ax, r, step, fabs_fn;
  LLVMTypeRef fty = LLVMFunctionType(t, &t, 1, 0);
  const char *fname = f32 ? "gj.math.fabs.f32" : "gj.math.fabs.f64";
  if (!(fabs_fn = LLVMGetNamedFunction(M, fname))) fabs_fn = LLVMAddFunction(M, fname, fty);
  ax = LLVMBuildCall2(B, fty, fabs_fn, &x, 1, "");
  r = LLVMBuildFSub(B, LLVMBuildFAdd(B, ax, two, ""), two, "");
  r = copysign_at(B, r, x);
  step = ceil ? LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, x, r, ""),
                                LLVMBuildFAdd(B, r, one, ""), r, "")
              : LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, x, r, ""),
                                LLVMBuildFSub(B, r, one, ""), r, "");
  /* |x| >= 2^52 (or NaN): x is already integral */
  return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, ax, two, ""), step, x, "");
}

LLVMValueRef gj_cg_floor(gj_cg *g, LLVMValueRef x, gj_scalar s, int ceil)
{
  if (g->opts->ad)   /* a derivative's compile: one call, one rule */
    return math1(g, ceil ? "ceil" : "floor", s, x);
  return gj_cg_floor_at(g->M, g->B, x, ceil);
}

/* An operand of a 64-bit bit.* operation on kind s (int64_t or uint64_t),
** as lj_cconv_ct_tv converts it: a C integer as C does, a number as a store
** into an s element. */
static LLVMValueRef to64(gj_cg *g, LLVMValueRef v, gj_ty t, gj_scalar s)
{
  if (t.k == GJ_T_NUM && t.cint) return gj_cg_to_scalar(g, v, t, s);
  return gj_cg_to_elem(g, v, t, s);
}

/* lj_carith_powu64: x^k modulo 2^64, an internal function of the module
** made on first use (square and multiply; the bits do not depend on the
** order of the products). */
static LLVMValueRef powu64_fn(gj_cg *g)
{
  static const char name[] = "gj.carith.powu64";
  LLVMValueRef f = LLVMGetNamedFunction(g->M, name), x0, k0, one, zero, y, x, k;
  LLVMTypeRef i64 = g->lt[LT_I64], ps[2] = { i64, i64 };
  LLVMBasicBlockRef entry, loop, body, done;
  LLVMBuilderRef B;
  LLVMContextRef c = LLVMGetModuleContext(g->M);
  if (f) return f;
  f = LLVMAddFunction(g->M, name, LLVMFunctionType(i64, ps, 2, 0));
  LLVMSetLinkage(f, LLVMInternalLinkage);
  x0 = LLVMGetParam(f, 0);
  k0 = LLVMGetParam(f, 1);
  one = LLVMConstInt(i64, 1, 0);
  zero = LLVMConstNull(i64);
  entry = LLVMAppendBasicBlockInContext(c, f, "entry");
  loop = LLVMAppendBasicBlockInContext(c, f, "loop");
  body = LLVMAppendBasicBlockInContext(c, f, "body");
  done = LLVMAppendBasicBlockInContext(c, f, "done");
  B = LLVMCreateBuilderInContext(c);
  LLVMPositionBuilderAtEnd(B, entry);
  LLVMBuildBr(B, loop);
  LLVMPositionBuilderAtEnd(B, loop);
  y = LLVMBuildPhi(B, i64, "y");
  x = LLVMBuildPhi(B, i64, "x");
  k = LLVMBuildPhi(B, i64, "k");
  LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntNE, k, zero, ""), body, done);
  LLVMPositionBuilderAtEnd(B, body);
  {
    LLVMValueRef odd = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, k, one, ""), zero, "");
    LLVMValueRef y2 = LLVMBuildSelect(B, odd, LLVMBuildMul(B, y, x, ""), y, "");
    LLVMValueRef x2 = LLVMBuildMul(B, x, x, "");
    LLVMValueRef k2 = LLVMBuildLShr(B, k, one, "");
    LLVMValueRef yin[2] = { one, y2 }, xin[2] = { x0, x2 }, kin[2] = { k0, k2 };
    LLVMBasicBlockRef from[2] = { entry, body };
    LLVMBuildBr(B, loop);
    LLVMAddIncoming(y, yin, from, 2);
    LLVMAddIncoming(x, xin, from, 2);
    LLVMAddIncoming(k, kin, from, 2);
  }
  LLVMPositionBuilderAtEnd(B, done);
  LLVMBuildRet(B, y);
  LLVMDisposeBuilder(B);
  return f;
}

/* / % ^ of C integers a and b of kind s (int64_t or uint64_t), as
** lj_carith_divi64, divu64, modi64, modu64, powi64, powu64: a zero divisor
** gives 2^63's bits, INT64_MIN / -1 gives INT64_MIN and INT64_MIN % -1 0;
** a negative power is 1 for 1, +-1 for -1, INT64_MAX for 0, else 0. */
static LLVMValueRef carith_divmodpow(gj_cg *g, int op, LLVMValueRef a,
                                     LLVMValueRef b, gj_scalar s)
{
  LLVMBuilderRef B = g->B;
  LLVMTypeRef t = g->lt[LT_I64];
  LLVMValueRef zero = LLVMConstNull(t), one = LLVMConstInt(t, 1, 0);
  LLVMValueRef min = LLVMConstInt(t, 1ull << 63, 0), bz, ovf, bs, r;
  int sg = s == GJ_I64;
  if (op == GJ_BC_POW) {
    LLVMValueRef f = powu64_fn(g), args[2], neg, m1;
    LLVMTypeRef ps[2] = { t, t };
    if (!sg) {
      args[0] = a;
      args[1] = b;
      return LLVMBuildCall2(B, LLVMFunctionType(t, ps, 2, 0), f, args, 2, "");
    }
    neg = LLVMBuildICmp(B, LLVMIntSLT, b, zero, "");
    args[0] = a;
    args[1] = LLVMBuildSelect(B, neg, zero, b, "");
    r = LLVMBuildCall2(B, LLVMFunctionType(t, ps, 2, 0), f, args, 2, "");
    m1 = LLVMConstAllOnes(t);
    {
      LLVMValueRef odd = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, b, one, ""), zero, "");
      LLVMValueRef v = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, a, m1, ""),
                                       LLVMBuildSelect(B, odd, m1, one, ""), zero, "");
      v = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, a, one, ""), one, v, "");
      v = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, a, zero, ""),
                          LLVMConstInt(t, 0x7fffffffffffffffull, 0), v, "");
      return LLVMBuildSelect(B, neg, v, r, "");
    }
  }
  bz = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
  ovf = sg ? LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntEQ, a, min, ""),
                          LLVMBuildICmp(B, LLVMIntEQ, b, LLVMConstAllOnes(t), ""), "")
           : LLVMConstInt(g->lt[LT_I1], 0, 0);
  bs = LLVMBuildSelect(B, LLVMBuildOr(B, bz, ovf, ""), one, b, "");
  if (op == GJ_BC_DIVVV) {
    r = sg ? LLVMBuildSDiv(B, a, bs, "") : LLVMBuildUDiv(B, a, bs, "");
    return LLVMBuildSelect(B, LLVMBuildOr(B, bz, ovf, ""), min, r, "");
  }
  r = sg ? LLVMBuildSRem(B, a, bs, "") : LLVMBuildURem(B, a, bs, "");
  r = LLVMBuildSelect(B, ovf, zero, r, "");
  return LLVMBuildSelect(B, bz, min, r, "");
}

/* Lua's floored modulo. */
static LLVMValueRef modulo(gj_cg *g, LLVMValueRef a, LLVMValueRef b,
                           gj_scalar s)
{
  LLVMBuilderRef B = g->B;
  LLVMTypeRef t = gj_cg_scalar_type(g, s);
  LLVMValueRef zero = LLVMConstNull(t), r, bsafe, isz;
  if (s == GJ_F32) {
    /* LuaJIT computes in double and the result is then stored as float;
    ** a - floor(a/b)*b in float precision would lose most of its bits. */
    LLVMValueRef wide = modulo(g, LLVMBuildFPExt(B, a, g->lt[LT_F64], ""),
                               LLVMBuildFPExt(B, b, g->lt[LT_F64], ""), GJ_F64);
    return LLVMBuildFPTrunc(B, wide, t, "");
  }
  if (s == GJ_F64) {
    LLVMValueRef q = gj_cg_floor(g, LLVMBuildFDiv(B, a, b, ""), s, 0);
    return LLVMBuildFSub(B, a, LLVMBuildFMul(B, q, b, ""), "");
  }
  /* x % 0 is 0 here (an integer cannot hold LuaJIT's nan), and the divisor
  ** -1 is replaced by 1 to keep INT_MIN % -1 defined: both give 0. */
  isz = LLVMBuildICmp(B, LLVMIntEQ, b, zero, "");
  if (!gj_scalar_issigned(s)) {
    bsafe = LLVMBuildSelect(B, isz, LLVMConstInt(t, 1, 0), b, "");
    r = LLVMBuildURem(B, a, bsafe, "");
    return LLVMBuildSelect(B, isz, zero, r, "");
  }
  bsafe = LLVMBuildSelect(B, LLVMBuildOr(B, isz,
                                         LLVMBuildICmp(B, LLVMIntEQ, b, LLVMConstAllOnes(t), ""), ""),
                          LLVMConstInt(t, 1, 0), b, "");
  r = LLVMBuildSRem(B, a, bsafe, "");
  {
    LLVMValueRef fix = LLVMBuildAnd(B,
        LLVMBuildICmp(B, LLVMIntNE, r, zero, ""),
        LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, r, bsafe, ""), zero, ""), "");
    r = LLVMBuildSelect(B, fix, LLVMBuildAdd(B, r, bsafe, ""), r, "");
  }
  return r;
}

/* Does converting integer operand t to result scalar s change its value
** (narrow_ints: an int32_t result whose operand's range does not fit)? */
static int cut(gj_cg *g, gj_ty t, gj_scalar s)
{
  gj_scalar ts = gj_ty_scalar(g->cs, t);
  double lo, hi;
  if (s != GJ_I32 || !gj_scalar_isint(ts)) return 0;
  return !(gj_ty_bounds(t, &lo, &hi) && lo >= -2147483648.0 && hi <= 2147483647.0);
}

LLVMValueRef gj_cg_arith(gj_cg *g, int op, LLVMValueRef a, gj_ty ta,
                         LLVMValueRef b, gj_ty tb, gj_ty res)
{
  LLVMBuilderRef B = g->B;
  gj_scalar s = gj_ty_scalar(g->cs, res);
  int fl = gj_scalar_isfloat(s);
  int nsw = res.rng && !cut(g, ta, s) && !cut(g, tb, s);
  gj_scalar s64;
  if (!fl && op == GJ_BC_MODVV && (cut(g, ta, s) || cut(g, tb, s))) {
    /* % needs its operands whole: in 64 bits, the result then cut */
    gj_ty wide = res;
    wide.rng = 0;
    return LLVMBuildTrunc(B, gj_cg_arith(g, op, a, ta, b, tb, wide),
                          gj_cg_scalar_type(g, s), "");
  }
  if (gj_typer_carith(ta, tb, &s64)) {   /* C integers (gj_typer_carith) */
    a = to64(g, a, ta, s64);
    b = to64(g, b, tb, s64);
    if (op == GJ_BC_DIVVV || op == GJ_BC_MODVV || op == GJ_BC_POW)
      return carith_divmodpow(g, op, a, b, s64);
  } else {
    a = gj_cg_to_scalar(g, a, ta, s);
    b = gj_cg_to_scalar(g, b, tb, s);
  }
  switch (op) {
  /* an integer result with a range (below 2^53) cannot wrap: nsw, unless
  ** an operand was cut to the result's 32 bits (narrow_ints), where the
  ** wrapping operation gives the exact result modulo 2^32, which is it */
  case GJ_BC_ADDVV:
    return fl ? LLVMBuildFAdd(B, a, b, "")
              : nsw ? LLVMBuildNSWAdd(B, a, b, "") : LLVMBuildAdd(B, a, b, "");
  case GJ_BC_SUBVV:
    return fl ? LLVMBuildFSub(B, a, b, "")
              : nsw ? LLVMBuildNSWSub(B, a, b, "") : LLVMBuildSub(B, a, b, "");
  case GJ_BC_MULVV:
    return fl ? LLVMBuildFMul(B, a, b, "")
              : nsw ? LLVMBuildNSWMul(B, a, b, "") : LLVMBuildMul(B, a, b, "");
  case GJ_BC_DIVVV: return LLVMBuildFDiv(B, a, b, "");
  case GJ_BC_MODVV: return modulo(g, a, b, s);
  default: return math2(g, "pow", s, a, b);
  }
}

LLVMValueRef gj_cg_unm(gj_cg *g, LLVMValueRef a, gj_ty ta, gj_ty res)
{
  gj_scalar s = gj_ty_scalar(g->cs, res);
  a = res.k == GJ_T_NUM && res.cint ? to64(g, a, ta, s) : gj_cg_to_scalar(g, a, ta, s);
  return gj_scalar_isfloat(s) ? LLVMBuildFNeg(g->B, a, "")
         : res.rng && !cut(g, ta, s) ? LLVMBuildNSWNeg(g->B, a, "")
                                     : LLVMBuildNeg(g->B, a, "");
}

/* An integer that int64_t holds: a weak int, or any integer kind but
** uint64_t. */
static int int_valued(gj_ty t)
{
  return t.k == GJ_T_WINT ||
         (t.k == GJ_T_NUM && gj_scalar_isint((gj_scalar)t.s) && t.s != GJ_U64);
}

LLVMValueRef gj_cg_compare(gj_cg *g, int op, LLVMValueRef a, gj_ty ta,
                           LLVMValueRef b, gj_ty tb)
{
  LLVMBuilderRef B = g->B;
  gj_ty j = gj_ty_arith(g->cs, ta, tb);
  gj_scalar s, s64;
  int eq = (op == GJ_BC_ISEQV || op == GJ_BC_ISEQN);
  int c64 = gj_ty_isnumeric(ta) && gj_ty_isnumeric(tb) && gj_typer_carith(ta, tb, &s64);
  /* An lnum against an integer without a range (a weak int variable, an
  ** int64_t) joins as a double for arithmetic; a comparison of the two
  ** integers is exact as it is, and cheaper. */
  if (gj_scalar_isfloat(gj_ty_scalar(g->cs, j)) && int_valued(ta) && int_valued(tb) &&
      ((ta.k == GJ_T_NUM && ta.lnum) || (tb.k == GJ_T_NUM && tb.lnum)))
    j = gj_ty_num(GJ_I64);
  s = c64 ? s64 : gj_ty_scalar(g->cs, j);
  int ne = (op == GJ_BC_ISNEV || op == GJ_BC_ISNEN);
  if (ta.k == GJ_T_BOOL || ta.k == GJ_T_ARR || ta.k == GJ_T_SREF) {
    /* ISEQ/ISNE only; arrays and references by address */
    if (ta.k != GJ_T_BOOL) {
      a = LLVMBuildExtractValue(B, a, 0, "");
      b = LLVMBuildExtractValue(B, b, 0, "");
    }
    return LLVMBuildICmp(B, eq ? LLVMIntEQ : LLVMIntNE, a, b, "");
  }
  a = c64 ? to64(g, a, ta, s) : gj_cg_to_scalar(g, a, ta, s);
  b = c64 ? to64(g, b, tb, s) : gj_cg_to_scalar(g, b, tb, s);
  if (gj_scalar_isfloat(s)) {
    /* ISGE and ISGT are the negations of < and <= (NaN makes them true). */
    LLVMRealPredicate p = eq ? LLVMRealOEQ : ne ? LLVMRealUNE
                        : op == GJ_BC_ISLT ? LLVMRealOLT
                        : op == GJ_BC_ISLE ? LLVMRealOLE
                        : op == GJ_BC_ISGE ? LLVMRealUGE : LLVMRealUGT;
    return LLVMBuildFCmp(B, p, a, b, "");
  } else {
    int sg = gj_scalar_issigned(s);
    LLVMIntPredicate p = eq ? LLVMIntEQ : ne ? LLVMIntNE
                       : op == GJ_BC_ISLT ? (sg ? LLVMIntSLT : LLVMIntULT)
                       : op == GJ_BC_ISLE ? (sg ? LLVMIntSLE : LLVMIntULE)
                       : op == GJ_BC_ISGE ? (sg ? LLVMIntSGE : LLVMIntUGE)
                                          : (sg ? LLVMIntSGT : LLVMIntUGT);
    return LLVMBuildICmp(B, p, a, b, "");
  }
}

/* bit.tobit: LuaJIT adds 2^52+2^51 and keeps the low 32 bits of the
** double's pattern, which rounds to nearest and wraps modulo 2^32 -- for
** |x| < 2^51; beyond, the sum itself rounds and the low bits are those of
** the rounded sum.  An integer known to be below 2^51 in magnitude keeps
** its low 32 bits (the same); any other integer goes through the double. */
static LLVMValueRef tobit(gj_cg *g, LLVMValueRef v, gj_ty t)
{
  LLVMBuilderRef B = g->B;
  gj_scalar s = gj_ty_scalar(g->cs, t);
  double lo, hi;
  /* a C integer: its low 32 bits; a number: LuaJIT's lj_num2bit */
  if (gj_scalar_isint(s) && ((t.k == GJ_T_NUM && t.cint) ||
                             (gj_ty_bounds(t, &lo, &hi) && lo > -2251799813685248.0 &&
                              hi < 2251799813685248.0)))
    return gj_cg_to_scalar(g, v, t, GJ_I32);
  if (gj_scalar_isint(s)) {
    v = gj_cg_to_scalar(g, v, t, GJ_F64);
    s = GJ_F64;
  }
  if (s == GJ_F32) v = LLVMBuildFPExt(B, v, g->lt[LT_F64], "");
  v = LLVMBuildFAdd(B, v, LLVMConstReal(g->lt[LT_F64], 6755399441055744.0), "");
  v = LLVMBuildBitCast(B, v, g->lt[LT_I64], "");
  return LLVMBuildTrunc(B, v, g->lt[LT_I32], "");
}

/* An operand of bit.* of width w: LuaJIT's tobit (32), or to64 (64). */
static LLVMValueRef bit_operand(gj_cg *g, LLVMValueRef v, gj_ty t, gj_scalar s)
{
  return s == GJ_I32 ? tobit(g, v, t) : to64(g, v, t, s);
}

/* bit.* on kind s: int32_t (LuaJIT's 32-bit bit.*), or int64_t/uint64_t
** (LuaJIT 2.1's lib_bit.c with a C integer operand; the typer's bit_kind).
** A shift's or rotate's count is the low 32 bits of its operand (lj_num2bit
** of a number) modulo the width (lj_carith_shift64 for 64 bits). */
static void bitop(gj_cg *g, int intr, int nargs, LLVMValueRef *args, const gj_ty *at,
                  gj_scalar s, LLVMValueRef *res)
{
  LLVMBuilderRef B = g->B;
  LLVMTypeRef t = s == GJ_I32 ? g->lt[LT_I32] : g->lt[LT_I64];
  unsigned w = s == GJ_I32 ? 32 : 64;
  LLVMValueRef x = bit_operand(g, args[0], at[0], s), n, m, mask;
  int j;
  switch (intr) {
  case GJ_I_B_TOBIT: res[0] = x; return;
  case GJ_I_B_BNOT: res[0] = LLVMBuildNot(B, x, ""); return;
  case GJ_I_B_BAND: case GJ_I_B_BOR: case GJ_I_B_BXOR:
    for (j = 1; j < nargs; j++) {
      LLVMValueRef y = bit_operand(g, args[j], at[j], s);
      x = intr == GJ_I_B_BAND ? LLVMBuildAnd(B, x, y, "")
        : intr == GJ_I_B_BOR  ? LLVMBuildOr(B, x, y, "")
                              : LLVMBuildXor(B, x, y, "");
    }
    res[0] = x;
    return;
  default:
    break;
  }
  mask = LLVMConstInt(t, w - 1, 0);
  n = LLVMBuildAnd(B, LLVMBuildZExtOrBitCast(B, tobit(g, args[1], at[1]), t, ""), mask, "");
  switch (intr) {
  case GJ_I_B_LSHIFT: res[0] = LLVMBuildShl(B, x, n, ""); break;
  case GJ_I_B_RSHIFT: res[0] = LLVMBuildLShr(B, x, n, ""); break;
  case GJ_I_B_ARSHIFT: res[0] = LLVMBuildAShr(B, x, n, ""); break;
  default:
    if (w == 32) {
      m = LLVMBuildAnd(B, LLVMBuildSub(B, LLVMConstInt(t, w, 0), n, ""), mask, "");
      res[0] = intr == GJ_I_B_ROL
                   ? LLVMBuildOr(B, LLVMBuildShl(B, x, n, ""), LLVMBuildLShr(B, x, m, ""), "")
                   : LLVMBuildOr(B, LLVMBuildLShr(B, x, n, ""), LLVMBuildShl(B, x, m, ""), "");
      break;
    }
    /* 64 bits: the other half shifted by 1 and then by 63 - n, a form LLVM
    ** 15 does not turn into a funnel shift.  NVPTX lowers a 64-bit rotate
    ** by a variable count with PTX shifts that do not take the count
    ** modulo 64, after the DAG combiner dropped our mask as redundant for
    ** a rotate: bit.rol(1LL, 65) gave 0 on an H200. */
    m = LLVMBuildXor(B, n, mask, "");
    {
      LLVMValueRef one = LLVMConstInt(t, 1, 0);
      res[0] = intr == GJ_I_B_ROL
                   ? LLVMBuildOr(B, LLVMBuildShl(B, x, n, ""),
                                 LLVMBuildLShr(B, LLVMBuildLShr(B, x, one, ""), m, ""), "")
                   : LLVMBuildOr(B, LLVMBuildLShr(B, x, n, ""),
                                 LLVMBuildShl(B, LLVMBuildShl(B, x, one, ""), m, ""), "");
    }
  }
}

static const char *const math_fn1[] = {
  /* indexed by intrinsic - GJ_I_M_ABS; NULL: handled specially */
  NULL, "ceil", "floor", "sqrt", "exp", "log", "log10", "sin", "cos", "tan",
  "asin", "acos", "atan", NULL, "sinh", "cosh", "tanh", NULL, NULL, NULL,
  NULL, NULL
};

static LLVMValueRef id_call(gj_cg *g, int intr, int nargs, LLVMValueRef *args,
                            const gj_ty *at)
{
  char name[64];
  LLVMTypeRef ps[2] = { g->ptr_wi, g->lt[LT_I32] };
  LLVMValueRef a[2];
  snprintf(name, sizeof(name), "gj.%s", gj_intr_names[intr]);
  a[0] = g->wi;
  a[1] = nargs > 0 ? gj_cg_to_scalar(g, args[0], at[0], GJ_I32)
                   : LLVMConstInt(g->lt[LT_I32], 0, 0);
  return gj_cg_call(g, name, g->lt[LT_I64], ps, 2, a);
}

int gj_cg_intr(gj_cg *g, int i, int intr, int nargs, LLVMValueRef *args,
               const gj_ty *at, const gj_ty *rt, int nres, LLVMValueRef *res)
{
  LLVMBuilderRef B = g->B;
  gj_scalar s = nres > 0 ? gj_ty_scalar(g->cs, rt[0]) : GJ_I64;
  LLVMTypeRef t = gj_cg_scalar_type(g, s);
  int j;
  const char *fn1;
  (void)i;
  if (intr <= GJ_I_GLOBAL_SIZE) {   /* in 64 bits: held as the type says */
    res[0] = gj_cg_to_scalar(g, id_call(g, intr, nargs, args, at), gj_ty_num(GJ_I64), s);
    return 0;
  }
  if (intr <= GJ_I_ATOMIC_CAS)
    return gj_cg_group_intr(g, i, intr, args, at, rt, res);
  if (intr == GJ_I_PRINT) return gj_cg_print(g, i, nargs, args, at);
  if (intr == GJ_I_ASSERT || intr == GJ_I_ERROR)
    return gj_cg_assert(g, i, intr, nargs, args, at, res);
  if (intr == GJ_I_TYPE) {   /* a string constant: no code */
    res[0] = NULL;
    return 0;
  }
  if (intr >= GJ_I_B_BAND && intr <= GJ_I_B_TOBIT) {
    bitop(g, intr, nargs, args, at, s == GJ_I64 || s == GJ_U64 ? s : GJ_I32, res);
    return 0;
  }
  switch (intr) {
  case GJ_I_M_ABS:
    args[0] = gj_cg_to_scalar(g, args[0], at[0], s);
    if (gj_scalar_isfloat(s)) res[0] = math1(g, "fabs", s, args[0]);
    else if (!gj_scalar_issigned(s)) res[0] = args[0];
    else
      res[0] = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, args[0], LLVMConstNull(t), ""),
                               LLVMBuildNeg(B, args[0], ""), args[0], "");
    return 0;
  case GJ_I_M_CEIL: case GJ_I_M_FLOOR:
    args[0] = gj_cg_to_scalar(g, args[0], at[0], s);
    res[0] = gj_scalar_isfloat(s) ? gj_cg_floor(g, args[0], s, intr == GJ_I_M_CEIL)
                                  : args[0];
    return 0;
  case GJ_I_M_MIN: case GJ_I_M_MAX: {
    /* as LuaJIT's minsd/maxsd loop: r = (r < x) ? r : x, left to right */
    LLVMValueRef r = gj_cg_to_scalar(g, args[0], at[0], s);
    for (j = 1; j < nargs; j++) {
      LLVMValueRef x = gj_cg_to_scalar(g, args[j], at[j], s), c;
      if (gj_scalar_isfloat(s))
        c = LLVMBuildFCmp(B, intr == GJ_I_M_MIN ? LLVMRealOLT : LLVMRealOGT, r, x, "");
      else if (gj_scalar_issigned(s))
        c = LLVMBuildICmp(B, intr == GJ_I_M_MIN ? LLVMIntSLT : LLVMIntSGT, r, x, "");
      else
        c = LLVMBuildICmp(B, intr == GJ_I_M_MIN ? LLVMIntULT : LLVMIntUGT, r, x, "");
      r = LLVMBuildSelect(B, c, r, x, "");
    }
    res[0] = r;
    return 0;
  }
  case GJ_I_M_ATAN2: case GJ_I_M_POW: case GJ_I_M_FMOD:
    res[0] = math2(g, intr == GJ_I_M_ATAN2 ? "atan2" : intr == GJ_I_M_POW ? "pow" : "fmod",
                   s, gj_cg_to_scalar(g, args[0], at[0], s),
                   gj_cg_to_scalar(g, args[1], at[1], s));
    return 0;
  case GJ_I_M_LOG:
    if (nargs == 1) {
      res[0] = math1(g, "log", s, gj_cg_to_scalar(g, args[0], at[0], s));
    } else {  /* LuaJIT: log2(x) * (1 / log2(base)) */
      LLVMValueRef x = math1(g, "log2", s, gj_cg_to_scalar(g, args[0], at[0], s));
      LLVMValueRef y = math1(g, "log2", s, gj_cg_to_scalar(g, args[1], at[1], s));
      y = LLVMBuildFDiv(B, LLVMConstReal(t, 1.0), y, "");
      res[0] = LLVMBuildFMul(B, x, y, "");
    }
    return 0;
  case GJ_I_M_MODF: {
    /* LuaJIT: the fraction has the sign of x (modf(-1) is -1, -0), and is
    ** a signed zero for infinities */
    LLVMValueRef x = gj_cg_to_scalar(g, args[0], at[0], s);
    LLVMValueRef ip = math1(g, "trunc", s, x);
    LLVMValueRef inf = LLVMBuildFCmp(B, LLVMRealOEQ, math1(g, "fabs", s, x),
                                     LLVMConstReal(t, HUGE_VAL), "");
    LLVMValueRef fr = LLVMBuildSelect(B, inf, LLVMConstReal(t, 0.0),
                                      LLVMBuildFSub(B, x, ip, ""), "");
    res[0] = ip;
    if (nres > 1) res[1] = copysign_at(g->B, fr, x);
    return 0;
  }
  default:
    break;
  }
  fn1 = intr >= GJ_I_M_ABS && intr <= GJ_I_M_MODF ? math_fn1[intr - GJ_I_M_ABS] : NULL;
  if (fn1) {
    res[0] = math1(g, fn1, s, gj_cg_to_scalar(g, args[0], at[0], s));
    return 0;
  }
  return gj_err_set(g->cs->err, "internal error: no codegen for %s",
                    gj_intr_names[intr]);
}

/* --- Numeric for loops --------------------------------------------------- */

/* FORI/FORL: does the loop go on? idx, stop, step in the loop's type t. */
LLVMValueRef gj_cg_for_cond(gj_cg *g, LLVMValueRef idx, LLVMValueRef stop,
                            LLVMValueRef step, gj_ty t)
{
  LLVMBuilderRef B = g->B;
  gj_scalar s = gj_ty_scalar(g->cs, t);
  LLVMValueRef up, le, ge;
  if (gj_scalar_isfloat(s)) {
    LLVMValueRef z = LLVMConstReal(gj_cg_scalar_type(g, s), 0);
    up = LLVMBuildFCmp(B, LLVMRealOGE, step, z, "");
    le = LLVMBuildFCmp(B, LLVMRealOLE, idx, stop, "");
    ge = LLVMBuildFCmp(B, LLVMRealOGE, idx, stop, "");
  } else {
    int sg = gj_scalar_issigned(s);
    up = sg ? LLVMBuildICmp(B, LLVMIntSGE, step, LLVMConstNull(LLVMTypeOf(step)), "")
            : LLVMConstInt(g->lt[LT_I1], 1, 0);
    le = LLVMBuildICmp(B, sg ? LLVMIntSLE : LLVMIntULE, idx, stop, "");
    ge = LLVMBuildICmp(B, sg ? LLVMIntSGE : LLVMIntUGE, idx, stop, "");
  }
  return LLVMBuildSelect(B, up, le, ge, "");
}

/* FORI with an integer counter and a float limit: round the limit once,
** toward the side the loop never passes (floor going up, ceil going down). */
LLVMValueRef gj_cg_int_limit(gj_cg *g, LLVMValueRef stop, gj_ty ts,
                             LLVMValueRef step, gj_ty t)
{
  LLVMBuilderRef B = g->B;
  gj_scalar s = gj_ty_scalar(g->cs, ts), is = gj_ty_scalar(g->cs, t);
  LLVMValueRef up, r, nan;
  LLVMTypeRef ft;
  char fl[32], ce[32];
  if (!gj_scalar_isfloat(s) || gj_scalar_isfloat(is))
    return gj_cg_to_scalar(g, stop, ts, is);
  ft = gj_cg_scalar_type(g, s);
  snprintf(fl, sizeof(fl), "gj.math.floor.%s", s == GJ_F32 ? "f32" : "f64");
  snprintf(ce, sizeof(ce), "gj.math.ceil.%s", s == GJ_F32 ? "f32" : "f64");
  up = gj_scalar_issigned(is)
           ? LLVMBuildICmp(B, LLVMIntSGE, step, LLVMConstNull(LLVMTypeOf(step)), "")
           : LLVMConstInt(g->lt[LT_I1], 1, 0);
  r = LLVMBuildSelect(B, up, gj_cg_call(g, fl, ft, &ft, 1, &stop),
                      gj_cg_call(g, ce, ft, &ft, 1, &stop), "");
  nan = LLVMBuildFCmp(B, LLVMRealUNO, stop, stop, "");
  {
    LLVMTypeRef it = gj_cg_scalar_type(g, is);
    unsigned bits = (unsigned)gj_scalar_bits(is);
    int sg = gj_scalar_issigned(is);
    unsigned long long minv = sg ? (1ull << (bits - 1)) : 0;
    unsigned long long maxv = sg ? (1ull << (bits - 1)) - 1 : ~0ull >> (64 - bits);
    LLVMValueRef cmin = LLVMConstInt(it, minv, 0), cmax = LLVMConstInt(it, maxv, 0);
    /* A limit beyond the counter's range (1e300, math.huge) must not go
    ** through the conversion, which gives the minimum for any value out of
    ** range (typing.md) and so would turn `for i = 0, -1e300, -1` into an
    ** endless loop: it is the counter's maximum or minimum instead. */
    LLVMValueRef hi = LLVMBuildFCmp(B, LLVMRealOGE, r,
                                    LLVMConstReal(ft, ldexp(1.0, (int)bits - sg)), "");
    LLVMValueRef lo = LLVMBuildFCmp(B, LLVMRealOLT, r,
                                    LLVMConstReal(ft, sg ? -ldexp(1.0, (int)bits - 1) : 0.0), "");
    LLVMValueRef never = LLVMBuildSelect(B, up, cmin, cmax, "");
    r = gj_cg_to_scalar(g, r, gj_ty_num(s), is);
    r = LLVMBuildSelect(B, hi, cmax, r, "");
    r = LLVMBuildSelect(B, lo, cmin, r, "");
    /* a NaN limit runs no iteration */
    r = LLVMBuildSelect(B, nan, never, r, "");
  }
  return r;
}
