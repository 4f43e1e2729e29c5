/*
** The native target, part four: adjoint adds summed per call of gj_entry.
**
** Reverse mode (src/gj_ad_rev.c) adds each read's adjoint into the adjoint
** array atomically where two work items may read one element, and marks
** those adds "gj.adj" where nothing in the launch reads the element again
** before the launch ends (but a kernel whose work items race in the
** forward pass: docs/autodiff.md).  Such adds commute with everything else
** the launch does, so they may land at any time before it ends.  On a CPU
** an atomic add is a compare-and-swap loop, and the hot ones (a weight that
** every work item adds into: conv3x3's 9, a dense layer's) bounce their
** cache line between the cores.  Here each call of gj_entry (a chunk of
** work items on one thread) keeps a small direct-mapped table of
** (address, partial sum) per float type: a marked add whose address is in
** the table adds into its sum plainly; one that is not evicts the entry it
** maps to (one atomic add of that entry's sum into memory) and takes its
** place; before gj_entry returns every entry left is added atomically.  A
** hot element then costs one atomic add per call instead of one per work
** item; an element added into once costs what it did.
**
** Invariant: every marked add lands, atomically, exactly once, before the
** call of gj_entry that made it returns; only the order and grouping of the
** floating-point sums differ from the atomic adds (as between two runs of
** atomic adds on several threads).  Adds in a body that was not inlined
** into gj_entry (a huge body) are left as they are.
*/
#include "native.h"

#include <stdlib.h>
#include <string.h>

#define ADJ_BITS 8                      /* 256 entries per float type */
#define ADJ_N (1u << ADJ_BITS)

typedef struct adj_ty {
  LLVMTypeRef t;                        /* float or double */
  LLVMValueRef keys, vals;              /* the table: [N x ptr], [N x t] */
  LLVMValueRef add, flush;              /* the helpers (made on first use) */
} adj_ty;

/* The helper `void add(keys, vals, p, v)`: the table's entry for p gets v. */
static LLVMValueRef make_add(LLVMModuleRef m, LLVMContextRef c, LLVMTypeRef t,
                             LLVMTypeRef ptr, const char *name)
{
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c), ps[4] = { ptr, ptr, ptr, t };
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c), ps, 4, 0);
  LLVMValueRef f = LLVMAddFunction(m, name, fty), h, kp, vp, k, v0, p, v;
  LLVMBasicBlockRef e = LLVMAppendBasicBlockInContext(c, f, "e");
  LLVMBasicBlockRef hit = LLVMAppendBasicBlockInContext(c, f, "hit");
  LLVMBasicBlockRef miss = LLVMAppendBasicBlockInContext(c, f, "miss");
  LLVMBasicBlockRef evict = LLVMAppendBasicBlockInContext(c, f, "evict");
  LLVMBasicBlockRef fill = LLVMAppendBasicBlockInContext(c, f, "fill");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  unsigned kind = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                             LLVMCreateEnumAttribute(c, kind, 0));
  LLVMSetLinkage(f, LLVMInternalLinkage);
  p = LLVMGetParam(f, 2);
  v = LLVMGetParam(f, 3);
  LLVMPositionBuilderAtEnd(b, e);
  /* Fibonacci hashing of the element's index (address / 4) */
  h = LLVMBuildLShr(b, LLVMBuildPtrToInt(b, p, i64, ""), LLVMConstInt(i64, 2, 0), "");
  h = LLVMBuildMul(b, h, LLVMConstInt(i64, 0x9E3779B97F4A7C15ull, 0), "");
  h = LLVMBuildLShr(b, h, LLVMConstInt(i64, 64 - ADJ_BITS, 0), "");
  kp = LLVMBuildGEP2(b, ptr, LLVMGetParam(f, 0), &h, 1, "");
  vp = LLVMBuildGEP2(b, t, LLVMGetParam(f, 1), &h, 1, "");
  k = LLVMBuildLoad2(b, ptr, kp, "");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, k, p, ""), hit, miss);
  LLVMPositionBuilderAtEnd(b, hit);
  v0 = LLVMBuildLoad2(b, t, vp, "");
  LLVMBuildStore(b, LLVMBuildFAdd(b, v0, v, ""), vp);
  LLVMBuildRetVoid(b);
  LLVMPositionBuilderAtEnd(b, miss);
  LLVMBuildCondBr(b, LLVMBuildIsNull(b, k, ""), fill, evict);
  LLVMPositionBuilderAtEnd(b, evict);
  LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpFAdd, k, LLVMBuildLoad2(b, t, vp, ""),
                     LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildBr(b, fill);
  LLVMPositionBuilderAtEnd(b, fill);
  LLVMBuildStore(b, p, kp);
  LLVMBuildStore(b, v, vp);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  return f;
}

/* The helper `void flush(keys, vals)`: every entry added into memory. */
static LLVMValueRef make_flush(LLVMModuleRef m, LLVMContextRef c, LLVMTypeRef t,
                               LLVMTypeRef ptr, const char *name)
{
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c), ps[2] = { ptr, ptr };
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c), ps, 2, 0);
  LLVMValueRef f = LLVMAddFunction(m, name, fty), i, k, ni, zero = LLVMConstInt(i64, 0, 0);
  LLVMBasicBlockRef e = LLVMAppendBasicBlockInContext(c, f, "e");
  LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(c, f, "loop");
  LLVMBasicBlockRef put = LLVMAppendBasicBlockInContext(c, f, "put");
  LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c, f, "next");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c, f, "done");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  unsigned kind = LLVMGetEnumAttributeKindForName("noinline", 8);
  LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c, kind, 0));
  LLVMSetLinkage(f, LLVMInternalLinkage);
  LLVMPositionBuilderAtEnd(b, e);
  LLVMBuildBr(b, loop);
  LLVMPositionBuilderAtEnd(b, loop);
  i = LLVMBuildPhi(b, i64, "i");
  k = LLVMBuildLoad2(b, ptr, LLVMBuildGEP2(b, ptr, LLVMGetParam(f, 0), &i, 1, ""), "");
  LLVMBuildCondBr(b, LLVMBuildIsNull(b, k, ""), next, put);
  LLVMPositionBuilderAtEnd(b, put);
  LLVMBuildAtomicRMW(b, LLVMAtomicRMWBinOpFAdd, k,
                     LLVMBuildLoad2(b, t, LLVMBuildGEP2(b, t, LLVMGetParam(f, 1), &i, 1, ""), ""),
                     LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildBr(b, next);
  LLVMPositionBuilderAtEnd(b, next);
  ni = LLVMBuildAdd(b, i, LLVMConstInt(i64, 1, 0), "");
  cpu_plain_loop(c, LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, ni,
                                                     LLVMConstInt(i64, ADJ_N, 0), ""),
                                     loop, done));   /* compiled small: it runs once */
  LLVMAddIncoming(i, &zero, &e, 1);
  LLVMAddIncoming(i, &ni, &next, 1);
  LLVMPositionBuilderAtEnd(b, done);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  return f;
}

/* Is I a marked float add, whose result is unused, at an address of
** address space 0? */
static int marked(LLVMValueRef I, unsigned kind)
{
  LLVMTypeRef pt;
  if (!LLVMIsAAtomicRMWInst(I) || LLVMGetAtomicRMWBinOp(I) != LLVMAtomicRMWBinOpFAdd ||
      !LLVMGetMetadata(I, kind) || LLVMGetFirstUse(I))
    return 0;
  pt = LLVMTypeOf(LLVMGetOperand(I, 0));
  return LLVMGetPointerAddressSpace(pt) == 0;
}

int cpu_adj_cache(LLVMModuleRef m)
{
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMValueRef entry = LLVMGetNamedFunction(m, "gj_entry"), I, next;
  LLVMBasicBlockRef bb;
  LLVMBuilderRef b;
  unsigned kind = LLVMGetMDKindIDInContext(c, "gj.adj", 6);
  adj_ty ty[2];
  int found = 0, j;
  if (!entry || !LLVMGetFirstBasicBlock(entry)) return 0;
  for (bb = LLVMGetFirstBasicBlock(entry); bb && !found; bb = LLVMGetNextBasicBlock(bb))
    for (I = LLVMGetFirstInstruction(bb); I && !found; I = LLVMGetNextInstruction(I))
      found = marked(I, kind);
  if (!found) return 0;
  memset(ty, 0, sizeof(ty));
  ty[0].t = LLVMDoubleTypeInContext(c);
  ty[1].t = LLVMFloatTypeInContext(c);
  b = LLVMCreateBuilderInContext(c);
  for (bb = LLVMGetFirstBasicBlock(entry); bb; bb = LLVMGetNextBasicBlock(bb))
    for (I = LLVMGetFirstInstruction(bb); I; I = next) {
      LLVMValueRef args[4], p = NULL, v = NULL;
      LLVMTypeRef ptr;
      adj_ty *T = NULL;
      next = LLVMGetNextInstruction(I);
      if (marked(I, kind)) {
        p = LLVMGetOperand(I, 0);
        v = LLVMGetOperand(I, 1);
        for (j = 0; j < 2; j++)
          if (LLVMTypeOf(v) == ty[j].t) T = &ty[j];
      }
      if (!T) continue;
      ptr = LLVMTypeOf(p);
      if (!T->keys) {
        LLVMBasicBlockRef e = LLVMGetEntryBasicBlock(entry);
        LLVMPositionBuilderBefore(b, LLVMGetFirstInstruction(e));
        T->keys = LLVMBuildArrayAlloca(b, ptr, LLVMConstInt(LLVMInt32TypeInContext(c), ADJ_N, 0),
                                       "adj.keys");
        T->vals = LLVMBuildArrayAlloca(b, T->t, LLVMConstInt(LLVMInt32TypeInContext(c), ADJ_N, 0),
                                       "adj.vals");
        LLVMBuildMemSet(b, T->keys, LLVMConstInt(LLVMInt8TypeInContext(c), 0, 0),
                        LLVMConstInt(LLVMInt64TypeInContext(c), ADJ_N * 8, 0), 8);
        T->add = make_add(m, c, T->t, ptr, T == &ty[0] ? "gj.adj.add.f64" : "gj.adj.add.f32");
        T->flush = make_flush(m, c, T->t, ptr,
                              T == &ty[0] ? "gj.adj.flush.f64" : "gj.adj.flush.f32");
      }
      args[0] = T->keys;
      args[1] = T->vals;
      args[2] = p;
      args[3] = v;
      LLVMPositionBuilderBefore(b, I);
      LLVMBuildCall2(b, LLVMGlobalGetValueType(T->add), T->add, args, 4, "");
      LLVMInstructionEraseFromParent(I);
    }
  /* every return of gj_entry flushes the tables first */
  for (bb = LLVMGetFirstBasicBlock(entry); bb; bb = LLVMGetNextBasicBlock(bb)) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
    if (!t || LLVMGetInstructionOpcode(t) != LLVMRet) continue;
    for (j = 0; j < 2; j++)
      if (ty[j].keys) {
        LLVMValueRef args[2] = { ty[j].keys, ty[j].vals };
        LLVMPositionBuilderBefore(b, t);
        LLVMBuildCall2(b, LLVMGlobalGetValueType(ty[j].flush), ty[j].flush, args, 2, "");
      }
  }
  LLVMDisposeBuilder(b);
  return 0;
}
