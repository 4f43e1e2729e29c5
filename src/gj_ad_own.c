/*
** Reverse mode: the arrays a work item owns (src/gj_ad_rev.h).  A read's
** adjoint is added into the adjoint array atomically where two work items
** may read one element; where the array is provably the work item's own
** the add is plain (src/gj_ad_rev.c, add_adjoint).  Owned: every access
** of the array in the kernel is at an index of the form
**     gid * C + e      (gid: gj.global_id(0); C >= 1 a constant, the same
**                       for every access; e a constant, or a counted
**                       loop's variable, within [0, C))
** so that in a 1-D launch (checked at run time: a 2-D launch has several
** items with one global_id(0)) the elements of two work items are
** disjoint: saxpy's x[i] (C = 1), a dense layer's x[i * 8 + j] for j = 0, 7.
** A loop variable's range is proven from its phi: constant starts, one
** increment by a positive constant, and the back edge taken only while the
** increment is at most a constant (the do-while form codegen gives a
** numeric for).
*/
#include <string.h>

#include "gj_ad_rev.h"

/* Is v the work item's id in dimension 0 (a call of gj.global_id(wi, 0))? */
static int is_gid0(LLVMValueRef v)
{
  LLVMValueRef f, d;
  size_t len = 0;
  const char *name;
  if (!LLVMIsACallInst(v)) return 0;
  f = LLVMGetCalledValue(v);
  if (!LLVMIsAFunction(f)) return 0;
  name = LLVMGetValueName2(f, &len);
  d = LLVMGetOperand(v, 1);
  return len == 12 && !strncmp(name, "gj.global_id", 12) && LLVMIsAConstantInt(d) &&
         LLVMConstIntGetZExtValue(d) == 0;
}

static int const_of(LLVMValueRef v, long long *c)
{
  if (!LLVMIsAConstantInt(v) || LLVMGetIntTypeWidth(LLVMTypeOf(v)) > 64) return 0;
  *c = LLVMConstIntGetSExtValue(v);
  return 1;
}

/* Do phis p and q (in one block) take the same value on every edge?  (The
** typer's slots can give one variable two copies.) */
static int same_phi(LLVMValueRef p, LLVMValueRef q)
{
  unsigned j, n = LLVMCountIncoming(p);
  if (q == p) return 1;
  if (!LLVMIsAPHINode(q) || LLVMGetInstructionParent(q) != LLVMGetInstructionParent(p) ||
      LLVMCountIncoming(q) != n)
    return 0;
  for (j = 0; j < n; j++)
    if (LLVMGetIncomingBlock(p, j) != LLVMGetIncomingBlock(q, j) ||
        LLVMGetIncomingValue(p, j) != LLVMGetIncomingValue(q, j))
      return 0;
  return 1;
}

/* [*lo, *hi] holds every value of integer phi p (see the header); 0 when
** not proven. */
static int phi_range(LLVMValueRef p, long long *lo, long long *hi)
{
  unsigned j, n = LLVMCountIncoming(p);
  long long c, s, k, top = 0;
  int have = 0, inc = 0;
  for (j = 0; j < n; j++) {
    LLVMValueRef v = LLVMGetIncomingValue(p, j), t, cmp;
    LLVMBasicBlockRef from = LLVMGetIncomingBlock(p, j);
    LLVMIntPredicate pr;
    if (const_of(v, &c)) {
      if (!have || c < *lo) *lo = c;
      if (!have || c > *hi) *hi = c;
      have = 1;
      continue;
    }
    /* v = p + s, s > 0, and from's branch goes back to p's block only while
    ** v <= k (sle k, slt k + 1; sgt/sge on the other edge) */
    if (inc || !LLVMIsAInstruction(v) || LLVMGetInstructionOpcode(v) != LLVMAdd ||
        !same_phi(p, LLVMGetOperand(v, 0)) || !const_of(LLVMGetOperand(v, 1), &s) || s <= 0)
      return 0;
    t = LLVMGetBasicBlockTerminator(from);
    if (!t || !LLVMIsABranchInst(t) || !LLVMIsConditional(t)) return 0;
    cmp = LLVMGetCondition(t);
    if (!LLVMIsAICmpInst(cmp) || LLVMGetOperand(cmp, 0) != v ||
        !const_of(LLVMGetOperand(cmp, 1), &k) || k > (1LL << 62) || s > (1LL << 30))
      return 0;   /* (bounds far from overflow: v = p + s cannot wrap) */
    pr = LLVMGetICmpPredicate(cmp);
    if ((pr == LLVMIntSLE || pr == LLVMIntSLT) &&
        LLVMGetSuccessor(t, 0) == LLVMGetInstructionParent(p) &&
        LLVMGetSuccessor(t, 1) != LLVMGetInstructionParent(p))
      top = pr == LLVMIntSLE ? k : k - 1;
    else if ((pr == LLVMIntSGT || pr == LLVMIntSGE) &&
             LLVMGetSuccessor(t, 1) == LLVMGetInstructionParent(p) &&
             LLVMGetSuccessor(t, 0) != LLVMGetInstructionParent(p))
      top = pr == LLVMIntSGT ? k : k - 1;
    else
      return 0;
    inc = 1;
  }
  if (!have) return 0;
  if (inc && top > *hi) *hi = top;
  return 1;
}

/* Is e within [0, C)? */
static int within(LLVMValueRef e, long long C)
{
  long long c, lo = 0, hi = 0;
  if (const_of(e, &c)) return c >= 0 && c < C;
  return LLVMIsAPHINode(e) && LLVMGetTypeKind(LLVMTypeOf(e)) == LLVMIntegerTypeKind &&
         phi_range(e, &lo, &hi) && lo >= 0 && hi < C;
}

/* gid * C (or gid << k, or gid itself: C = 1): *C, or 0. */
static long long scaled_gid(LLVMValueRef v)
{
  long long c;
  if (is_gid0(v)) return 1;
  if (!LLVMIsAInstruction(v) || !is_gid0(LLVMGetOperand(v, 0)) ||
      !const_of(LLVMGetOperand(v, 1), &c))
    return 0;
  if (LLVMGetInstructionOpcode(v) == LLVMMul) return c >= 1 ? c : 0;
  if (LLVMGetInstructionOpcode(v) == LLVMShl) return c >= 0 && c < 32 ? 1LL << c : 0;
  return 0;
}

/* The stride C of index idx of the form above, or 0. */
static long long own_index(LLVMValueRef idx)
{
  long long C = scaled_gid(idx);
  int j;
  if (C) return C;
  if (!LLVMIsAInstruction(idx) || LLVMGetInstructionOpcode(idx) != LLVMAdd) return 0;
  for (j = 0; j < 2; j++) {
    C = scaled_gid(LLVMGetOperand(idx, (unsigned)j));
    if (C && within(LLVMGetOperand(idx, (unsigned)(1 - j)), C)) return C;
  }
  return 0;
}

void gj_adr_merge_phis(LLVMValueRef fn)
{
  LLVMBasicBlockRef b;
  int changed = 1;
  while (changed) {
    changed = 0;
    for (b = LLVMGetFirstBasicBlock(fn); b; b = LLVMGetNextBasicBlock(b)) {
      LLVMValueRef p, q, next;
      for (p = LLVMGetFirstInstruction(b); p && LLVMIsAPHINode(p); p = LLVMGetNextInstruction(p))
        for (q = LLVMGetNextInstruction(p); q && LLVMIsAPHINode(q); q = next) {
          next = LLVMGetNextInstruction(q);
          if (LLVMTypeOf(q) == LLVMTypeOf(p) && same_phi(p, q)) {
            LLVMReplaceAllUsesWith(q, p);
            LLVMInstructionEraseFromParent(q);
            changed = 1;
          }
        }
    }
  }
}

LLVMValueRef gj_adr_iv(LLVMBasicBlockRef b, LLVMBasicBlockRef *entry, long long *c)
{
  LLVMValueRef p;
  for (p = LLVMGetFirstInstruction(b); p && LLVMIsAPHINode(p); p = LLVMGetNextInstruction(p)) {
    long long lo = 0, hi = 0, k;
    unsigned j, n = LLVMCountIncoming(p), nc = 0;
    if (LLVMGetTypeKind(LLVMTypeOf(p)) != LLVMIntegerTypeKind || n != 2 ||
        !phi_range(p, &lo, &hi))
      continue;
    for (j = 0; j < n; j++)
      if (const_of(LLVMGetIncomingValue(p, j), &k)) {
        nc++;
        *entry = LLVMGetIncomingBlock(p, j);
        *c = k;
      }
    if (nc == 1) return p;
  }
  return NULL;
}

int gj_adr_find_own(rev *R)
{
  gj_ad *a = R->a;
  size_t i;
  for (i = 0; i < a->sh.cap; i++) {
    LLVMValueRef r = a->sh.key[i];
    LLVMUseRef u;
    long long C = 0;
    int ok = 1;
    if (!r || !gj_admap_get(&a->roots, r)) continue;
    for (u = LLVMGetFirstUse(r); u && ok; u = LLVMGetNextUse(u)) {
      LLVMValueRef g = LLVMGetUser(u);
      long long c;
      ok = LLVMIsAGetElementPtrInst(g) && LLVMGetNumOperands(g) == 2 &&
           LLVMGetOperand(g, 0) == r && (c = own_index(LLVMGetOperand(g, 1))) != 0 &&
           (!C || c == C);
      if (ok) C = c;
    }
    if (ok && gj_admap_put(&R->own, r, r)) return gj_err_set(a->err, "out of memory");
  }
  return 0;
}
