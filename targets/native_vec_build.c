/*
** The work-item vectorizer, building (native_vec.c analyzes, see there):
** the vector loop's copy of the fast loop's blocks, each varying value one
** vector, each uniform or linear one a scalar (lane 0's for linear), and
** the blocks around it that enter it and run the rest in the fast loop.
*/
#include "native_vec.h"

#include <string.h>

#include <llvm-c/DebugInfo.h>
#include <llvm-c/Target.h>

LLVMTypeRef vx_vty(const vctx *x, LLVMTypeRef t)
{
  return LLVMVectorType(t, x->W);
}

LLVMValueRef vx_splat(vctx *x, LLVMValueRef s)
{
  LLVMTypeRef t = vx_vty(x, LLVMTypeOf(s));
  LLVMValueRef u = LLVMBuildInsertElement(x->b, LLVMGetPoison(t), s,
                                          LLVMConstInt(x->i32, 0, 0), "");
  return LLVMBuildShuffleVector(x->b, u, LLVMGetPoison(t),
                                LLVMConstNull(vx_vty(x, x->i32)), "");
}

/* The scalar of a uniform or linear value (lane 0's). */
LLVMValueRef vx_scal(const vctx *x, LLVMValueRef v)
{
  vent *e = vx_get(x, v);
  return e ? e->v : v;
}

/* <0, st, 2 st, ...> of integer type t. */
static LLVMValueRef steps(vctx *x, LLVMTypeRef t, int64_t st)
{
  LLVMValueRef c[VX_MAXW];
  unsigned l;
  for (l = 0; l < x->W; l++) c[l] = LLVMConstInt(t, (unsigned long long)(st * l), 1);
  return LLVMConstVector(c, x->W);
}

LLVMValueRef vx_vec(vctx *x, LLVMValueRef v)
{
  vent *e = vx_get(x, v);
  if (!e || e->kind == V_UNI) return vx_splat(x, vx_scal(x, v));
  if (e->kind == V_VEC) return e->v;
  if (LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMPointerTypeKind) {
    LLVMValueRef idx = steps(x, x->i64, e->stride);
    return LLVMBuildGEP2(x->b, x->i8, e->v, &idx, 1, "");
  }
  return LLVMBuildAdd(x->b, vx_splat(x, e->v), steps(x, LLVMTypeOf(v), e->stride), "");
}

static LLVMValueRef lane(vctx *x, LLVMValueRef v, unsigned l)
{
  vent *e = vx_get(x, v);
  if (!e || e->kind == V_UNI) return vx_scal(x, v);
  if (e->kind == V_VEC)
    return LLVMBuildExtractElement(x->b, e->v, LLVMConstInt(x->i32, l, 0), "");
  if (LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMPointerTypeKind) {
    LLVMValueRef idx = LLVMConstInt(x->i64, (unsigned long long)(e->stride * l), 1);
    return LLVMBuildGEP2(x->b, x->i8, e->v, &idx, 1, "");
  }
  return LLVMBuildAdd(x->b, e->v, LLVMConstInt(LLVMTypeOf(v),
                                               (unsigned long long)(e->stride * l), 1), "");
}

LLVMBasicBlockRef vx_vblock(const vctx *x, LLVMBasicBlockRef bb)
{
  return LLVMValueAsBasicBlock(vx_get(x, LLVMBasicBlockAsValue(bb))->v);
}

/* Is the access of type t at address p one vector access? */
static int contiguous(const vctx *x, LLVMValueRef p, LLVMTypeRef t)
{
  int64_t st;
  LLVMTypeKind k = LLVMGetTypeKind(t);
  if (vx_kind_of(x, p, &st) != V_LIN) return 0;
  if (k != LLVMFloatTypeKind && k != LLVMDoubleTypeKind &&
      !(k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) >= 8 &&
        LLVMGetIntTypeWidth(t) <= 64))
    return 0;
  return st == (int64_t)LLVMABISizeOfType(x->td, t) &&
         LLVMABISizeOfType(x->td, t) == LLVMStoreSizeOfType(x->td, t);
}

/* The intrinsics whose vector forms give each lane the scalar's bits. */
int vx_exact_intrinsic(unsigned id)
{
  static const char *const names[] = { "llvm.sqrt", "llvm.fabs", "llvm.floor",
                                       "llvm.ceil", "llvm.trunc" };
  size_t i;
  if (!id) return 0;
  for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (LLVMLookupIntrinsicID(names[i], strlen(names[i])) == id) return 1;
  return 0;
}

static LLVMValueRef emit_call(vctx *x, LLVMValueRef I)
{
  LLVMValueRef f = LLVMGetCalledValue(I), args[VEC_MAX_ARGS], r;
  LLVMTypeRef ft = LLVMGetCalledFunctionType(I), rt = LLVMGetReturnType(ft);
  unsigned id = LLVMGetIntrinsicID(f), i, l, n = LLVMGetNumArgOperands(I);
  if (n == 1 && vx_exact_intrinsic(id)) {
    LLVMTypeRef vt = vx_vty(x, rt);
    LLVMValueRef decl = LLVMGetIntrinsicDeclaration(x->m, id, &vt, 1);
    args[0] = vx_vec(x, LLVMGetOperand(I, 0));
    return LLVMBuildCall2(x->b, LLVMIntrinsicGetType(x->c, id, &vt, 1), decl,
                          args, 1, "");
  }
  r = LLVMGetTypeKind(rt) == LLVMVoidTypeKind ? NULL : LLVMGetPoison(vx_vty(x, rt));
  for (l = 0; l < x->W; l++) {
    LLVMValueRef c;
    for (i = 0; i < n; i++) args[i] = lane(x, LLVMGetOperand(I, i), l);
    c = LLVMBuildCall2(x->b, ft, f, args, n, "");
    if (r) r = LLVMBuildInsertElement(x->b, r, c, LLVMConstInt(x->i32, l, 0), "");
  }
  return r;
}

/* The lanes' atomics of I, lane by lane in lane order, at the builder b:
** pointers p and values v are vectors, mask the lanes that are on (NULL:
** all).  A lane that is off operates on the scratch word off instead of
** its address, which may be out of bounds; its result is never used. */
static LLVMValueRef lanes_atomic(vctx *x, LLVMBuilderRef b, LLVMValueRef I,
                                 LLVMValueRef mask, LLVMValueRef p, LLVMValueRef v,
                                 LLVMValueRef off)
{
  unsigned l, align = LLVMGetAlignment(I);
  LLVMValueRef r = LLVMGetPoison(vx_vty(x, LLVMTypeOf(I)));
  for (l = 0; l < x->W; l++) {
    LLVMValueRef li = LLVMConstInt(x->i32, l, 0), c;
    LLVMValueRef pl = LLVMBuildExtractElement(b, p, li, "");
    if (mask) pl = LLVMBuildSelect(b, LLVMBuildExtractElement(b, mask, li, ""), pl, off, "");
    c = LLVMBuildAtomicRMW(b, LLVMGetAtomicRMWBinOp(I), pl,
                           LLVMBuildExtractElement(b, v, li, ""),
                           LLVMGetOrdering(I), LLVMIsAtomicSingleThread(I));
    if (align) LLVMSetAlignment(c, align);
    r = LLVMBuildInsertElement(b, r, c, li, "");
  }
  return r;
}

/* An atomic read-modify-write: each lane's in lane order, the order the
** scalar loop does them in.  Under a mask (a varying if: an assert's
** failure path, a histogram's guarded add) they are in a function of their
** own, always inlined, that first tests whether any lane is on: a path no
** lane takes costs one test, not W atomics.  (Its own blocks keep the
** vector loop's block map intact; the inliner splits the block later.) */
static LLVMValueRef emit_atomic(vctx *x, LLVMValueRef I)
{
  LLVMValueRef p = vx_vec(x, LLVMGetOperand(I, 0)), v = vx_vec(x, LLVMGetOperand(I, 1));
  LLVMTypeRef vt = vx_vty(x, LLVMTypeOf(I)), pt = LLVMTypeOf(LLVMGetOperand(I, 0));
  LLVMTypeRef ps[3], ft, it = LLVMIntTypeInContext(x->c, x->W);
  LLVMValueRef f, args[3], off, r, phi;
  LLVMBasicBlockRef entry, run, done;
  LLVMBuilderRef b;
  unsigned kind;
  if (!x->curmask) return lanes_atomic(x, x->b, I, NULL, p, v, NULL);
  ps[0] = LLVMTypeOf(x->curmask);
  ps[1] = LLVMTypeOf(p);
  ps[2] = LLVMTypeOf(v);
  ft = LLVMFunctionType(vt, ps, 3, 0);
  f = LLVMAddFunction(x->m, "vx.atomic", ft);
  LLVMSetLinkage(f, LLVMInternalLinkage);
  kind = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(x->c, kind, 0));
  entry = LLVMAppendBasicBlockInContext(x->c, f, "");
  run = LLVMAppendBasicBlockInContext(x->c, f, "lanes");
  done = LLVMAppendBasicBlockInContext(x->c, f, "done");
  b = LLVMCreateBuilderInContext(x->c);
  LLVMPositionBuilderAtEnd(b, entry);
  off = LLVMBuildAlloca(b, LLVMArrayType(x->i8, 16), "off");
  LLVMSetAlignment(off, 16);
  if (LLVMGetPointerAddressSpace(pt) != LLVMGetPointerAddressSpace(LLVMTypeOf(off)))
    off = LLVMBuildAddrSpaceCast(b, off, pt, "");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, LLVMBuildBitCast(b, LLVMGetParam(f, 0), it, ""),
                                   LLVMConstNull(it), ""), run, done);
  LLVMPositionBuilderAtEnd(b, run);
  r = lanes_atomic(x, b, I, LLVMGetParam(f, 0), LLVMGetParam(f, 1), LLVMGetParam(f, 2), off);
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  phi = LLVMBuildPhi(b, vt, "");
  {
    LLVMValueRef in[2];
    LLVMBasicBlockRef from[2];
    in[0] = LLVMGetPoison(vt);
    from[0] = entry;
    in[1] = r;
    from[1] = run;
    LLVMAddIncoming(phi, in, from, 2);
  }
  LLVMBuildRet(b, phi);
  LLVMDisposeBuilder(b);
  args[0] = x->curmask;
  args[1] = p;
  args[2] = v;
  return LLVMBuildCall2(x->b, ft, f, args, 3, "");
}

/* A call of the masked memory intrinsic name, overloaded on t0 and t1. */
static LLVMValueRef masked(vctx *x, const char *name, LLVMTypeRef t0,
                           LLVMTypeRef t1, LLVMValueRef *args)
{
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMTypeRef tys[2];
  tys[0] = t0;
  tys[1] = t1;
  return LLVMBuildCall2(x->b, LLVMIntrinsicGetType(x->c, id, tys, 2),
                        LLVMGetIntrinsicDeclaration(x->m, id, tys, 2), args, 4, "");
}

/* A masked access at a uniform address (p, of type t): one element, under
** a mask of whether any lane is on, not a gather or scatter of W copies of
** one address.  A load gives every lane the value; a store stores the last
** lane's that is on, which is what the scatter's stores in lane order leave
** there. */
static LLVMValueRef emit_masked_uniform(vctx *x, LLVMValueRef I, int store, LLVMTypeRef t,
                                        LLVMValueRef align)
{
  LLVMTypeRef it = LLVMIntTypeInContext(x->c, x->W), v1 = LLVMVectorType(t, 1);
  LLVMTypeRef m1t = LLVMVectorType(LLVMInt1TypeInContext(x->c), 1);
  LLVMValueRef zero = LLVMConstInt(x->i32, 0, 0), bits, m1, p, a[4], r;
  bits = LLVMBuildBitCast(x->b, x->curmask, it, "");
  m1 = LLVMBuildInsertElement(x->b, LLVMGetPoison(m1t),
                              LLVMBuildICmp(x->b, LLVMIntNE, bits, LLVMConstNull(it), ""),
                              zero, "");
  p = vx_scal(x, LLVMGetOperand(I, store ? 1 : 0));
  if (store) {
    static const char ctlz[] = "llvm.ctlz";
    unsigned id = LLVMLookupIntrinsicID(ctlz, sizeof(ctlz) - 1);
    LLVMValueRef ca[2], lz, last;
    ca[0] = bits;
    ca[1] = LLVMConstInt(LLVMInt1TypeInContext(x->c), 0, 0);
    lz = LLVMBuildCall2(x->b, LLVMIntrinsicGetType(x->c, id, &it, 1),
                        LLVMGetIntrinsicDeclaration(x->m, id, &it, 1), ca, 2, "");
    /* W - 1 - ctlz: the last lane on (none on: out of range, poison, and
    ** nothing is stored) */
    last = LLVMBuildSub(x->b, LLVMConstInt(it, x->W - 1, 0), lz, "");
    last = LLVMBuildIntCast2(x->b, last, x->i32, 0, "");   /* W may be 64 */
    a[0] = LLVMBuildInsertElement(
        x->b, LLVMGetPoison(v1),
        LLVMBuildExtractElement(x->b, vx_vec(x, LLVMGetOperand(I, 0)), last, ""), zero, "");
    a[1] = p;
    a[2] = align;
    a[3] = m1;
    r = masked(x, "llvm.masked.store", v1, LLVMTypeOf(p), a);
    vx_frame_noalias(x, r);
    return r;
  }
  a[0] = p;
  a[1] = align;
  a[2] = m1;
  a[3] = LLVMGetPoison(v1);
  r = masked(x, "llvm.masked.load", v1, LLVMTypeOf(p), a);
  vx_frame_noalias(x, r);
  return vx_splat(x, LLVMBuildExtractElement(x->b, r, zero, ""));
}

/* A load or store of an if's arm: only the lanes of x->curmask. */
static LLVMValueRef emit_masked(vctx *x, LLVMValueRef I, int store)
{
  LLVMValueRef p = LLVMGetOperand(I, store ? 1 : 0), a[4], r;
  LLVMTypeRef t = store ? LLVMTypeOf(LLVMGetOperand(I, 0)) : LLVMTypeOf(I);
  LLVMTypeRef vt = vx_vty(x, t);
  unsigned al = LLVMGetAlignment(I);
  LLVMValueRef align = LLVMConstInt(x->i32, al ? al : 1, 0);
  int64_t st;
  int c = contiguous(x, p, t);
  LLVMValueRef ptr;
  if (vx_kind_of(x, p, &st) == V_UNI) return emit_masked_uniform(x, I, store, t, align);
  ptr = c ? vx_scal(x, p) : vx_vec(x, p);
  if (store) {
    a[0] = vx_vec(x, LLVMGetOperand(I, 0));
    a[1] = ptr;
    a[2] = align;
    a[3] = x->curmask;
      r = masked(x, c ? "llvm.masked.store" : "llvm.masked.scatter", vt,
               LLVMTypeOf(ptr), a);
    vx_frame_noalias(x, r);
    return r;
  }
  a[0] = ptr;
  a[1] = align;
  a[2] = x->curmask;
  a[3] = LLVMGetPoison(vt);
  r = masked(x, c ? "llvm.masked.load" : "llvm.masked.gather", vt,
             LLVMTypeOf(ptr), a);
  vx_frame_noalias(x, r);
  return r;
}

static LLVMValueRef emit_mem(vctx *x, LLVMValueRef I, int store)
{
  LLVMValueRef p = LLVMGetOperand(I, store ? 1 : 0), r, val = NULL;
  LLVMTypeRef t = store ? LLVMTypeOf(LLVMGetOperand(I, 0)) : LLVMTypeOf(I);
  unsigned al = LLVMGetAlignment(I), l;
  if (x->curmask) return emit_masked(x, I, store);
  if (store) val = LLVMGetOperand(I, 0);
  if (contiguous(x, p, t)) {
    r = store ? LLVMBuildStore(x->b, vx_vec(x, val), vx_scal(x, p))
              : LLVMBuildLoad2(x->b, vx_vty(x, t), vx_scal(x, p), "");
    LLVMSetAlignment(r, al);
    vx_frame_noalias(x, r);
    return r;
  }
  r = store ? NULL : LLVMGetPoison(vx_vty(x, t));
  for (l = 0; l < x->W; l++) {
    LLVMValueRef pl = lane(x, p, l), a;
    if (store) {
      a = LLVMBuildStore(x->b, lane(x, val, l), pl);
    } else {
      a = LLVMBuildLoad2(x->b, t, pl, "");
      r = LLVMBuildInsertElement(x->b, r, a, LLVMConstInt(x->i32, l, 0), "");
    }
    LLVMSetAlignment(a, al);
    vx_frame_noalias(x, a);
  }
  return r;
}

/* The vector form of a varying instruction (not a phi nor a terminator). */
static LLVMValueRef emit_vec(vctx *x, LLVMValueRef I)
{
  LLVMOpcode op = LLVMGetInstructionOpcode(I);
  LLVMValueRef a = LLVMGetNumOperands(I) ? LLVMGetOperand(I, 0) : NULL;
  if ((op == LLVMSDiv || op == LLVMUDiv || op == LLVMSRem || op == LLVMURem) &&
      x->curmask) {
    /* the lanes that are off divide by 1 (native_vec_lin.c) */
    LLVMValueRef d = vx_vec(x, LLVMGetOperand(I, 1));
    d = LLVMBuildSelect(x->b, x->curmask, d, vx_splat(x, LLVMConstInt(LLVMTypeOf(LLVMGetOperand(I, 1)), 1, 0)), "");
    return LLVMBuildBinOp(x->b, op, vx_vec(x, a), d, "");
  }
  if (vx_is_binop(op))
    return LLVMBuildBinOp(x->b, op, vx_vec(x, a), vx_vec(x, LLVMGetOperand(I, 1)), "");
  if (vx_is_cast(op))
    return LLVMBuildCast(x->b, op, vx_vec(x, a), vx_vty(x, LLVMTypeOf(I)), "");
  switch (op) {
  case LLVMFNeg: return LLVMBuildFNeg(x->b, vx_vec(x, a), "");
  case LLVMFreeze: return LLVMBuildFreeze(x->b, vx_vec(x, a), "");
  case LLVMICmp:
    return LLVMBuildICmp(x->b, LLVMGetICmpPredicate(I), vx_vec(x, a),
                         vx_vec(x, LLVMGetOperand(I, 1)), "");
  case LLVMFCmp:
    return LLVMBuildFCmp(x->b, LLVMGetFCmpPredicate(I), vx_vec(x, a),
                         vx_vec(x, LLVMGetOperand(I, 1)), "");
  case LLVMSelect: {
    int64_t st;
    LLVMValueRef c = vx_kind_of(x, a, &st) == V_UNI ? vx_scal(x, a) : vx_vec(x, a);
    return LLVMBuildSelect(x->b, c, vx_vec(x, LLVMGetOperand(I, 1)),
                           vx_vec(x, LLVMGetOperand(I, 2)), "");
  }
  case LLVMGetElementPtr: {
    LLVMValueRef ops[VEC_MAX_ARGS], g;
    unsigned i, n = (unsigned)LLVMGetNumOperands(I);
    int64_t st;
    for (i = 0; i < n; i++) {
      LLVMValueRef o = LLVMGetOperand(I, i);
      ops[i] = vx_kind_of(x, o, &st) == V_UNI ? vx_scal(x, o) : vx_vec(x, o);
    }
    g = LLVMBuildGEP2(x->b, LLVMGetGEPSourceElementType(I), ops[0], ops + 1,
                      n - 1, "");
    LLVMSetIsInBounds(g, LLVMIsInBounds(I));
    return g;
  }
  case LLVMLoad: return emit_mem(x, I, 0);
  case LLVMStore: return emit_mem(x, I, 1);
  case LLVMCall: return emit_call(x, I);
  case LLVMAtomicRMW: return emit_atomic(x, I);
  default: return NULL;   /* classify refused it */
  }
}

static void emit_block(vctx *x, LLVMBasicBlockRef bb)
{
  LLVMValueRef in;
  vslot *sl;
  int headed = 0;
  LLVMPositionBuilderAtEnd(x->b, vx_vblock(x, bb));
  x->curmask = x->lin ? vx_lin_mask(x, bb) : vx_mask_of(x, bb);
  for (in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
    vent *e = vx_get(x, in);
    if (!headed && !LLVMIsAPHINode(in)) {
      vx_loop_head(x, bb);     /* a varying loop's mask, where it is one */
      headed = 1;
    }
    LLVMSetCurrentDebugLocation2(x->b, LLVMInstructionGetDebugLoc(in));
    if (in == x->more || vx_exit_phi(x, in)) continue;
    if (in == x->lx) {
      e->v = x->vlx = LLVMBuildPhi(x->b, x->i64, "vx");
    } else if (in == x->s->next) {
      e->v = x->vnext = LLVMBuildNSWAdd(x->b, x->vlx,
                                        LLVMConstInt(x->i64, x->W, 0), "vx.next");
    } else if (x->lin && LLVMIsAPHINode(in)) {
      e->v = vx_lin_phi(x, in);
    } else if (vx_join_phi(x, in)) {
      e->v = vx_join_select(x, in);
    } else if (LLVMIsAPHINode(in)) {
      LLVMTypeRef t = LLVMTypeOf(in);
      e->v = LLVMBuildPhi(x->b, e->kind == V_VEC ? vx_vty(x, t) : t, "");
    } else if (LLVMIsATerminatorInst(in)) {
      if (x->lin && bb != x->latch) {
        vx_lin_term(x, bb, in);  /* the next block's branch: vx_lin_emit */
      } else if (vx_if_term(x, bb, in) || vx_loop_term(x, bb, in)) {
        /* a block of a varying loop */
      } else if (bb == x->latch) {
        x->vlatch = LLVMGetInsertBlock(x->b);
        cpu_plain_loop(x->c, LLVMBuildCondBr(
            x->b, LLVMBuildICmp(x->b, LLVMIntSLT, x->vnext, x->vend, ""),
            x->vhead, x->spre));
      } else if (LLVMIsAUnreachableInst(in)) {
        LLVMBuildUnreachable(x->b);
      } else if (LLVMIsASwitchInst(in)) {
        /* uniform (classify): the lanes go one way */
        unsigned j, n = LLVMGetNumSuccessors(in);
        LLVMValueRef sw = LLVMBuildSwitch(x->b, vx_scal(x, LLVMGetOperand(in, 0)),
                                          vx_vblock(x, LLVMGetSuccessor(in, 0)), n - 1);
        for (j = 1; j < n; j++)
          LLVMAddCase(sw, LLVMGetOperand(in, 2 * j),
                      vx_vblock(x, LLVMGetSuccessor(in, j)));
      } else if (!LLVMIsConditional(in)) {
        LLVMBuildBr(x->b, vx_vblock(x, LLVMGetSuccessor(in, 0)));
      } else {
        LLVMBuildCondBr(x->b, vx_scal(x, LLVMGetCondition(in)),
                        vx_vblock(x, LLVMGetSuccessor(in, 0)),
                        vx_vblock(x, LLVMGetSuccessor(in, 1)));
      }
    } else if ((sl = vx_frame_slot(x, in)) != NULL) {
      e->v = vx_frame_emit(x, in, sl);
    } else if (e->kind == V_VEC) {
      e->v = emit_vec(x, in);
    } else {
      /* uniform, or linear (lane 0's value): the scalar instruction */
      LLVMValueRef c = LLVMInstructionClone(in);
      int i, n = LLVMGetNumOperands(in);
      for (i = 0; i < n; i++)
        LLVMSetOperand(c, (unsigned)i, vx_scal(x, LLVMGetOperand(in, (unsigned)i)));
      LLVMInsertIntoBuilder(x->b, c);
      if (LLVMIsALoadInst(c) || LLVMIsAStoreInst(c)) vx_frame_noalias(x, c);
      e->v = c;
    }
  }
  LLVMSetCurrentDebugLocation2(x->b, NULL);
  x->curmask = NULL;
}

/* The phis' incoming values, at the ends of their blocks' copies. */
static void fill_phis(vctx *x)
{
  size_t i;
  for (i = 0; i < x->nbbs; i++) {
    LLVMValueRef in;
    for (in = LLVMGetFirstInstruction(x->bbs[i]); in && LLVMIsAPHINode(in);
         in = LLVMGetNextInstruction(in)) {
      vent *e = vx_get(x, in);
      unsigned j, n = LLVMCountIncoming(in);
      if (in == x->lx || vx_exit_phi(x, in) || vx_join_phi(x, in)) continue;
      for (j = 0; j < n; j++) {
        LLVMBasicBlockRef from = vx_vblock(x, LLVMGetIncomingBlock(in, j));
        LLVMValueRef v = LLVMGetIncomingValue(in, j);
        LLVMPositionBuilderBefore(x->b, LLVMGetBasicBlockTerminator(from));
        v = e->kind == V_VEC ? vx_vec(x, v) : vx_scal(x, v);
        LLVMAddIncoming(e->v, &v, &from, 1);
      }
    }
  }
}

/* pre: the vector loop for (hi - lo) / W groups of W work items, then spre:
** the fast loop from where it stopped, when any are left. */
int vx_build(vctx *x)
{
  cpu_split_site *s = x->s;
  unsigned in = LLVMGetIncomingBlock(x->lx, 0) == x->latch;  /* the entry's */
  LLVMBasicBlockRef from = LLVMGetIncomingBlock(x->lx, in), pre;
  LLVMValueRef cnt, nv, slo, nlx, v, t = LLVMGetBasicBlockTerminator(from);
  unsigned j;
  size_t i;
  for (i = 0; i < x->nbbs; i++) {
    LLVMBasicBlockRef vb = LLVMInsertBasicBlockInContext(x->c, s->head, "vec");
    vx_get(x, LLVMBasicBlockAsValue(x->bbs[i]))->v = LLVMBasicBlockAsValue(vb);
  }
  x->vhead = vx_vblock(x, s->head);
  x->spre = LLVMInsertBasicBlockInContext(x->c, s->head, "vec.rest");
  /* pre, on the edge into the fast loop: [lo, vend) in steps of W */
  pre = LLVMInsertBasicBlockInContext(x->c, x->vhead, "vec.pre");
  for (j = 0; j < LLVMGetNumSuccessors(t); j++)
    if (LLVMGetSuccessor(t, j) == s->head) LLVMSetSuccessor(t, j, pre);
  LLVMPositionBuilderAtEnd(x->b, pre);
  cnt = LLVMBuildSub(x->b, s->hi, s->lo, "");
  nv = LLVMBuildAnd(x->b, cnt, LLVMConstInt(x->i64, ~(unsigned long long)(x->W - 1), 1), "");
  x->vend = LLVMBuildAdd(x->b, s->lo, nv, "vec.end");
  LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntSGT, nv, LLVMConstInt(x->i64, 0, 0), ""),
                  x->vhead, x->spre);
  if (x->lin) {
    if (vx_lin_emit(x, emit_block)) return -1;
  } else {
    for (i = 0; i < x->nbbs; i++) emit_block(x, x->bbs[i]);
    fill_phis(x);
  }
  vx_loops_finish(x);
  LLVMAddIncoming(x->vlx, &s->lo, &pre, 1);
  LLVMAddIncoming(x->vlx, &x->vnext, &x->vlatch, 1);
  /* spre: the rest in the fast loop, entered from here only */
  LLVMPositionBuilderAtEnd(x->b, x->spre);
  slo = LLVMBuildPhi(x->b, x->i64, "vec.lo");
  LLVMAddIncoming(slo, &s->lo, &pre, 1);
  LLVMAddIncoming(slo, &x->vend, &x->vlatch, 1);
  LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntSLT, slo, s->hi, ""), s->head,
                  s->done);
  LLVMPositionBuilderBefore(x->b, x->lx);
  nlx = LLVMBuildPhi(x->b, x->i64, "xa.rest");
  LLVMAddIncoming(nlx, &slo, &x->spre, 1);
  v = s->next;
  LLVMAddIncoming(nlx, &v, &x->latch, 1);
  LLVMReplaceAllUsesWith(x->lx, nlx);
  LLVMInstructionEraseFromParent(x->lx);
  /* at most W - 1 work items: not worth LLVM's loop vectorizer */
  cpu_plain_loop(x->c, LLVMGetBasicBlockTerminator(x->latch));
  return 0;
}

