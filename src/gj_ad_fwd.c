/*
** Forward mode (src/gj_ad.h): each float value's tangent computed beside
** it, in one walk over @gj_body's blocks in reverse postorder (a value's
** definition comes before its uses, but for phis, whose tangents are
** phis filled at the end).  The rules are those of the derivative of each
** operation; what has none is refused at its line (gj_ad_refuse).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gj_ad_int.h"

typedef struct fwd {
  gj_ad *a;
  LLVMValueRef *phis;      /* pairs: a float phi, its tangent phi */
  size_t nphi, capphi;
} fwd;

/* The tangent of float value v (0 where it has none: a constant, an
** argument without a shadow, a value from an integer). */
static LLVMValueRef tan_of(fwd *F, LLVMValueRef v)
{
  LLVMValueRef t = gj_admap_get(&F->a->tan, v);
  return t ? t : LLVMConstNull(LLVMTypeOf(v));
}

/* A call: gj.math.* by its rule (gj_ad_call). */
static int call_rule(fwd *F, LLVMValueRef I)
{
  gj_ad *a = F->a;
  char fn[32];
  LLVMValueRef x, z, t = NULL;
  int r = gj_ad_call(a, I, fn, sizeof(fn));
  if (r <= 0) return r;
  x = LLVMGetOperand(I, 0);
  z = LLVMGetNumArgOperands(I) > 1 ? LLVMGetOperand(I, 1) : NULL;
  if (gj_ad_math(a, I, fn, x, tan_of(F, x), z, z ? tan_of(F, z) : NULL, I, &t))
    return -1;
  return gj_ad_is_zero(t) ? 0 : gj_admap_put(&a->tan, I, t);
}

/* The shadow of pointer p (derived from an array with a shadow), or NULL. */
static LLVMValueRef shadow_ptr(gj_ad *a, LLVMValueRef p)
{
  return gj_admap_get(&a->sh, p);
}

static int mem_rule(fwd *F, LLVMValueRef I, int store)
{
  gj_ad *a = F->a;
  LLVMValueRef p = LLVMGetOperand(I, store ? 1 : 0);
  LLVMValueRef v = store ? LLVMGetOperand(I, 0) : I;
  LLVMValueRef sp = shadow_ptr(a, p), t;
  if (!gj_ad_isfloat(LLVMTypeOf(v))) return 0;
  if (gj_ad_mem(a, I, p)) return -1;
  if (!sp) {   /* an array without a shadow: tangent 0, dropped; but the
               ** seeded field of an inner derivative's struct: 1 */
    if (gj_ad_seed(a, I, p, store, &t)) return -1;
    return t ? gj_admap_put(&a->tan, I, t) : 0;
  }
  if (store) {
    t = LLVMBuildStore(a->B, tan_of(F, v), sp);
    LLVMSetAlignment(t, LLVMGetAlignment(I));
    return 0;
  }
  t = LLVMBuildLoad2(a->B, LLVMTypeOf(I), sp, "");
  LLVMSetAlignment(t, LLVMGetAlignment(I));
  return gj_admap_put(&a->tan, I, t);
}

/* The tangent of one instruction, built right after it. */
static int visit(fwd *F, LLVMValueRef I)
{
  gj_ad *a = F->a;
  LLVMBuilderRef B = a->B;
  LLVMOpcode op = LLVMGetInstructionOpcode(I);
  LLVMTypeRef ty = LLVMTypeOf(I);
  int fl = gj_ad_isfloat(ty);
  LLVMValueRef t = NULL, x, y;
  switch (op) {
  case LLVMFAdd: case LLVMFSub: case LLVMFMul: case LLVMFDiv:
    x = LLVMGetOperand(I, 0);
    y = LLVMGetOperand(I, 1);
    if (op == LLVMFAdd) t = gj_ad_fadd(B, tan_of(F, x), tan_of(F, y));
    else if (op == LLVMFSub) t = gj_ad_fsub(B, tan_of(F, x), tan_of(F, y));
    else if (op == LLVMFMul) t = gj_ad_fadd(B, gj_ad_fmul(B, tan_of(F, x), y), gj_ad_fmul(B, x, tan_of(F, y)));
    else if (gj_ad_is_zero(tan_of(F, x)) && gj_ad_is_zero(tan_of(F, y))) t = LLVMConstNull(ty);
    else   /* (dx - (x/y) dy) / y */
      t = LLVMBuildFDiv(B, gj_ad_fsub(B, tan_of(F, x), gj_ad_fmul(B, I, tan_of(F, y))), y, "");
    break;
  case LLVMFNeg:
    t = tan_of(F, LLVMGetOperand(I, 0));
    if (!gj_ad_is_zero(t)) t = LLVMBuildFNeg(B, t, "");
    break;
  case LLVMFPExt: case LLVMFPTrunc:
    t = tan_of(F, LLVMGetOperand(I, 0));
    t = gj_ad_is_zero(t) ? LLVMConstNull(ty) : LLVMBuildFPCast(B, t, ty, "");
    break;
  case LLVMSIToFP: case LLVMUIToFP:
    return 0;   /* from an integer: 0 */
  case LLVMBitCast:
    if (fl && !gj_ad_isfloat(LLVMTypeOf(LLVMGetOperand(I, 0))))
      return gj_ad_refuse(a, I, "a bit-level float operation (math.modf, "
                          "bit.*) has no derivative rule");
    if (fl) t = tan_of(F, LLVMGetOperand(I, 0));
    break;
  case LLVMSelect:
    x = LLVMGetOperand(I, 1);
    y = LLVMGetOperand(I, 2);
    if (fl) {
      LLVMValueRef tx = tan_of(F, x), ty2 = tan_of(F, y);
      t = gj_ad_is_zero(tx) && gj_ad_is_zero(ty2) ? LLVMConstNull(ty)
                                      : LLVMBuildSelect(B, LLVMGetOperand(I, 0), tx, ty2, "");
    } else if (shadow_ptr(a, x) || shadow_ptr(a, y)) {
      if (!shadow_ptr(a, x) || !shadow_ptr(a, y))
        return gj_ad_refuse(a, I, "a choice between arrays with and without a shadow");
      return gj_admap_put(&a->sh, I, LLVMBuildSelect(B, LLVMGetOperand(I, 0),
                                                     shadow_ptr(a, x), shadow_ptr(a, y), ""));
    }
    break;
  case LLVMPHI:
    if (fl) {
      if (F->nphi + 2 > F->capphi) {
        size_t cap = F->capphi ? 2 * F->capphi : 64;
        LLVMValueRef *np = realloc(F->phis, cap * sizeof(LLVMValueRef));
        if (!np) return gj_err_set(a->err, "out of memory");
        F->phis = np;
        F->capphi = cap;
      }
      t = LLVMBuildPhi(B, ty, "");
      F->phis[F->nphi++] = I;
      F->phis[F->nphi++] = t;
    } else if (LLVMGetTypeKind(ty) == LLVMPointerTypeKind) {
      unsigned j, n = LLVMCountIncoming(I);
      for (j = 0; j < n; j++)
        if (shadow_ptr(a, LLVMGetIncomingValue(I, j)))
          return gj_ad_refuse(a, I, "a pointer that is one of several arrays "
                              "with a shadow");
    }
    break;
  case LLVMLoad:
    return mem_rule(F, I, 0);
  case LLVMStore:
    return mem_rule(F, I, 1);
  case LLVMGetElementPtr:
    return gj_ad_gep(a, I);
  case LLVMCall:
    return call_rule(F, I);
  case LLVMAtomicRMW: case LLVMAtomicCmpXchg: {
    /* atomic_add(y, j, v): atomic_add(dy, j, dv) */
    int r = gj_ad_atomic(a, I);
    if (r <= 0) return r;   /* on an inactive array: what it reads has tangent 0 */
    t = tan_of(F, LLVMGetOperand(I, 1));
    if (!gj_ad_is_zero(t))
      LLVMBuildAtomicRMW(B, LLVMAtomicRMWBinOpFAdd, shadow_ptr(a, LLVMGetOperand(I, 0)), t,
                         LLVMAtomicOrderingMonotonic, 0);
    return 0;
  }
  case LLVMFRem:
    return gj_ad_refuse(a, I, "frem has no derivative rule");
  case LLVMExtractValue: case LLVMInsertValue: {
    unsigned j, n = (unsigned)LLVMGetNumOperands(I);
    for (j = 0; j < n; j++)
      if (shadow_ptr(a, LLVMGetOperand(I, j)) || gj_admap_get(&a->tan, LLVMGetOperand(I, j)))
        return gj_ad_refuse(a, I, "an aggregate holding an active value");
    if (fl) return gj_ad_refuse(a, I, "a float taken from an aggregate");
    return 0;
  }
  default:
    if (fl) {
      char what[96];
      snprintf(what, sizeof(what), "LLVM instruction opcode %d has no derivative rule",
               (int)op);
      return gj_ad_refuse(a, I, what);
    }
    return 0;
  }
  if (t && !gj_ad_is_zero(t)) return gj_admap_put(&a->tan, I, t);
  return 0;
}

int gj_ad_forward(gj_ad *a)
{
  fwd F;
  LLVMBasicBlockRef *order = NULL;
  unsigned nb = 0, b;
  size_t i;
  int rc = -1;
  memset(&F, 0, sizeof(F));
  F.a = a;
  if (gj_ad_rpo(a->fn, &order, &nb, NULL)) return gj_err_set(a->err, "out of memory");
  for (b = 0; b < nb; b++) {
    LLVMValueRef I = LLVMGetFirstInstruction(order[b]), nxt;
    for (; I; I = nxt) {
      nxt = LLVMGetNextInstruction(I);
      if (nxt)
        LLVMPositionBuilderBefore(a->B, nxt);
      else
        LLVMPositionBuilderAtEnd(a->B, order[b]);
      if (LLVMIsATerminatorInst(I)) break;
      if (visit(&F, I)) goto done;
    }
  }
  for (i = 0; i < F.nphi; i += 2) {
    LLVMValueRef phi = F.phis[i], tp = F.phis[i + 1];
    unsigned j, n = LLVMCountIncoming(phi);
    for (j = 0; j < n; j++) {
      LLVMValueRef tv = tan_of(&F, LLVMGetIncomingValue(phi, j));
      LLVMBasicBlockRef bb = LLVMGetIncomingBlock(phi, j);
      LLVMAddIncoming(tp, &tv, &bb, 1);
    }
  }
  rc = 0;
done:
  free(order);
  free(F.phis);
  return rc;
}
