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

static LLVMValueRef zero_of(LLVMTypeRef t)
{
  return LLVMConstNull(t);
}

static int is_zero(LLVMValueRef v)
{
  return LLVMIsAConstant(v) && LLVMIsNull(v);
}

/* The tangent of float value v (0 where it has none: a constant, an
** argument without a shadow, a value from an integer). */
static LLVMValueRef tan_of(fwd *F, LLVMValueRef v)
{
  LLVMValueRef t = gj_admap_get(&F->a->tan, v);
  return t ? t : zero_of(LLVMTypeOf(v));
}

/* a*b with zeros folded, likewise a+b, a-b, -a. */
static LLVMValueRef mul(LLVMBuilderRef B, LLVMValueRef x, LLVMValueRef y)
{
  if (is_zero(x)) return x;
  if (is_zero(y)) return y;
  return LLVMBuildFMul(B, x, y, "");
}

static LLVMValueRef add(LLVMBuilderRef B, LLVMValueRef x, LLVMValueRef y)
{
  if (is_zero(x)) return y;
  if (is_zero(y)) return x;
  return LLVMBuildFAdd(B, x, y, "");
}

static LLVMValueRef sub(LLVMBuilderRef B, LLVMValueRef x, LLVMValueRef y)
{
  if (is_zero(y)) return x;
  if (is_zero(x)) return LLVMBuildFNeg(B, y, "");
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

/* The tangent of call y = gj.math.<fn>(x [, z]); *out, or refused. */
static int math_rule(fwd *F, LLVMValueRef call, const char *fn, LLVMValueRef *out)
{
  gj_ad *a = F->a;
  LLVMBuilderRef B = a->B;
  LLVMTypeRef t = LLVMTypeOf(call);
  LLVMValueRef x = LLVMGetOperand(call, 0), dx = tan_of(F, x), y = call, r;
  unsigned nargs = (unsigned)LLVMGetNumArgOperands(call);
  LLVMValueRef z = nargs > 1 ? LLVMGetOperand(call, 1) : NULL;
  LLVMValueRef dz = z ? tan_of(F, z) : NULL;
  char what[96];
  if (is_zero(dx) && (!dz || is_zero(dz))) {
    *out = zero_of(t);
    return 0;
  }
  if (!strcmp(fn, "sqrt")) {               /* dx / (2 y) */
    r = LLVMBuildFDiv(B, dx, LLVMBuildFMul(B, kf(t, 2.0), y, ""), "");
  } else if (!strcmp(fn, "exp")) {
    r = mul(B, y, dx);
  } else if (!strcmp(fn, "log")) {
    r = LLVMBuildFDiv(B, dx, x, "");
  } else if (!strcmp(fn, "log2") || !strcmp(fn, "log10")) {
    double ln = !strcmp(fn, "log2") ? 0.69314718055994530942 : 2.30258509299404568402;
    r = LLVMBuildFDiv(B, dx, LLVMBuildFMul(B, x, kf(t, ln), ""), "");
  } else if (!strcmp(fn, "sin")) {
    r = mul(B, mcall(a, "cos", t, &x, 1), dx);
  } else if (!strcmp(fn, "cos")) {
    r = LLVMBuildFNeg(B, mul(B, mcall(a, "sin", t, &x, 1), dx), "");
  } else if (!strcmp(fn, "tan")) {          /* (1 + y^2) dx */
    r = mul(B, LLVMBuildFAdd(B, kf(t, 1.0), LLVMBuildFMul(B, y, y, ""), ""), dx);
  } else if (!strcmp(fn, "asin") || !strcmp(fn, "acos")) {   /* ±dx/sqrt(1-x^2) */
    LLVMValueRef s = LLVMBuildFSub(B, kf(t, 1.0), LLVMBuildFMul(B, x, x, ""), "");
    r = LLVMBuildFDiv(B, dx, mcall(a, "sqrt", t, &s, 1), "");
    if (!strcmp(fn, "acos")) r = LLVMBuildFNeg(B, r, "");
  } else if (!strcmp(fn, "atan")) {
    r = LLVMBuildFDiv(B, dx, LLVMBuildFAdd(B, kf(t, 1.0), LLVMBuildFMul(B, x, x, ""), ""), "");
  } else if (!strcmp(fn, "sinh")) {
    r = mul(B, mcall(a, "cosh", t, &x, 1), dx);
  } else if (!strcmp(fn, "cosh")) {
    r = mul(B, mcall(a, "sinh", t, &x, 1), dx);
  } else if (!strcmp(fn, "tanh")) {         /* (1 - y^2) dx */
    r = mul(B, LLVMBuildFSub(B, kf(t, 1.0), LLVMBuildFMul(B, y, y, ""), ""), dx);
  } else if (!strcmp(fn, "fabs")) {         /* sign(x) dx, sign(0) = 0 */
    LLVMValueRef pos = LLVMBuildFCmp(B, LLVMRealOGT, x, zero_of(t), "");
    LLVMValueRef neg = LLVMBuildFCmp(B, LLVMRealOLT, x, zero_of(t), "");
    r = LLVMBuildSelect(B, pos, dx,
                        LLVMBuildSelect(B, neg, LLVMBuildFNeg(B, dx, ""), zero_of(t), ""), "");
  } else if (!strcmp(fn, "floor") || !strcmp(fn, "ceil") || !strcmp(fn, "trunc")) {
    r = zero_of(t);                         /* 0 almost everywhere */
  } else if (!strcmp(fn, "pow")) {
    /* d(x^z) = z x^(z-1) dx + log(x) x^z dz; the dz term only where dz is
    ** not 0 (log(x) is NaN for x < 0, where a constant exponent is fine) */
    LLVMValueRef e[2];
    e[0] = x;
    e[1] = LLVMBuildFSub(B, z, kf(t, 1.0), "");
    r = is_zero(dx) ? dx : mul(B, mul(B, z, mcall(a, "pow", t, e, 2)), dx);
    if (!is_zero(dz)) {
      LLVMValueRef lg = mul(B, mul(B, mcall(a, "log", t, &x, 1), y), dz);
      LLVMValueRef nz = LLVMBuildFCmp(B, LLVMRealUNE, dz, zero_of(t), "");
      r = add(B, r, LLVMBuildSelect(B, nz, lg, zero_of(t), ""));
    }
  } else if (!strcmp(fn, "atan2")) {        /* (x dz - z dx) / (x^2 + z^2) */
    LLVMValueRef den = LLVMBuildFAdd(B, LLVMBuildFMul(B, x, x, ""),
                                     LLVMBuildFMul(B, z, z, ""), "");
    /* atan2(x, z): x is y, z is the x of atan2(y, x) */
    r = LLVMBuildFDiv(B, sub(B, mul(B, z, dx), mul(B, x, dz)), den, "");
  } else if (!strcmp(fn, "fmod")) {         /* dx - trunc(x/z) dz */
    LLVMValueRef q = LLVMBuildFDiv(B, x, z, "");
    r = sub(B, dx, mul(B, mcall(a, "trunc", t, &q, 1), dz));
  } else {
    snprintf(what, sizeof(what), "math function '%s' has no derivative rule", fn);
    return gj_ad_refuse(a, call, what);
  }
  *out = r;
  return 0;
}

/* A call: gj.math.* by its rule; other declared gj.* intrinsics carry no
** float result; anything else is refused. */
static int call_rule(fwd *F, LLVMValueRef I)
{
  gj_ad *a = F->a;
  LLVMValueRef callee = LLVMGetCalledValue(I), t = NULL;
  size_t len = 0;
  const char *name = LLVMIsAFunction(callee) ? LLVMGetValueName2(callee, &len) : "";
  unsigned j, n = (unsigned)LLVMGetNumArgOperands(I);
  char what[160];
  if (len > 9 && !strncmp(name, "gj.math.", 8) && gj_ad_isfloat(LLVMTypeOf(I))) {
    char fn[32];
    const char *dot = strrchr(name, '.');
    snprintf(fn, sizeof(fn), "%.*s", (int)(dot - name - 8), name + 8);
    if (math_rule(F, I, fn, &t)) return -1;
    return is_zero(t) ? 0 : gj_admap_put(&a->tan, I, t);
  }
  if (!LLVMIsAFunction(callee) || !LLVMIsDeclaration(callee)) {
    snprintf(what, sizeof(what), "a call of '%.*s' that could not be inlined",
             (int)len, name);
    return gj_ad_refuse(a, I, what);
  }
  for (j = 0; j < n; j++) {
    LLVMValueRef op = LLVMGetOperand(I, j);
    if (gj_admap_get(&a->sh, op) ||
        (LLVMGetTypeKind(LLVMTypeOf(op)) == LLVMPointerTypeKind &&
         gj_ad_root(a, op) && gj_admap_get(&a->sh, gj_ad_root(a, op)))) {
      snprintf(what, sizeof(what), "'%.*s' on an array with a shadow", (int)len, name);
      return gj_ad_refuse(a, I, what);
    }
  }
  if (gj_ad_isfloat(LLVMTypeOf(I))) {
    snprintf(what, sizeof(what), "'%.*s' has no derivative rule", (int)len, name);
    return gj_ad_refuse(a, I, what);
  }
  return 0;
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
  if (!gj_ad_root(a, p))
    return gj_ad_refuse(a, I, "a float kept in local or shared memory "
                        "(gpu.local_array, gpu.shared, a struct copy) is not "
                        "supported yet");
  if (!sp) return 0;   /* an array without a shadow: tangent 0, dropped */
  if (store) {
    t = LLVMBuildStore(a->B, tan_of(F, v), sp);
    LLVMSetAlignment(t, LLVMGetAlignment(I));
    return 0;
  }
  t = LLVMBuildLoad2(a->B, LLVMTypeOf(I), sp, "");
  LLVMSetAlignment(t, LLVMGetAlignment(I));
  return gj_admap_put(&a->tan, I, t);
}

static int gep_rule(fwd *F, LLVMValueRef I)
{
  gj_ad *a = F->a;
  LLVMValueRef sp = shadow_ptr(a, LLVMGetOperand(I, 0)), g;
  unsigned n = (unsigned)LLVMGetNumOperands(I), j;
  LLVMValueRef idx[8];
  if (!sp) return 0;
  if (n - 1 > 8) return gj_ad_refuse(a, I, "an address with more than 8 indices");
  for (j = 1; j < n; j++) idx[j - 1] = LLVMGetOperand(I, j);
  g = LLVMBuildGEP2(a->B, LLVMGetGEPSourceElementType(I), sp, idx, n - 1, "");
  LLVMSetIsInBounds(g, LLVMIsInBounds(I));
  return gj_admap_put(&a->sh, I, g);
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
    if (op == LLVMFAdd) t = add(B, tan_of(F, x), tan_of(F, y));
    else if (op == LLVMFSub) t = sub(B, tan_of(F, x), tan_of(F, y));
    else if (op == LLVMFMul) t = add(B, mul(B, tan_of(F, x), y), mul(B, x, tan_of(F, y)));
    else if (is_zero(tan_of(F, x)) && is_zero(tan_of(F, y))) t = zero_of(ty);
    else   /* (dx - (x/y) dy) / y */
      t = LLVMBuildFDiv(B, sub(B, tan_of(F, x), mul(B, I, tan_of(F, y))), y, "");
    break;
  case LLVMFNeg:
    t = tan_of(F, LLVMGetOperand(I, 0));
    if (!is_zero(t)) t = LLVMBuildFNeg(B, t, "");
    break;
  case LLVMFPExt: case LLVMFPTrunc:
    t = tan_of(F, LLVMGetOperand(I, 0));
    t = is_zero(t) ? zero_of(ty) : LLVMBuildFPCast(B, t, ty, "");
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
      t = is_zero(tx) && is_zero(ty2) ? zero_of(ty)
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
    return gep_rule(F, I);
  case LLVMCall:
    return call_rule(F, I);
  case LLVMAtomicRMW: case LLVMAtomicCmpXchg: {
    LLVMValueRef r = gj_ad_root(a, LLVMGetOperand(I, 0));
    if (r && shadow_ptr(a, r))
      return gj_ad_refuse(a, I, "an atomic operation on an array with a shadow "
                          "is not supported yet");
    return 0;   /* on an inactive array: what it reads has tangent 0 */
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
  if (t && !is_zero(t)) return gj_admap_put(&a->tan, I, t);
  return 0;
}

/* Blocks of fn in reverse postorder from the entry (iterative DFS). */
static int rpo(LLVMValueRef fn, LLVMBasicBlockRef **out, unsigned *nout)
{
  unsigned n = LLVMCountBasicBlocks(fn), sp = 0, k = n;
  LLVMBasicBlockRef *all = malloc(sizeof(*all) * (n + 1));
  LLVMBasicBlockRef *order = malloc(sizeof(*order) * (n + 1));
  LLVMBasicBlockRef *stack = malloc(sizeof(*stack) * (n + 1));
  unsigned *next = calloc(n + 1, sizeof(unsigned));
  char *seen = calloc(n + 1, 1);
  unsigned i;
  if (!all || !order || !stack || !next || !seen) goto fail;
  LLVMGetBasicBlocks(fn, all);
  stack[sp++] = all[0];
  seen[0] = 1;
  while (sp) {
    LLVMBasicBlockRef bb = stack[sp - 1];
    unsigned bi = 0, ns;
    LLVMValueRef term;
    while (all[bi] != bb) bi++;
    term = LLVMGetBasicBlockTerminator(bb);
    ns = term ? LLVMGetNumSuccessors(term) : 0;
    if (next[bi] < ns) {
      LLVMBasicBlockRef s = LLVMGetSuccessor(term, next[bi]++);
      unsigned si = 0;
      while (all[si] != s) si++;
      if (!seen[si]) {
        seen[si] = 1;
        stack[sp++] = s;
      }
    } else {
      order[--k] = bb;
      sp--;
    }
  }
  /* unreachable blocks (none after codegen) are left out */
  for (i = 0; i < n - k; i++) order[i] = order[k + i];
  *nout = n - k;
  *out = order;
  free(all);
  free(stack);
  free(next);
  free(seen);
  return 0;
fail:
  free(all);
  free(order);
  free(stack);
  free(next);
  free(seen);
  return -1;
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
  if (rpo(a->fn, &order, &nb)) return gj_err_set(a->err, "out of memory");
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
