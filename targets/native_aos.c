/*
** The native target, part three: whole store groups for arrays of structs.
**
** A particle update on an array of FFI structs (`q.x = q.x + q.vx * dt`)
** reads every field of p[i] but writes only some: vx is read, not written.
** LLVM 15's loop vectorizer loads the fields as one interleaved group
** (wide loads and shuffles) but stores a group with a gap as scatters
** (bench/structs.lua: 27 vscatterqps, AoS 2.2x slower than one array per
** field).  And a store under an `if` (`if q.y < 0 then q.y = -q.y ...`)
** makes it predicate the stores (masked scatters).  This pass, run on the
** split's fast loop when LLVM's loop vectorizer is left to vectorize it (the
** work-item vectorizer did not take it), rewrites both so that the
** vectorizer sees one complete group of unconditional stores:
**
**   sink:  in a triangle P -> T -> J (P branches to T or J, T only to J),
**          a store in T to an address that P accesses last with a plain
**          load or store of the same type (value V) moves to J as a store
**          of phi [V, P], [its value, T];
**   fill:  in a block J that stores to fields of one array element (a base
**          `getelementptr %T, ptr %a, i64 %i`, constant offsets within
**          sizeof(%T)), a field of that element that the work item loaded
**          before (in J, or in a block that dominates J through straight
**          edges and triangles) and that nothing may have written since
**          is stored back after J's last store to the element:
**          `store (freeze (load)), addr`.
**
** Legality.  In one thread's serial order both rewrites store the value the
** location already holds, with no write to it in between (checked below:
** no store that may overlap, no call other than readnone intrinsics, no
** atomic, fence or volatile access on the way), so they change nothing.
** Across threads (the pool runs groups at once): the work item read the
** location (fill, sink after a load) or wrote it (sink after a store) on
** every path to the new store, with no synchronization in between.  Another
** work item writing it concurrently would race with that access, a data
** race in the OpenCL/CUDA memory model (no ordering without atomics or
** barriers), so in a race-free program nobody writes it between the access
** and the new store; a concurrent reader sees the same bits either way.
** Kernels with barriers are not split and never get here; atomics and
** fences on the way stop a rewrite.  Loads of other fields are no hazard.
** Addresses are compared only as (same base value, constant byte range):
** two different bases (two arguments, p[i] and p[i + 1]) may alias, so a
** store through another base on the way stops a rewrite.
**
** Why freeze: EarlyCSE and DSE delete `store (load p), p` before the loop
** vectorizer runs; a frozen value is not a load, so the store stays.  It
** costs nothing (freeze of a loaded value emits no instruction).
*/
#include "native.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <llvm-c/Target.h>

#define AOS_CHAIN 8              /* blocks followed back from a store group */

typedef struct aos_addr {
  LLVMValueRef base;
  long long off, size;
} aos_addr;

typedef struct aos_ctx {
  LLVMModuleRef m;
  LLVMTargetDataRef td;
  LLVMBuilderRef b;
  LLVMBasicBlockRef *bbs;        /* the fast loop's blocks */
  size_t nbbs;
  unsigned readnone;             /* the attribute kind */
  int sunk, filled;
} aos_ctx;

static int in_list(const aos_ctx *x, LLVMBasicBlockRef bb)
{
  return cpu_block_in(x->bbs, x->nbbs, bb);
}

/* A plain (not volatile, not atomic) load or store. */
static int simple_access(LLVMValueRef in)
{
  if (!LLVMIsALoadInst(in) && !LLVMIsAStoreInst(in)) return 0;
  return !LLVMGetVolatile(in) &&
         LLVMGetOrdering(in) == LLVMAtomicOrderingNotAtomic;
}

/* p as a base plus a constant byte offset: getelementptrs with constant
** indices are folded into the offset. */
static void decompose(const aos_ctx *x, LLVMValueRef p, aos_addr *a)
{
  long long off = 0;
  while (LLVMIsAGetElementPtrInst(p) || (LLVMIsAConstantExpr(p) &&
         LLVMGetConstOpcode(p) == LLVMGetElementPtr)) {
    unsigned i, n = (unsigned)LLVMGetNumOperands(p);
    LLVMTypeRef ty = LLVMGetGEPSourceElementType(p);
    long long o = 0;
    for (i = 1; i < n; i++)
      if (!LLVMIsAConstantInt(LLVMGetOperand(p, i))) break;
    if (i < n) break;
    for (i = 1; i < n; i++) {
      long long k = LLVMConstIntGetSExtValue(LLVMGetOperand(p, i));
      if (i == 1) {
        o += k * (long long)LLVMABISizeOfType(x->td, ty);
      } else if (LLVMGetTypeKind(ty) == LLVMStructTypeKind) {
        o += (long long)LLVMOffsetOfElement(x->td, ty, (unsigned)k);
        ty = LLVMStructGetTypeAtIndex(ty, (unsigned)k);
      } else if (LLVMGetTypeKind(ty) == LLVMArrayTypeKind) {
        ty = LLVMGetElementType(ty);
        o += k * (long long)LLVMABISizeOfType(x->td, ty);
      } else {
        break;
      }
    }
    if (i < n) break;
    off += o;
    p = LLVMGetOperand(p, 0);
  }
  a->base = p;
  a->off = off;
}

/* The address a plain load or store in accesses. */
static LLVMTypeRef access_of(const aos_ctx *x, LLVMValueRef in, aos_addr *a)
{
  int st = LLVMIsAStoreInst(in) != NULL;
  LLVMTypeRef ty = st ? LLVMTypeOf(LLVMGetOperand(in, 0)) : LLVMTypeOf(in);
  decompose(x, LLVMGetOperand(in, st ? 1 : 0), a);
  a->size = (long long)LLVMStoreSizeOfType(x->td, ty);
  return ty;
}

static int disjoint(const aos_addr *a, const aos_addr *b)
{
  return a->base == b->base &&
         (a->off + a->size <= b->off || b->off + b->size <= a->off);
}

/* May in write *a (or, with reads, also read it), or order memory?  Stores
** and loads are judged by their address; calls other than readnone
** intrinsics, atomics, fences and volatile accesses always may. */
static int may_touch(const aos_ctx *x, LLVMValueRef in, const aos_addr *a,
                     int reads)
{
  LLVMOpcode op = LLVMGetInstructionOpcode(in);
  aos_addr b;
  if (op == LLVMStore || op == LLVMLoad) {
    if (!simple_access(in)) return 1;
    if (op == LLVMLoad && !reads) return 0;
    access_of(x, in, &b);
    return !disjoint(a, &b);
  }
  if (op == LLVMCall) {
    LLVMValueRef f = LLVMGetCalledValue(in);
    size_t len;
    const char *name;
    if (!f || !LLVMIsAFunction(f)) return 1;
    name = LLVMGetValueName2(f, &len);
    return !(len > 5 && strncmp(name, "llvm.", 5) == 0 &&
             LLVMGetEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                         x->readnone));
  }
  return op == LLVMAtomicRMW || op == LLVMAtomicCmpXchg || op == LLVMFence ||
         op == LLVMInvoke || op == LLVMCallBr || op == LLVMVAArg;
}

/* Does any instruction in [from, to) (to NULL: the block's end) touch *a? */
static int range_touches(const aos_ctx *x, LLVMValueRef from, LLVMValueRef to,
                         const aos_addr *a, int reads)
{
  for (; from && from != to; from = LLVMGetNextInstruction(from))
    if (may_touch(x, from, a, reads)) return 1;
  return 0;
}

static unsigned count_preds(LLVMBasicBlockRef bb, LLVMBasicBlockRef *p)
{
  LLVMValueRef u;
  unsigned n = 0;
  LLVMUseRef use;
  for (use = LLVMGetFirstUse(LLVMBasicBlockAsValue(bb)); use;
       use = LLVMGetNextUse(use)) {
    u = LLVMGetUser(use);
    if (!LLVMIsATerminatorInst(u)) continue;
    if (n < 2) p[n] = LLVMGetInstructionParent(u);
    n++;
  }
  return n;
}

static LLVMBasicBlockRef only_succ(LLVMBasicBlockRef bb)
{
  LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
  return t && LLVMGetNumSuccessors(t) == 1 ? LLVMGetSuccessor(t, 0) : NULL;
}

/* Is j the join of a triangle p -> t -> j (p branches to t or j, t has p as
** its only predecessor and j as its only successor)?  *p and *t get them. */
static int triangle(LLVMBasicBlockRef j, LLVMBasicBlockRef *p,
                    LLVMBasicBlockRef *t)
{
  LLVMBasicBlockRef pr[2], q[2];
  LLVMValueRef br;
  int k;
  if (count_preds(j, pr) != 2 || pr[0] == pr[1]) return 0;
  for (k = 0; k < 2; k++) {
    LLVMBasicBlockRef tt = pr[k], pp = pr[1 - k];
    if (tt == j || pp == j) continue;   /* a self-loop: not a triangle */
    if (only_succ(tt) != j || count_preds(tt, q) != 1 || q[0] != pp) continue;
    br = LLVMGetBasicBlockTerminator(pp);
    if (!LLVMIsABranchInst(br) || LLVMGetNumSuccessors(br) != 2) continue;
    *p = pp;
    *t = tt;
    return 1;
  }
  return 0;
}

/* -- sink ------------------------------------------------------------------ */

/* The last instruction of p that accesses *a, when it is a plain load or
** store of exactly *a with type ty and nothing after it in p may write *a;
** else NULL. */
static LLVMValueRef last_access(const aos_ctx *x, LLVMBasicBlockRef p,
                                const aos_addr *a, LLVMTypeRef ty)
{
  LLVMValueRef in;
  for (in = LLVMGetLastInstruction(p); in; in = LLVMGetPreviousInstruction(in)) {
    aos_addr b;
    if (!may_touch(x, in, a, 1)) continue;
    if (!simple_access(in) || access_of(x, in, &b) != ty ||
        b.base != a->base || b.off != a->off)
      return NULL;
    return range_touches(x, LLVMGetNextInstruction(in), NULL, a, 0)
               ? NULL : in;
  }
  return NULL;
}

/* Move the stores of t that qualify to j (see the head comment). */
static void sink_triangle(aos_ctx *x, LLVMBasicBlockRef p, LLVMBasicBlockRef t,
                          LLVMBasicBlockRef j)
{
  LLVMValueRef in = LLVMGetFirstInstruction(t), next;
  LLVMValueRef at = LLVMGetFirstInstruction(j);
  /* the sunk stores go after j's phis, in t's order, before at */
  while (LLVMIsAPHINode(at)) at = LLVMGetNextInstruction(at);
  for (; in; in = next) {
    aos_addr a;
    LLVMTypeRef ty;
    LLVMValueRef prev, v, phi, st, vals[2];
    LLVMBasicBlockRef from[2];
    next = LLVMGetNextInstruction(in);
    if (!LLVMIsAStoreInst(in) || !simple_access(in)) continue;
    ty = access_of(x, in, &a);
    /* nothing after it in t may read or write the location */
    if (range_touches(x, next, NULL, &a, 1)) continue;
    prev = last_access(x, p, &a, ty);
    if (!prev) continue;
    v = LLVMIsAStoreInst(prev) ? LLVMGetOperand(prev, 0) : prev;
    LLVMPositionBuilderBefore(x->b, LLVMGetFirstInstruction(j));
    phi = LLVMBuildPhi(x->b, ty, "aos.sunk");
    vals[0] = v;
    vals[1] = LLVMGetOperand(in, 0);
    from[0] = p;
    from[1] = t;
    LLVMAddIncoming(phi, vals, from, 2);
    LLVMPositionBuilderBefore(x->b, at);
    /* prev's address: the same bytes, and defined where it dominates j */
    st = LLVMBuildStore(x->b, phi,
                        LLVMGetOperand(prev, LLVMIsAStoreInst(prev) ? 1 : 0));
    LLVMSetAlignment(st, LLVMGetAlignment(in));
    LLVMInstructionEraseFromParent(in);
    x->sunk++;
  }
}

/* -- fill ------------------------------------------------------------------ */

typedef struct aos_seg {
  LLVMBasicBlockRef bb;
  int cand;                     /* its loads run whenever j runs */
} aos_seg;

/* The blocks before j whose loads dominate it, in reverse program order:
** seg[0] is j; a straight edge p -> j adds p, a triangle p -> t -> j adds t
** (not a candidate) and p. */
static int chain_of(aos_ctx *x, LLVMBasicBlockRef j, aos_seg *seg, int max)
{
  int n = 0, k;
  seg[n].bb = j;
  seg[n++].cand = 1;
  /* the header's other predecessor is outside the loop: stop there */
  while (n + 2 <= max && j != x->bbs[0]) {
    LLVMBasicBlockRef pr[2], p, t;
    if (count_preds(j, pr) == 1 && only_succ(pr[0]) == j &&
        in_list(x, pr[0])) {
      p = pr[0];
    } else if (triangle(j, &p, &t) && in_list(x, p) && in_list(x, t)) {
      seg[n].bb = t;
      seg[n++].cand = 0;
    } else {
      break;
    }
    /* a block seen again is a cycle (unreachable code): stop */
    for (k = 0; k < n && seg[k].bb != p; k++) {}
    if (k < n) break;
    seg[n].bb = p;
    seg[n++].cand = 1;
    j = p;
  }
  return n;
}

/* Nothing between ld (in seg[k]) and the end of `last` in j may write *a. */
static int clear_path(const aos_ctx *x, const aos_seg *seg, int k,
                      LLVMValueRef ld, LLVMValueRef last, const aos_addr *a)
{
  int i;
  if (k == 0)
    return !range_touches(x, LLVMGetNextInstruction(ld),
                          LLVMGetNextInstruction(last), a, 0);
  if (range_touches(x, LLVMGetNextInstruction(ld), NULL, a, 0)) return 0;
  for (i = k - 1; i > 0; i--)
    if (range_touches(x, LLVMGetFirstInstruction(seg[i].bb), NULL, a, 0))
      return 0;
  return !range_touches(x, LLVMGetFirstInstruction(seg[0].bb),
                        LLVMGetNextInstruction(last), a, 0);
}

/* The size of an element when base is `getelementptr %T, ptr, i64 %i`; else
** 0 (not an array element: nothing is filled). */
static long long element_size(const aos_ctx *x, LLVMValueRef base)
{
  if (!LLVMIsAGetElementPtrInst(base) || LLVMGetNumOperands(base) != 2)
    return 0;
  return (long long)LLVMABISizeOfType(x->td, LLVMGetGEPSourceElementType(base));
}

/* Fill the gaps of the store group of base in j, whose last store is last. */
static void fill_group(aos_ctx *x, LLVMBasicBlockRef j, LLVMValueRef base,
                       LLVMValueRef last)
{
  aos_seg seg[AOS_CHAIN];
  aos_addr cov[64];
  int ncov = 0, nseg, k;
  long long esz = element_size(x, base);
  LLVMValueRef in;
  if (esz <= 0) return;
  /* the bytes j stores to the element */
  for (in = LLVMGetFirstInstruction(j); in; in = LLVMGetNextInstruction(in)) {
    aos_addr a;
    if (!LLVMIsAStoreInst(in) || !simple_access(in)) continue;
    access_of(x, in, &a);
    if (a.base == base && ncov < 64) cov[ncov++] = a;
  }
  nseg = chain_of(x, j, seg, AOS_CHAIN);
  for (k = 0; k < nseg; k++) {
    if (!seg[k].cand) continue;
    for (in = LLVMGetFirstInstruction(seg[k].bb); in && in != last;
         in = LLVMGetNextInstruction(in)) {
      aos_addr a;
      LLVMValueRef fz, st;
      int c;
      if (!LLVMIsALoadInst(in) || !simple_access(in)) continue;
      access_of(x, in, &a);
      if (a.base != base || a.off < 0 || a.off + a.size > esz) continue;
      for (c = 0; c < ncov && disjoint(&a, &cov[c]); c++) {}
      if (c < ncov || ncov == 64) continue;
      if (!clear_path(x, seg, k, in, last, &a)) continue;
      LLVMPositionBuilderBefore(x->b, LLVMGetNextInstruction(last));
      fz = LLVMBuildFreeze(x->b, in, "aos.fill");
      st = LLVMBuildStore(x->b, fz, LLVMGetOperand(in, 0));
      LLVMSetAlignment(st, LLVMGetAlignment(in));
      cov[ncov++] = a;
      x->filled++;
    }
  }
}

/* Each base that j stores to, once, with its last store in j. */
static void fill_block(aos_ctx *x, LLVMBasicBlockRef j)
{
  LLVMValueRef in, bases[32], lasts[32];
  int n = 0, i;
  for (in = LLVMGetFirstInstruction(j); in; in = LLVMGetNextInstruction(in)) {
    aos_addr a;
    if (!LLVMIsAStoreInst(in) || !simple_access(in)) continue;
    access_of(x, in, &a);
    for (i = 0; i < n && bases[i] != a.base; i++) {}
    if (i == n) {
      if (n == 32) continue;
      bases[n++] = a.base;
    }
    lasts[i] = in;
  }
  for (i = 0; i < n; i++) fill_group(x, j, bases[i], lasts[i]);
}

int cpu_aos(LLVMModuleRef m, const cpu_split_site *s, char *note,
            size_t notesz)
{
  aos_ctx x;
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMValueRef latch = LLVMGetBasicBlockTerminator(
      LLVMGetInstructionParent(s->next));
  size_t i, n;
  /* the work-item vectorizer took the loop (its rest loop is plain) */
  if (LLVMGetMetadata(latch, LLVMGetMDKindIDInContext(c, "llvm.loop", 9)))
    return 0;
  memset(&x, 0, sizeof(x));
  x.m = m;
  x.readnone = LLVMGetEnumAttributeKindForName("readnone", 8);
  if (cpu_loop_blocks(s, &x.bbs, &x.nbbs)) {
    free(x.bbs);
    return 0;                   /* out of memory: the loop stays as it is */
  }
  x.td = LLVMCreateTargetData(LLVMGetDataLayoutStr(m));
  x.b = LLVMCreateBuilderInContext(c);
  n = x.nbbs;
  for (i = 0; i < n; i++) {
    LLVMBasicBlockRef p, t;
    if (x.bbs[i] != s->head && triangle(x.bbs[i], &p, &t) &&
        in_list(&x, p) && in_list(&x, t))
      sink_triangle(&x, p, t, x.bbs[i]);
  }
  for (i = 0; i < n; i++) fill_block(&x, x.bbs[i]);
  LLVMDisposeBuilder(x.b);
  LLVMDisposeTargetData(x.td);
  free(x.bbs);
  if (x.sunk || x.filled) {
    size_t used = strlen(note);
    snprintf(note + used, notesz - used, "%sstruct stores: %d sunk, %d filled",
             used ? "; " : "", x.sunk, x.filled);
  }
  return 0;
}
