/*
** Reverse mode (src/gj_ad.h, docs/autodiff.md).
**
** The new @gj_body runs the kernel's own blocks first (the forward pass,
** the primal results stored as the kernel stores them), and where the
** kernel returns it goes on into the reverse pass: one reverse block per
** forward block, after them in the same function.  A reverse block takes
** its forward block's instructions backwards, adding each one's adjoint
** times its partial derivatives into its operands' adjoints, then goes to
** the reverse block of the predecessor the forward pass came from (kept,
** where there are several, as an index stored in the forward block), the
** phis' adjoints passed along that edge.  With no loops each block runs at
** most once per work item, so every forward value the reverse pass needs
** is kept in a slot of its own (an alloca stored once, after its
** definition) and every adjoint is a slot too (zeroed on entry, and
** again when its value has been passed on); the optimizer's SROA turns
** them into registers.  Loops: a value defined in a loop that the reverse
** needs, and the predecessor index of a block in a loop, go on a stack of
** their own per work item instead (pushed where defined, read at its top
** by the reverse, popped where the reverse passes the definition), in the
** tape (gj_ad_tape.c): the hidden last argument, an array of bytes the
** launch passes.  A stack that runs out writes past nothing, and where the
** forward pass ends the work item claims the fault record (a site naming
** the first loop) and returns without the reverse, which would read what
** was not kept: never a silent wrong number.  Arrays: a read of x[i] adds
** its adjoint into dx[i], atomically unless the array is the work item's
** own in a 1-D launch (gj_ad_own.c); a write y[i] = v takes dy[i] as v's
** adjoint and zeroes dy[i] (Enzyme's convention).  A float scalar's
** adjoint is added (atomically) into element 0 of its adjoint array at the
** end.  Refused: a read of an array after a write to it in one launch,
** and what forward mode refuses.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gj_ad_rev.h"

static LLVMValueRef first_non_phi(LLVMBasicBlockRef b)
{
  LLVMValueRef v = LLVMGetFirstInstruction(b);
  while (v && LLVMGetInstructionOpcode(v) == LLVMPHI) v = LLVMGetNextInstruction(v);
  return v;
}

static int block_index(rev *R, LLVMBasicBlockRef b);
static LLVMValueRef fwd(rev *R, LLVMValueRef v);

/* Can the reverse pass compute v again from its operands, rather than keep
** it on a stack?  Arithmetic, comparisons, casts, selects and addresses,
** and loads from an array (or constant data) that nothing in the launch
** writes: they give the same value again, bit for bit. */
static int recomputable(rev *R, LLVMValueRef v)
{
  if (LLVMGetNumOperands(v) > 8) return 0;
  switch (LLVMGetInstructionOpcode(v)) {
  case LLVMAdd: case LLVMSub: case LLVMMul: case LLVMShl: case LLVMLShr:
  case LLVMAShr: case LLVMAnd: case LLVMOr: case LLVMXor:
  case LLVMFAdd: case LLVMFSub: case LLVMFMul: case LLVMFDiv: case LLVMFNeg:
  case LLVMTrunc: case LLVMZExt: case LLVMSExt: case LLVMFPToUI: case LLVMFPToSI:
  case LLVMUIToFP: case LLVMSIToFP: case LLVMFPTrunc: case LLVMFPExt:
  case LLVMPtrToInt: case LLVMIntToPtr: case LLVMBitCast:
  case LLVMICmp: case LLVMFCmp: case LLVMSelect: case LLVMGetElementPtr:
  case LLVMFreeze:
    return 1;
  case LLVMLoad: {
    LLVMValueRef p = LLVMGetOperand(v, 0), r;
    if (LLVMGetVolatile(v) || LLVMGetOrdering(v) != LLVMAtomicOrderingNotAtomic) return 0;
    while (LLVMIsAGetElementPtrInst(p) || LLVMIsAConstantExpr(p)) p = LLVMGetOperand(p, 0);
    if (LLVMIsAGlobalVariable(p)) return LLVMIsGlobalConstant(p);
    r = gj_ad_root(R->a, LLVMGetOperand(v, 0));
    return !R->wild && r && !gj_admap_get(&R->written, r);
  }
  default:
    return 0;
  }
}

/* v computed again at a->B, from its operands where the reverse needs
** them (once per reverse block: R->memo). */
static LLVMValueRef recompute(rev *R, LLVMValueRef v)
{
  LLVMValueRef c = gj_admap_get(&R->memo, v), ops[8];
  int n = LLVMGetNumOperands(v), i;
  if (c) return c;
  for (i = 0; i < n; i++)
    if (!(ops[i] = fwd(R, LLVMGetOperand(v, i)))) return NULL;
  c = LLVMInstructionClone(v);
  for (i = 0; i < n; i++) LLVMSetOperand(c, (unsigned)i, ops[i]);
  LLVMInsertIntoBuilder(R->a->B, c);
  if (gj_admap_put(&R->memo, v, c)) return NULL;
  return c;
}

/* Where the kernel writes memory: the arrays it writes (R->written), or
** R->wild when it writes through a pointer of no known array.  A call's
** pointer arguments count as written.  Local memory (allocas) is never
** read again by recomputation. */
static int find_written(rev *R)
{
  gj_ad *a = R->a;
  unsigned b;
  LLVMValueRef *I;
  for (b = 0; b < R->nfb; b++)
    for (I = R->ins[b]; *I; I++) {
      LLVMOpcode op = LLVMGetInstructionOpcode(*I);
      int k, n = 0;
      LLVMValueRef ps[16];
      if (op == LLVMStore) ps[n++] = LLVMGetOperand(*I, 1);
      else if (op == LLVMAtomicRMW || op == LLVMAtomicCmpXchg) ps[n++] = LLVMGetOperand(*I, 0);
      else if (op == LLVMCall) {
        unsigned j, na = LLVMGetNumArgOperands(*I);
        for (j = 0; j < na && n < 16; j++)
          if (LLVMGetTypeKind(LLVMTypeOf(LLVMGetOperand(*I, j))) == LLVMPointerTypeKind)
            ps[n++] = LLVMGetOperand(*I, j);
        if (j < na) R->wild = 1;
      }
      for (k = 0; k < n; k++) {
        LLVMValueRef p = ps[k], r = gj_ad_root(a, p);
        if (r) {
          if (gj_admap_put(&R->written, r, r)) return gj_err_set(a->err, "out of memory");
          continue;
        }
        while (LLVMIsAGetElementPtrInst(p) || LLVMIsABitCastInst(p)) p = LLVMGetOperand(p, 0);
        /* local memory, the work item's state (the body's first
        ** parameter), a record a call returns (faults, prints): no array */
        if (!LLVMIsAAllocaInst(p) && !LLVMIsACallInst(p) && p != LLVMGetParam(a->fn, 0))
          R->wild = 1;
      }
    }
  return 0;
}

/* The forward value v where the reverse pass (a->B) needs it: a slot,
** or, defined in a loop, computed again (recomputable) or its stack. */
static LLVMValueRef fwd(rev *R, LLVMValueRef v)
{
  LLVMValueRef s;
  LLVMBasicBlockRef bb;
  int id = 0, b0;
  if (!LLVMIsAInstruction(v)) return v;   /* arguments, constants */
  if ((s = gj_adr_iv_value(R, v)) != NULL) return s;   /* a counted loop's */
  bb = LLVMGetInstructionParent(v);
  b0 = block_index(R, bb);
  if (b0 >= 0 && R->loop[b0] && !gj_admap_get(&R->keep, v) && recomputable(R, v))
    return recompute(R, v);
  s = gj_admap_get(&R->keep, v);
  if (!s) {
    LLVMValueRef at = LLVMGetInstructionOpcode(v) == LLVMPHI
                          ? first_non_phi(bb) : LLVMGetNextInstruction(v);
    int b = block_index(R, bb);
    LLVMPositionBuilderBefore(R->Bs, at);
    if (b >= 0 && R->loop[b]) {
      s = gj_adr_stack(R, v, &id);
      if (!s) return NULL;
      gj_adr_push(R, R->Bs, s, id, v);
    } else {
      s = gj_adr_slot(R, LLVMTypeOf(v), NULL);
      LLVMBuildStore(R->Bs, v, s);
    }
    if (gj_admap_put(&R->keep, v, s)) return NULL;
  }
  if (gj_admap_get(&R->stk, v)) {
    s = gj_adr_stack(R, v, &id);
    return gj_adr_peek(R, R->a->B, s, id, LLVMTypeOf(v));
  }
  return LLVMBuildLoad2(R->a->B, LLVMTypeOf(v), s, "");
}

static int has_adj(rev *R, LLVMValueRef v)
{
  return gj_admap_get(&R->adj, v) != NULL;
}

/* adj(v) += d */
static void acc(rev *R, LLVMValueRef v, LLVMValueRef d)
{
  LLVMBuilderRef B = R->a->B;
  LLVMValueRef s = gj_admap_get(&R->adj, v);
  if (!s || gj_ad_is_zero(d)) return;
  LLVMBuildStore(B, LLVMBuildFAdd(B, LLVMBuildLoad2(B, LLVMTypeOf(v), s, ""), d, ""), s);
}

/* The shadow of pointer p, where the reverse pass needs it, or NULL. */
static LLVMValueRef shadow(rev *R, LLVMValueRef p)
{
  LLVMValueRef sp = gj_admap_get(&R->a->sh, p);
  return sp ? fwd(R, sp) : NULL;
}

static int call_rule(rev *R, LLVMValueRef I, LLVMValueRef d)
{
  gj_ad *a = R->a;
  char fn[32];
  LLVMValueRef x, z, y, out, zero = LLVMConstNull(LLVMTypeOf(I));
  int r = gj_ad_call(a, I, fn, sizeof(fn));
  if (r <= 0) return r;
  x = LLVMGetOperand(I, 0);
  z = LLVMGetNumArgOperands(I) > 1 ? LLVMGetOperand(I, 1) : NULL;
  if (!has_adj(R, x) && !(z && has_adj(R, z))) return 0;
  {
    LLVMValueRef fx = fwd(R, x), fz = z ? fwd(R, z) : NULL;
    y = fwd(R, I);
    if (has_adj(R, x)) {
      if (gj_ad_math(a, I, fn, fx, d, fz, z ? zero : NULL, y, &out)) return -1;
      acc(R, x, out);
    }
    if (z && has_adj(R, z)) {
      if (gj_ad_math(a, I, fn, fx, zero, fz, d, y, &out)) return -1;
      acc(R, z, out);
    }
  }
  return 0;
}

/* *s += d for the read of an element of array root: plainly where the
** launch is 1-D and the array is the work item's own (gj_adr_find_own), else
** atomically.  May end a->B's block (rb's code goes on in a new one). */
static void add_adjoint(rev *R, LLVMBasicBlockRef rb, LLVMValueRef root,
                        LLVMValueRef s, LLVMValueRef d)
{
  gj_ad *a = R->a;
  LLVMBuilderRef B = a->B;
  LLVMBasicBlockRef plain, atom, join;
  LLVMValueRef v;
  if (!root || !gj_admap_get(&R->own, root)) {
    v = LLVMBuildAtomicRMW(B, LLVMAtomicRMWBinOpFAdd, s, d, LLVMAtomicOrderingMonotonic, 0);
    if (root && !gj_admap_get(&R->atom, root)) gj_adr_mark_adj(a, v);
    return;
  }
  if (!R->oned) R->oned = gj_adr_slot(R, LLVMInt1TypeInContext(a->C), NULL);
  plain = LLVMAppendBasicBlockInContext(a->C, a->fn, "adj.plain");
  atom = LLVMAppendBasicBlockInContext(a->C, a->fn, "adj.atomic");
  join = LLVMAppendBasicBlockInContext(a->C, a->fn, "adj.join");
  LLVMBuildCondBr(B, LLVMBuildLoad2(B, LLVMInt1TypeInContext(a->C), R->oned, ""), plain, atom);
  LLVMPositionBuilderAtEnd(B, plain);
  v = LLVMBuildLoad2(B, LLVMTypeOf(d), s, "");
  LLVMBuildStore(B, LLVMBuildFAdd(B, v, d, ""), s);
  LLVMBuildBr(B, join);
  LLVMPositionBuilderAtEnd(B, atom);
  /* (not marked: a 2-D launch's path; kept small, so that the optimizer
  ** can unswitch the work-item loop on the launch's shape and vectorize
  ** the plain one) */
  LLVMBuildAtomicRMW(B, LLVMAtomicRMWBinOpFAdd, s, d, LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildBr(B, join);
  LLVMPositionBuilderAtEnd(B, join);
  gj_admap_put(&R->rend, gj_adr_bbv(rb), gj_adr_bbv(join));
}

/* The adjoint of one forward instruction, at a->B in its reverse block. */
static int visit(rev *R, LLVMValueRef I)
{
  gj_ad *a = R->a;
  LLVMBuilderRef B = a->B;
  LLVMOpcode op = LLVMGetInstructionOpcode(I);
  LLVMTypeRef ty = LLVMTypeOf(I);
  int fl = gj_ad_isfloat(ty);
  LLVMValueRef d = NULL, x, y, s;
  if (fl && op != LLVMPHI) {   /* taken, and zeroed for an earlier iteration */
    s = gj_admap_get(&R->adj, I);
    d = LLVMBuildLoad2(B, ty, s, "");
    LLVMBuildStore(B, LLVMConstNull(ty), s);
  }
  switch (op) {
  case LLVMFAdd: case LLVMFSub:
    acc(R, LLVMGetOperand(I, 0), d);
    acc(R, LLVMGetOperand(I, 1), op == LLVMFAdd ? d : LLVMBuildFNeg(B, d, ""));
    return 0;
  case LLVMFMul:
    x = LLVMGetOperand(I, 0);
    y = LLVMGetOperand(I, 1);
    if (has_adj(R, x)) acc(R, x, LLVMBuildFMul(B, d, fwd(R, y), ""));
    if (has_adj(R, y)) acc(R, y, LLVMBuildFMul(B, d, fwd(R, x), ""));
    return 0;
  case LLVMFDiv:   /* d(x/y) = dx/y - (x/y) dy/y */
    x = LLVMGetOperand(I, 0);
    y = LLVMGetOperand(I, 1);
    if (!has_adj(R, x) && !has_adj(R, y)) return 0;
    s = LLVMBuildFDiv(B, d, fwd(R, y), "");
    acc(R, x, s);
    if (has_adj(R, y)) acc(R, y, LLVMBuildFNeg(B, LLVMBuildFMul(B, s, fwd(R, I), ""), ""));
    return 0;
  case LLVMFNeg:
    acc(R, LLVMGetOperand(I, 0), LLVMBuildFNeg(B, d, ""));
    return 0;
  case LLVMFPExt: case LLVMFPTrunc:
    x = LLVMGetOperand(I, 0);
    acc(R, x, LLVMBuildFPCast(B, d, LLVMTypeOf(x), ""));
    return 0;
  case LLVMSIToFP: case LLVMUIToFP:
    return 0;
  case LLVMBitCast:
    if (fl && !gj_ad_isfloat(LLVMTypeOf(LLVMGetOperand(I, 0))))
      return gj_ad_refuse(a, I, "a bit-level float operation (math.modf, "
                          "bit.*) has no derivative rule");
    if (fl) acc(R, LLVMGetOperand(I, 0), d);
    return 0;
  case LLVMSelect:
    x = LLVMGetOperand(I, 1);
    y = LLVMGetOperand(I, 2);
    if (fl && (has_adj(R, x) || has_adj(R, y))) {
      LLVMValueRef c = fwd(R, LLVMGetOperand(I, 0)), z = LLVMConstNull(ty);
      acc(R, x, LLVMBuildSelect(B, c, d, z, ""));
      acc(R, y, LLVMBuildSelect(B, c, z, d, ""));
    } else if (gj_admap_get(&a->sh, x) || gj_admap_get(&a->sh, y)) {
      return gj_ad_refuse(a, I, "reverse mode: a choice between arrays with a "
                          "shadow is not supported yet");
    }
    return 0;
  case LLVMPHI:   /* along the edges (rev_block) */
    if (!fl && LLVMGetTypeKind(ty) == LLVMPointerTypeKind) {
      unsigned j, n = LLVMCountIncoming(I);
      for (j = 0; j < n; j++)
        if (gj_admap_get(&a->sh, LLVMGetIncomingValue(I, j)))
          return gj_ad_refuse(a, I, "a pointer that is one of several arrays "
                              "with a shadow");
    }
    return 0;
  case LLVMLoad:
    if (!fl) return 0;
    if (gj_ad_mem(a, I, LLVMGetOperand(I, 0))) return -1;
    s = shadow(R, LLVMGetOperand(I, 0));
    if (s) add_adjoint(R, R->cur, gj_ad_root(a, LLVMGetOperand(I, 0)), s, d);
    return 0;
  case LLVMStore:
    x = LLVMGetOperand(I, 0);
    if (!gj_ad_isfloat(LLVMTypeOf(x))) return 0;
    if (gj_ad_mem(a, I, LLVMGetOperand(I, 1))) return -1;
    s = shadow(R, LLVMGetOperand(I, 1));
    if (s) {
      LLVMValueRef v = LLVMBuildLoad2(B, LLVMTypeOf(x), s, "");
      LLVMBuildStore(B, LLVMConstNull(LLVMTypeOf(x)), s);
      acc(R, x, v);
    }
    return 0;
  case LLVMGetElementPtr:
    return 0;   /* its shadow was built in the forward pass */
  case LLVMCall:
    return call_rule(R, I, d);
  case LLVMAtomicRMW: case LLVMAtomicCmpXchg: {
    /* atomic_add(y, j, v): y[j]'s adjoint is unchanged, v's is dy[j] */
    int r = gj_ad_atomic(a, I);
    if (r <= 0) return r;
    x = LLVMGetOperand(I, 1);
    if (has_adj(R, x))
      acc(R, x, LLVMBuildLoad2(B, LLVMTypeOf(x), shadow(R, LLVMGetOperand(I, 0)), ""));
    return 0;
  }
  case LLVMExtractValue: case LLVMInsertValue:
    if (fl) return gj_ad_refuse(a, I, "a float taken from an aggregate");
    return 0;
  default:
    if (fl) {
      char what[96];
      snprintf(what, sizeof(what), "LLVM instruction opcode %d has no derivative rule",
               (int)op);
      return gj_ad_refuse(a, I, what);
    }
    return 0;
  }
}

static int block_index(rev *R, LLVMBasicBlockRef b)
{
  unsigned i;
  for (i = 0; i < R->nfb; i++)
    if (R->fb[i] == b) return (int)i;
  return -1;
}

/* Is block `to` reachable from block `from` by one edge or more? */
static int reaches(rev *R, unsigned from, unsigned to, char *seen)
{
  LLVMValueRef t = LLVMGetBasicBlockTerminator(R->fb[from]);
  unsigned j, n = t ? LLVMGetNumSuccessors(t) : 0;
  for (j = 0; j < n; j++) {
    int s = block_index(R, LLVMGetSuccessor(t, j));
    if (s < 0 || seen[s]) continue;
    seen[s] = 1;
    if ((unsigned)s == to || reaches(R, (unsigned)s, to, seen)) return 1;
  }
  return 0;
}

/* Refuse a read of an array with a shadow that may run after a write to
** it in the same work item: the write's adjoint (zeroing dy) and the read's
** would need the order kept per element.  Reads before writes (y[i] =
** f(y[i])) are fine. */
static int read_after_write(rev *R)
{
  gj_ad *a = R->a;
  unsigned bs, bl;
  char *seen = calloc(R->nfb + 1, 1);
  if (!seen) return gj_err_set(a->err, "out of memory");
  for (bs = 0; bs < R->nfb; bs++) {
    LLVMValueRef *S;
    for (S = R->ins[bs]; *S; S++) {
      LLVMValueRef rs;
      if (LLVMGetInstructionOpcode(*S) != LLVMStore) continue;
      rs = gj_ad_root(a, LLVMGetOperand(*S, 1));
      if (!rs || !gj_admap_get(&a->sh, rs)) continue;
      for (bl = 0; bl < R->nfb; bl++) {
        LLVMValueRef *L = bl == bs && !R->loop[bs] ? S + 1 : R->ins[bl];
        if (bl != bs) {
          memset(seen, 0, R->nfb + 1);
          if (!reaches(R, bs, bl, seen)) continue;
        }
        for (; *L; L++)
          if (LLVMGetInstructionOpcode(*L) == LLVMLoad &&
              gj_ad_root(a, LLVMGetOperand(*L, 0)) == rs) {
            free(seen);
            return gj_ad_refuse(a, *L, "reverse mode: a read of an array after "
                                "a write to it in the same launch is not "
                                "supported");
          }
      }
    }
  }
  free(seen);
  return 0;
}

/* The forward blocks' instructions, before anything is added to them. */
static int snapshot(rev *R)
{
  unsigned b;
  R->ins = calloc(R->nfb, sizeof(LLVMValueRef *));
  if (!R->ins) return -1;
  for (b = 0; b < R->nfb; b++) {
    size_t n = 0, k = 0;
    LLVMValueRef v;
    for (v = LLVMGetFirstInstruction(R->fb[b]); v; v = LLVMGetNextInstruction(v)) n++;
    R->ins[b] = malloc((n + 1) * sizeof(LLVMValueRef));
    if (!R->ins[b]) return -1;
    for (v = LLVMGetFirstInstruction(R->fb[b]); v; v = LLVMGetNextInstruction(v))
      R->ins[b][k++] = v;
    R->ins[b][k] = NULL;
  }
  return 0;
}

/* The phis' adjoints along the edge from P into block b, then to P's
** reverse block. */
static int edge(rev *R, unsigned b, LLVMBasicBlockRef P)
{
  LLVMBuilderRef B = R->a->B;
  LLVMValueRef *I;
  size_t n = 0, k;
  LLVMValueRef *d;
  for (I = R->ins[b]; *I && LLVMGetInstructionOpcode(*I) == LLVMPHI; I++) n++;
  d = calloc(n + 1, sizeof(LLVMValueRef));
  if (!d) return gj_err_set(R->a->err, "out of memory");
  /* all the phis' adjoints first (one may be another's incoming value,
  ** or its own, in a loop), zeroed, then passed along */
  for (k = 0; k < n; k++) {
    LLVMValueRef phi = R->ins[b][k], s = gj_admap_get(&R->adj, phi);
    if (!s) continue;
    d[k] = LLVMBuildLoad2(B, LLVMTypeOf(phi), s, "");
    LLVMBuildStore(B, LLVMConstNull(LLVMTypeOf(phi)), s);
  }
  for (k = 0; k < n; k++) {
    LLVMValueRef phi = R->ins[b][k];
    unsigned j, ni = LLVMCountIncoming(phi);
    if (!d[k]) continue;
    for (j = 0; j < ni; j++)
      if (LLVMGetIncomingBlock(phi, j) == P) {
        acc(R, LLVMGetIncomingValue(phi, j), d[k]);
        break;
      }
  }
  free(d);
  gj_adr_iv_edge(R, b, P);
  LLVMBuildBr(R->a->B, LLVMValueAsBasicBlock(gj_admap_get(&R->rb, gj_adr_bbv(P))));
  return 0;
}

/* The predecessors of block b among the forward blocks (each once). */
static unsigned preds(rev *R, unsigned b, LLVMBasicBlockRef *out)
{
  unsigned i, j, n = 0, k;
  for (i = 0; i < R->nfb; i++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(R->fb[i]);
    unsigned ns = t ? LLVMGetNumSuccessors(t) : 0;
    for (j = 0; j < ns; j++)
      if (LLVMGetSuccessor(t, j) == R->fb[b]) {
        for (k = 0; k < n && out[k] != R->fb[i]; k++) {}
        if (k == n) out[n++] = R->fb[i];
      }
  }
  return n;
}

/* The reverse of block b goes back along the edge from pb[from] (an i32
** in 0..np): a switch on it, each case through edge(). */
static int back_to(rev *R, unsigned b, LLVMValueRef from, LLVMBasicBlockRef exitb,
                   LLVMBasicBlockRef *pb, unsigned np)
{
  gj_ad *a = R->a;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(a->C);
  LLVMValueRef sw = LLVMBuildSwitch(a->B, from, exitb, np);
  unsigned k;
  for (k = 0; k < np; k++) {
    LLVMBasicBlockRef e = LLVMAppendBasicBlockInContext(a->C, a->fn, "rev.edge");
    LLVMAddCase(sw, LLVMConstInt(i32, k, 0), e);
    LLVMPositionBuilderAtEnd(a->B, e);
    if (edge(R, b, pb[k])) return -1;
  }
  return 0;
}

/* Block b's reverse block, and its forward block's predecessor index. */
static int rev_block(rev *R, unsigned b, LLVMBasicBlockRef exitb, LLVMBasicBlockRef *pb)
{
  gj_ad *a = R->a;
  LLVMBasicBlockRef rb = LLVMValueAsBasicBlock(gj_admap_get(&R->rb, gj_adr_bbv(R->fb[b])));
  LLVMValueRef *I;
  size_t n = 0;
  unsigned np = preds(R, b, pb), k;
  for (I = R->ins[b]; *I; I++) n++;
  LLVMPositionBuilderAtEnd(a->B, rb);
  R->cur = rb;
  gj_admap_free(&R->memo);
  while (n-- > 0) {
    LLVMValueRef v = R->ins[b][n], last, at;
    LLVMBasicBlockRef cb;
    if (LLVMIsATerminatorInst(v)) continue;
    if (visit(R, v)) return -1;
    /* where the reverse has passed v: its stack (if any) is popped there */
    cb = LLVMGetInsertBlock(a->B);
    last = LLVMGetLastInstruction(cb);
    at = last ? last : gj_adr_bbv(cb);
    if (R->loop[b]) {
      LLVMValueRef sv = gj_admap_get(&a->sh, v);   /* a shadow address too */
      if (gj_admap_put(&R->mark, v, at) || (sv && gj_admap_put(&R->mark, sv, at)))
        return gj_err_set(a->err, "out of memory");
    }
  }
  if (np == 0) {
    LLVMBuildBr(a->B, exitb);
  } else if (np == 1) {
    if (edge(R, b, pb[0])) return -1;
  } else {
    /* forward: which predecessor it came from, kept (in a loop: on a
    ** stack, read and popped by the reverse) */
    LLVMTypeRef i32 = LLVMInt32TypeInContext(a->C);
    LLVMValueRef phi, from, fs, iv = NULL;
    LLVMBasicBlockRef ivfrom = NULL;
    long long ivc = 0;
    int id = 0;
    /* a loop's head entered from outside or along its back edge: a counted
    ** loop's variable says which (its start only on the first entry), so
    ** that no index is kept per iteration */
    if (np == 2 && R->loop[b] && (iv = gj_adr_iv(R->fb[b], &ivfrom, &ivc)) != NULL &&
        (ivfrom == pb[0] || ivfrom == pb[1])) {
      LLVMValueRef v = fwd(R, iv), first;
      if (!v) return gj_err_set(a->err, "out of memory");
      first = LLVMBuildICmp(a->B, LLVMIntEQ, v, LLVMConstInt(LLVMTypeOf(iv),
                                                             (unsigned long long)ivc, 1), "");
      from = LLVMBuildSelect(a->B, first, LLVMConstInt(i32, ivfrom == pb[0] ? 0 : 1, 0),
                             LLVMConstInt(i32, ivfrom == pb[0] ? 1 : 0, 0), "");
      return back_to(R, b, from, exitb, pb, np);
    }
    LLVMPositionBuilderBefore(R->Bs, first_non_phi(R->fb[b]));
    phi = LLVMBuildPhi(R->Bs, i32, "");
    for (k = 0; k < np; k++) {
      LLVMValueRef t = LLVMGetBasicBlockTerminator(pb[k]), kv = LLVMConstInt(i32, k, 0);
      unsigned j, ns = LLVMGetNumSuccessors(t);
      for (j = 0; j < ns; j++)   /* one entry per edge */
        if (LLVMGetSuccessor(t, j) == R->fb[b]) LLVMAddIncoming(phi, &kv, &pb[k], 1);
    }
    if (R->loop[b]) {
      fs = gj_adr_stack(R, gj_adr_bbv(R->fb[b]), &id);
      if (!fs) return gj_err_set(a->err, "out of memory");
      gj_adr_push(R, R->Bs, fs, id, phi);
    } else {
      fs = gj_adr_slot(R, i32, NULL);
      LLVMBuildStore(R->Bs, phi, fs);
    }
    /* reverse: go back along it (a->B is where rb's code ends) */
    if (R->loop[b]) {
      from = gj_adr_peek(R, a->B, fs, id, i32);
      gj_adr_pop(R, a->B, fs);
    } else {
      from = LLVMBuildLoad2(a->B, i32, fs, "");
    }
    return back_to(R, b, from, exitb, pb, np);
  }
  return 0;
}

/* Pop each value's stack where the reverse has passed its definition (a
** phi's: at the end of its block's reverse). */
static int pops(rev *R)
{
  gj_ad *a = R->a;
  size_t i;
  for (i = 0; i < R->stk.cap; i++) {
    LLVMValueRef v = R->stk.key[i], m;
    if (!v || !LLVMIsAInstruction(v)) continue;   /* blocks: popped already */
    if (LLVMGetInstructionOpcode(v) == LLVMPHI) {
      LLVMValueRef rv = gj_admap_get(&R->rb, gj_adr_bbv(LLVMGetInstructionParent(v)));
      LLVMValueRef end = gj_admap_get(&R->rend, rv);
      LLVMPositionBuilderBefore(a->B, LLVMGetBasicBlockTerminator(
                                          LLVMValueAsBasicBlock(end ? end : rv)));
    } else {
      m = gj_admap_get(&R->mark, v);
      if (!m)
        return gj_err_set(a->err, "internal error: kernel %s: reverse mode: a "
                          "value kept for the reverse has no place to be popped",
                          a->kname);
      if (LLVMIsABasicBlock(m))
        LLVMPositionBuilderBefore(a->B, LLVMGetFirstInstruction(LLVMValueAsBasicBlock(m)));
      else
        LLVMPositionBuilderBefore(a->B, LLVMGetNextInstruction(m));
    }
    gj_adr_pop(R, a->B, R->stk.val[i]);
  }
  return 0;
}

int gj_ad_reverse(gj_ad *a)
{
  rev R;
  LLVMValueRef back = NULL, *I;
  LLVMBasicBlockRef exitb, full = NULL, *pb = NULL;
  unsigned b;
  size_t i;
  int rc = -1;
  memset(&R, 0, sizeof(R));
  R.a = a;
  gj_adr_merge_phis(a->fn);
  if (gj_ad_rpo(a->fn, &R.fb, &R.nfb, &back)) return gj_err_set(a->err, "out of memory");
  R.Ba = LLVMCreateBuilderInContext(a->C);
  R.Bs = LLVMCreateBuilderInContext(a->C);
  pb = malloc(sizeof(*pb) * (R.nfb + 1));
  R.loop = calloc(R.nfb + 1, 1);
  if (!pb || !R.loop || snapshot(&R)) {
    gj_err_set(a->err, "out of memory");
    goto done;
  }
  for (b = 0; b < R.nfb; b++) {   /* in a loop: it reaches itself */
    char *seen = calloc(R.nfb + 1, 1);
    if (!seen) goto oom;
    R.loop[b] = (char)reaches(&R, b, b, seen);
    free(seen);
  }
  if (read_after_write(&R) || gj_adr_find_own(&R) || find_written(&R)) goto done;
  LLVMPositionBuilderBefore(R.Ba, LLVMGetFirstInstruction(R.fb[0]));
  if (gj_adr_find_ivs(&R)) goto done;
  /* the arrays the kernel adds into atomically: their adjoints are read
  ** by the reverse of the add (dy[j]), so adds into them keep their order */
  for (b = 0; b < R.nfb; b++)
    for (I = R.ins[b]; *I; I++)
      if (LLVMGetInstructionOpcode(*I) == LLVMAtomicRMW ||
          LLVMGetInstructionOpcode(*I) == LLVMAtomicCmpXchg) {
        LLVMValueRef r = gj_ad_root(a, LLVMGetOperand(*I, 0));
        if (r && gj_admap_put(&R.atom, r, r)) goto oom;
      }
  LLVMPositionBuilderBefore(R.Ba, LLVMGetFirstInstruction(R.fb[0]));
  if (back) {   /* the tape's slots */
    if (!a->tape) {
      gj_err_set(a->err, "internal error: kernel %s: reverse mode with loops "
                 "and no tape argument", a->kname);
      goto done;
    }
    R.cap = gj_adr_slot(&R, gj_adr_i64(&R), LLVMConstInt(gj_adr_i64(&R), 0, 0));
    R.base = gj_adr_slot(&R, LLVMPointerTypeInContext(a->C, a->as_global), NULL);
    R.need = gj_adr_slot(&R, gj_adr_i64(&R), LLVMConstInt(gj_adr_i64(&R), 0, 0));
  }
  /* the shadows' addresses, in the forward pass */
  for (b = 0; b < R.nfb; b++)
    for (I = R.ins[b]; *I; I++)
      if (LLVMGetInstructionOpcode(*I) == LLVMGetElementPtr) {
        LLVMPositionBuilderBefore(a->B, LLVMGetNextInstruction(*I));
        if (gj_ad_gep(a, *I)) goto done;
      }
  /* adjoints: every float value, the scalars with an adjoint array */
  for (b = 0; b < R.nfb; b++)
    for (I = R.ins[b]; *I; I++)
      if (gj_ad_isfloat(LLVMTypeOf(*I)) &&
          gj_admap_put(&R.adj, *I, gj_adr_slot(&R, LLVMTypeOf(*I), LLVMConstNull(LLVMTypeOf(*I)))))
        goto oom;
  for (i = 0; i < a->sadj.cap; i++)
    if (a->sadj.key[i] &&
        gj_admap_put(&R.adj, a->sadj.key[i],
                     gj_adr_slot(&R, LLVMTypeOf(a->sadj.key[i]), LLVMConstNull(LLVMTypeOf(a->sadj.key[i])))))
      goto oom;
  for (b = 0; b < R.nfb; b++)
    if (gj_admap_put(&R.rb, gj_adr_bbv(R.fb[b]),
                     gj_adr_bbv(LLVMAppendBasicBlockInContext(a->C, a->fn, "rev"))))
      goto oom;
  exitb = LLVMAppendBasicBlockInContext(a->C, a->fn, "rev.exit");
  for (b = 0; b < R.nfb; b++)
    if (rev_block(&R, b, exitb, pb)) goto done;
  if (pops(&R)) goto done;
  if (R.nstk && !(full = gj_adr_tape_full(&R, back))) goto done;
  /* the kernel's returns go on into the reverse pass (if the tape held) */
  for (b = 0; b < R.nfb; b++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(R.fb[b]);
    if (t && LLVMGetInstructionOpcode(t) == LLVMRet) {
      LLVMBasicBlockRef rb = LLVMValueAsBasicBlock(gj_admap_get(&R.rb, gj_adr_bbv(R.fb[b])));
      LLVMPositionBuilderBefore(a->B, t);
      if (full)
        LLVMBuildCondBr(a->B, LLVMBuildICmp(a->B, LLVMIntUGT,
                                            LLVMBuildLoad2(a->B, gj_adr_i64(&R), R.need, ""),
                                            LLVMBuildLoad2(a->B, gj_adr_i64(&R), R.cap, ""), ""),
                        full, rb);
      else
        LLVMBuildBr(a->B, rb);
      LLVMInstructionEraseFromParent(t);
    }
  }
  /* the scalars' adjoints into their arrays */
  LLVMPositionBuilderAtEnd(a->B, exitb);
  for (i = 0; i < a->sadj.cap; i++) {
    LLVMValueRef k = a->sadj.key[i];
    if (!k) continue;
    gj_adr_mark_adj(a, LLVMBuildAtomicRMW(a->B, LLVMAtomicRMWBinOpFAdd, a->sadj.val[i],
                                          LLVMBuildLoad2(a->B, LLVMTypeOf(k),
                                                         gj_admap_get(&R.adj, k), ""),
                                          LLVMAtomicOrderingMonotonic, 0));
  }
  LLVMBuildRetVoid(a->B);
  /* after the slots (Ba inserts before the kernel's first instruction) */
  LLVMPositionBuilderBefore(a->B, R.ins[0][0]);
  if (R.nstk) gj_adr_tape_setup(&R);
  if (R.oned) gj_adr_oned_setup(&R);
  rc = 0;
  goto done;
oom:
  gj_err_set(a->err, "out of memory");
done:
  if (R.ins)
    for (b = 0; b < R.nfb; b++) free(R.ins[b]);
  free(R.ins);
  free(R.fb);
  free(pb);
  if (R.Ba) LLVMDisposeBuilder(R.Ba);
  if (R.Bs) LLVMDisposeBuilder(R.Bs);
  gj_admap_free(&R.adj);
  gj_admap_free(&R.keep);
  gj_admap_free(&R.rb);
  gj_admap_free(&R.stk);
  gj_admap_free(&R.stkid);
  gj_admap_free(&R.mark);
  gj_admap_free(&R.own);
  gj_adr_free_ivs(&R);
  gj_admap_free(&R.atom);
  gj_admap_free(&R.written);
  gj_admap_free(&R.memo);
  gj_admap_free(&R.rend);
  free(R.loop);
  return rc;
}
