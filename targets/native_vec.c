/*
** The native target, part three: the work-item vectorizer.
**
** After the split (native_split.c) the fast loop runs the inlined body for
** lx in [lo, hi), one work item after another.  Here, before LLVM's
** optimizer (stage 7, gj_codegen.finish_module), it gets a copy that runs W
** work items at a time, lx .. lx + W - 1 as the lanes of vector registers:
** the vector loop covers [lo, lo + (hi - lo) / W * W), then the fast loop
** itself runs the rest (fewer than W work items).  LLVM vectorizes only
** innermost loops; a kernel's body often has its own loops (matmul's k,
** n-body's j), which this runs once for W work items.
**
** Each value of the fast loop is, for the lanes of one vector iteration:
**   uniform  the same in every lane (values from before the loop,
**            constants, and what is computed from uniform values only):
**            one scalar;
**   linear   lane l's value is s + l * stride (s: lane 0's, a scalar;
**            stride: a constant): lx itself (stride 1), and integer add,
**            sub, mul and shl by constants, trunc, and one-index GEPs of
**            them with a uniform base.  These are exact in wrapping
**            arithmetic, so no overflow can break them;
**   varying  anything else that depends on lx: one vector of W values.
** A load or store whose address is linear with the stride of its type's
** size is one vector access; other varying addresses are W scalar
** accesses, in lane order; a uniform load is one scalar load.  Calls run
** per lane with the scalar function (the libm functions give LuaJIT's
** bits), except sqrt, fabs, floor, ceil and trunc, whose vector
** intrinsics round as the scalar ones do.  No operation is reassociated or
** contracted: each lane computes what the scalar code computes, in the
** same order, so results are bitwise the scalar ones'.
**
** Only where LLVM's loop vectorizer would not do as well: the fast loop
** has an inner loop (LLVM vectorizes innermost loops only) or a call it
** keeps scalar (libm).  A fast loop without either (saxpy) is left to it:
** it vectorizes that loop as well, and interleaves it.
**
** Invariant: the vector loop is entered only for whole groups of W work
** items inside [lo, hi), every lane a work item that the fast loop would
** run (masks only come from the kernel's own varying ifs and loops); the
** fast loop, unchanged, runs the rest.  Branches whose condition varies:
** the exits of an inner loop of the shape native_vec_loop.c runs under a
** mask and the ifs of the shape native_vec_if.c converts (straight arms);
** when a body has others (or what those shapes refuse), the analysis runs
** again with every branch linearized (native_vec_lin.c: any reducible
** control flow).  A kernel with something this does not handle is left as
** it was, and the note says why (GPUJIT_VERBOSE), with the Lua line of the
** branch, or of the branch whose mask holds it, where known:
**   - a varying branch in a kernel with barriers of a shape not handled, a
**     switch that varies; under linearization a call with effects under a
**     mask, atomics in an inner loop, an irreducible cycle;
**   - atomics, volatile or atomic accesses (print records, assert and
**     error, timeouts);
**   - a private array (alloca): the lanes would share it;
**   - a varying aggregate or vector value, an indirect call, inline asm;
**   - a value carried from one work item to the next, or used after the
**     fast loop.
** Files: this one analyzes (the kinds above, the shape, W);
** native_vec_build.c builds; native_vec_loop.c has the masked loops,
** native_vec_if.c the masked ifs, native_vec_lin.c and native_vec_lin_build.c
** the linearized bodies, native_vec_frame.c the kernels with
** barriers (the x loop of a pass as the site, the frame laid out by slots,
** a uniform resume switch).
**
** Work items that read what other work items of the launch write (a data
** race in OpenCL's and CUDA's terms) may see other values than with the
** scalar loop, whose work items run one after another.
*/
#include "native_vec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

/* -- the table of values ------------------------------------------------- */

static size_t slot(const vctx *x, LLVMValueRef k)
{
  uint64_t h = (uint64_t)(uintptr_t)k;
  h ^= h >> 29;
  h *= 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 20) & (x->cap - 1);
}

vent *vx_get(const vctx *x, LLVMValueRef k)
{
  size_t i;
  if (!x->cap) return NULL;
  for (i = slot(x, k); x->tab[i].k; i = (i + 1) & (x->cap - 1))
    if (x->tab[i].k == k) return &x->tab[i];
  return NULL;
}

vent *vx_put(vctx *x, LLVMValueRef k)
{
  size_t i;
  if (2 * (x->n + 1) > x->cap) {
    vent *old = x->tab;
    size_t oc = x->cap, j;
    x->cap = oc ? 2 * oc : 256;
    x->tab = calloc(x->cap, sizeof(vent));
    if (!x->tab) {
      x->tab = old;
      x->cap = oc;
      return NULL;
    }
    for (j = 0; j < oc; j++)
      if (old[j].k) {
        for (i = slot(x, old[j].k); x->tab[i].k; i = (i + 1) & (x->cap - 1)) {}
        x->tab[i] = old[j];
      }
    free(old);
  }
  for (i = slot(x, k); x->tab[i].k; i = (i + 1) & (x->cap - 1))
    if (x->tab[i].k == k) return &x->tab[i];
  x->tab[i].k = k;
  x->n++;
  return &x->tab[i];
}

int vx_kind_of(const vctx *x, LLVMValueRef v, int64_t *stride)
{
  vent *e = vx_get(x, v);
  *stride = e ? e->stride : 0;
  return e ? e->kind : V_UNI;
}

int vx_in_loop(const vctx *x, LLVMBasicBlockRef bb)
{
  return vx_get(x, LLVMBasicBlockAsValue(bb)) != NULL;
}

/* -- analysis ------------------------------------------------------------ */

int vx_refuse(vctx *x, const char *why)
{
  if (!x->why) x->why = why;
  return -1;
}

int vx_refuse_soft(vctx *x, LLVMValueRef I, const char *why)
{
  if (!x->why) x->soft = 1;
  return vx_refuse_at(x, I, why);
}

int vx_refuse_at(vctx *x, LLVMValueRef I, const char *why)
{
  LLVMValueRef md = I ? LLVMGetMetadata(I, LLVMGetMDKindIDInContext(x->c, "gj.line", 7))
                      : NULL;
  if (!x->why && !md && I && x->lin)
    x->why_line = vx_lin_line(x, LLVMGetInstructionParent(I));
  if (!x->why && md && LLVMGetMDNodeNumOperands(md) == 1) {
    LLVMValueRef v;
    LLVMGetMDNodeOperands(md, &v);
    if (v && LLVMIsAConstantInt(v)) x->why_line = (int)LLVMConstIntGetZExtValue(v);
  }
  return vx_refuse(x, why);
}

static int push_bb(vctx *x, LLVMBasicBlockRef bb)
{
  if (x->nbbs == x->capbbs) {
    size_t c = x->capbbs ? 2 * x->capbbs : 32;
    LLVMBasicBlockRef *q = realloc(x->bbs, c * sizeof(*q));
    if (!q) return -1;
    x->bbs = q;
    x->capbbs = c;
  }
  if (!vx_put(x, LLVMBasicBlockAsValue(bb))) return -1;
  x->bbs[x->nbbs++] = bb;
  return 0;
}

int vx_insert_bb(vctx *x, size_t at, LLVMBasicBlockRef bb)
{
  LLVMValueRef in;
  if (push_bb(x, bb)) return -1;
  memmove(x->bbs + at + 1, x->bbs + at, (x->nbbs - 1 - at) * sizeof(*x->bbs));
  x->bbs[at] = bb;
  for (in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in))
    if (!vx_put(x, in)) return -1;
  return 0;
}

/* The instructions of the blocks, uniform to start with (again after
** vx_find_loops added phis: those already there keep what they have). */
static int add_insns(vctx *x)
{
  size_t i;
  for (i = 0; i < x->nbbs; i++) {
    LLVMValueRef in;
    for (in = LLVMGetFirstInstruction(x->bbs[i]); in;
         in = LLVMGetNextInstruction(in))
      if (!vx_put(x, in)) return -1;
  }
  return 0;
}

/* x->bbs in reverse postorder from the header (edges back to the header
** and of inner loops aside, a block comes after every block with an edge
** to it: the order in which the vector code is built, each if's join after
** its arms, each loop's exit after its blocks). */
static int rpo(vctx *x)
{
  LLVMBasicBlockRef *out = malloc(x->nbbs * sizeof(*out)), *stk;
  unsigned *next;
  size_t n = x->nbbs, sp = 0;
  stk = malloc(x->nbbs * sizeof(*stk));
  next = calloc(x->nbbs, sizeof(*next));
  if (!out || !stk || !next) {
    free(out);
    free(stk);
    free(next);
    return -1;
  }
  stk[sp++] = x->s->head;
  vx_get(x, LLVMBasicBlockAsValue(x->s->head))->kind = 1;
  while (sp) {
    LLVMBasicBlockRef b = stk[sp - 1];
    LLVMValueRef t = LLVMGetBasicBlockTerminator(b);
    unsigned ns = t ? LLVMGetNumSuccessors(t) : 0;
    if (next[sp - 1] < ns) {
      LLVMBasicBlockRef s = LLVMGetSuccessor(t, next[sp - 1]++);
      vent *e = vx_get(x, LLVMBasicBlockAsValue(s));
      if (e && !e->kind) {
        e->kind = 1;
        next[sp] = 0;
        stk[sp++] = s;
      }
    } else {
      out[--n] = b;
      sp--;
    }
  }
  memcpy(x->bbs, out + n, (x->nbbs - n) * sizeof(*out));
  x->nbbs -= n;
  free(out);
  free(stk);
  free(next);
  return 0;
}

/* The blocks reachable from the header before the exit (then in reverse
** postorder), and their instructions, all uniform to start with. */
static int collect(vctx *x)
{
  size_t i;
  if (cpu_loop_blocks(x->s, &x->bbs, &x->nbbs)) return -1;
  x->capbbs = x->nbbs;
  for (i = 0; i < x->nbbs; i++)
    if (!vx_put(x, LLVMBasicBlockAsValue(x->bbs[i]))) return -1;
  return rpo(x) || add_insns(x) ? -1 : 0;
}

int vx_readnone(LLVMValueRef f)
{
  unsigned k = LLVMGetEnumAttributeKindForName("readnone", 8);
  return LLVMGetEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, k) != NULL;
}

/* A linear result (kind V_LIN, *st) of add, sub, mul, shl, trunc, GEP whose
** operands are uniform or linear; V_VEC when it is not one. */
static int linear(vctx *x, LLVMValueRef I, LLVMOpcode op, int64_t *st)
{
  int64_t sa, sb;
  LLVMValueRef a = LLVMGetOperand(I, 0), b;
  int ka = vx_kind_of(x, a, &sa), kb, i;
  for (i = 0; i < LLVMGetNumOperands(I); i++)
    if (vx_kind_of(x, LLVMGetOperand(I, (unsigned)i), &sb) == V_VEC) return V_VEC;
  if (op == LLVMTrunc) {
    *st = sa;
    return V_LIN;
  }
  if (op == LLVMGetElementPtr) {
    if (LLVMGetNumOperands(I) != 2 || ka != V_UNI) return V_VEC;
    vx_kind_of(x, LLVMGetOperand(I, 1), &sb);
    return __builtin_mul_overflow(
               sb, (int64_t)LLVMABISizeOfType(x->td, LLVMGetGEPSourceElementType(I)), st)
               ? V_VEC : V_LIN;
  }
  if (LLVMGetNumOperands(I) != 2) return V_VEC;
  b = LLVMGetOperand(I, 1);
  kb = vx_kind_of(x, b, &sb);
  if (ka == V_VEC || kb == V_VEC) return V_VEC;
  switch (op) {
  case LLVMAdd: *st = sa + sb; return V_LIN;
  case LLVMSub: *st = sa - sb; return V_LIN;
  case LLVMMul:
    if (kb == V_UNI && LLVMIsAConstantInt(b))
      return __builtin_mul_overflow(sa, LLVMConstIntGetSExtValue(b), st) ? V_VEC : V_LIN;
    if (ka == V_UNI && LLVMIsAConstantInt(a))
      return __builtin_mul_overflow(sb, LLVMConstIntGetSExtValue(a), st) ? V_VEC : V_LIN;
    return V_VEC;
  case LLVMShl:
    if (kb == V_UNI && LLVMIsAConstantInt(b) &&
        LLVMConstIntGetZExtValue(b) < 24) {
      *st = sa * ((int64_t)1 << LLVMConstIntGetZExtValue(b));
      return V_LIN;
    }
    return V_VEC;
  default:
    return V_VEC;
  }
}

/* Does no result of atomic I depend on the order in which the work items
** do theirs?  An integer add, sub, and, or, xor, min or max whose old value
** nothing reads leaves the same word in any order; a print's reservation
** (src/gj_cg_print.c: the next instruction loads "print.cap") reads it, but
** the host orders the records by work item, then by reservation. */
static int order_free(LLVMValueRef I)
{
  LLVMValueRef nx = LLVMGetNextInstruction(I);
  int k;
  switch (LLVMGetAtomicRMWBinOp(I)) {
  case LLVMAtomicRMWBinOpAdd: case LLVMAtomicRMWBinOpSub: case LLVMAtomicRMWBinOpAnd:
  case LLVMAtomicRMWBinOpOr: case LLVMAtomicRMWBinOpXor: case LLVMAtomicRMWBinOpMax:
  case LLVMAtomicRMWBinOpMin: case LLVMAtomicRMWBinOpUMax: case LLVMAtomicRMWBinOpUMin:
    if (!LLVMGetFirstUse(I)) return 1;
    break;
  default:
    return 0;
  }
  for (k = 0; nx && k < 4 && LLVMGetAtomicRMWBinOp(I) == LLVMAtomicRMWBinOpAdd;
       k++, nx = LLVMGetNextInstruction(nx)) {
    size_t len = 0;
    const char *nm = LLVMIsALoadInst(nx) ? LLVMGetValueName2(nx, &len) : "";
    if (len >= 9 && !memcmp(nm, "print.cap", 9)) return 1;
  }
  return 0;
}

/* The kind of instruction I from its operands' kinds; -1 (x->why) when the
** vectorizer cannot handle it. */
static int classify(vctx *x, LLVMValueRef I, int64_t *st)
{
  LLVMOpcode op = LLVMGetInstructionOpcode(I);
  int i, n = LLVMGetNumOperands(I), k = V_UNI;
  *st = 0;
  if (I == x->lx) {
    *st = 1;
    return V_LIN;
  }
  for (i = 0; i < n; i++) {
    int64_t s;
    int ko = vx_kind_of(x, LLVMGetOperand(I, (unsigned)i), &s);
    if (ko > k) k = ko;
  }
  switch (op) {
  case LLVMAlloca:
    return vx_refuse(x, "a private array (gpu.local_array) in the loop");
  case LLVMAtomicRMW:
    /* each lane does its own, in lane order (native_vec_build.c): the
    ** order the scalar loop does them in */
    if (x->frame) return vx_refuse(x, "atomics in a kernel with barriers");
    /* linearized, a loop runs an iteration of every lane before the next:
    ** not the scalar code's order of the work items' atomics */
    if (vx_lin_in_loop(x, LLVMGetInstructionParent(I)) && !order_free(I))
      return vx_refuse_at(x, I, "an atomic whose result depends on the work items' "
                                "order in a loop under linearization");
    return V_VEC;
  case LLVMAtomicCmpXchg: case LLVMFence:
    return vx_refuse(x, "atomics (or print, assert, error, or a timeout's checks)");
  case LLVMLoad: case LLVMStore: {
    vslot *sl = vx_frame_slot(x, I);
    if (sl) return vx_frame_kind(x, I, sl, st);
    /* wrap's divergence check (barriers): a constant stored at a uniform
    ** address, in code every lane runs, is the same stored once */
    if (x->frame && op == LLVMStore && !LLVMGetVolatile(I) && k == V_UNI &&
        LLVMIsAConstant(LLVMGetOperand(I, 0)) &&
        !vx_arm_of(x, LLVMGetInstructionParent(I), NULL))
      return V_UNI;
    if (LLVMGetVolatile(I) || LLVMGetOrdering(I) != LLVMAtomicOrderingNotAtomic)
      return vx_refuse_at(x, I, "an atomic or volatile access (print, timeout)");
    if (vx_arm_of(x, LLVMGetInstructionParent(I), NULL) ||
        vx_lin_masked(x, LLVMGetInstructionParent(I)))
      return V_VEC;                  /* masked */
    if (op == LLVMLoad)
      return vx_kind_of(x, LLVMGetOperand(I, 0), st) == V_UNI ? V_UNI : V_VEC;
    return k == V_UNI ? V_UNI : V_VEC;
  }
  case LLVMSwitch:     /* a resumable body's entry: uniform with barriers */
    if (vx_kind_of(x, LLVMGetOperand(I, 0), st) != V_UNI)
      return vx_refuse(x, "a switch that varies with the work item (work items "
                          "at different barriers)");
    return V_UNI;
  case LLVMCall: {
    LLVMValueRef f = LLVMGetCalledValue(I);
    if (!LLVMIsAFunction(f)) return vx_refuse(x, "an indirect call or inline asm");
    if (LLVMGetNumArgOperands(I) > VEC_MAX_ARGS)
      return vx_refuse(x, "a call with too many arguments");
    if (!vx_readnone(f) && vx_lin_masked(x, LLVMGetInstructionParent(I)))
      return vx_refuse_at(x, I, "a call with effects under a mask");
    return k == V_UNI && vx_readnone(f) ? V_UNI : V_VEC;
  }
  case LLVMBr:
    if (x->lin) return V_UNI;         /* linearized: every branch */
    if (I != LLVMGetBasicBlockTerminator(x->latch) && LLVMIsConditional(I) &&
        vx_kind_of(x, LLVMGetCondition(I), st) != V_UNI) {
      vloop *L = vx_exit_of(x, I);     /* a loop the lanes leave apart */
      vif *f = L ? NULL : vx_if_of(x, I);
      if (!L && !f)
        return vx_refuse_soft(x, I, "a branch that varies with the work item (of a "
                                    "shape not handled)");
      if (L && !L->varying) x->again = L->varying = 1;
      if (f && !f->varying) x->again = f->varying = 1;
    }
    return V_UNI;
  case LLVMUnreachable:
    return V_UNI;
  case LLVMPHI:
    if (x->lin && I != x->lx) return k == V_UNI && !vx_lin_phi_varying(x, I) ? V_UNI : V_VEC;
    return k == V_UNI && !vx_exit_phi(x, I) && !vx_join_phi(x, I) ? V_UNI : V_VEC;
  case LLVMAdd: case LLVMSub: case LLVMMul: case LLVMShl: case LLVMTrunc:
  case LLVMGetElementPtr:
    if (k == V_UNI) return V_UNI;
    if (n > VEC_MAX_ARGS) return vx_refuse(x, "a GEP with too many indices");
    k = linear(x, I, op, st);
    if (k == V_LIN && *st == 0) return V_UNI;     /* the same in every lane */
    if (k == V_LIN && (*st > VEC_MAX_STRIDE || *st < -VEC_MAX_STRIDE)) return V_VEC;
    return k;
  default:
    if (LLVMIsATerminatorInst(I))
      return vx_refuse(x, "a switch, return or other exit inside the loop");
    /* under a mask, a division's lanes that are off divide by 1
    ** (native_vec_build.c): a vector even when uniform */
    if ((op == LLVMSDiv || op == LLVMUDiv || op == LLVMSRem || op == LLVMURem) &&
        vx_lin_masked(x, LLVMGetInstructionParent(I)))
      return V_VEC;
    if (k == V_UNI) return V_UNI;
    if (vx_is_binop(op) || vx_is_cast(op) || op == LLVMFNeg || op == LLVMICmp ||
        op == LLVMFCmp || op == LLVMSelect || op == LLVMFreeze)
      return V_VEC;
    return vx_refuse(x, "a varying aggregate or vector value");
  }
}

/* Can a varying value of type t be a vector of t (or have no value)? */
static int lane_type(LLVMTypeRef t)
{
  switch (LLVMGetTypeKind(t)) {
  case LLVMVoidTypeKind: case LLVMIntegerTypeKind: case LLVMFloatTypeKind:
  case LLVMDoubleTypeKind: case LLVMPointerTypeKind:
    return 1;
  default:
    return 0;
  }
}

/* A private array (gpu.local_array) is an alloca of gj_entry once the body
** is inlined: one for all the lanes, where each work item needs its own. */
static int has_alloca(LLVMValueRef fn)
{
  LLVMBasicBlockRef bb;
  for (bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
    LLVMValueRef in;
    for (in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in))
      if (LLVMIsAAllocaInst(in)) return 1;
  }
  return 0;
}

/* Kinds to a fixed point (phis of inner loops see their back edges). */
static int analyze(vctx *x)
{
  int round, changed = 1;
  for (round = 0; changed && round < VEC_MAX_ROUNDS; round++) {
    size_t i;
    changed = 0;
    for (i = 0; i < x->nbbs; i++) {
      LLVMValueRef in;
      for (in = LLVMGetFirstInstruction(x->bbs[i]); in;
           in = LLVMGetNextInstruction(in)) {
        vent *e = vx_get(x, in);
        int64_t st;
        int k = classify(x, in, &st);
        if (k < 0) return -1;
        if (k == V_VEC && !lane_type(LLVMTypeOf(in)))
          return vx_refuse(x, "a varying aggregate or vector value");
        if (k < e->kind) k = e->kind;
        if (k == V_LIN && e->kind == V_LIN && st != e->stride) k = V_VEC;
        if (k != e->kind || (k == V_LIN && st != e->stride)) {
          e->kind = k;
          e->stride = k == V_LIN ? st : 0;
          changed = 1;
        }
      }
    }
    if (x->again || (x->frame && vx_frame_round(x))) changed = 1;
    x->again = 0;
  }
  if (changed) return vx_refuse(x, "its values did not settle");
  return vx_check_loops(x) || vx_check_ifs(x) ? -1 : 0;
}

/* What the loop must look like around its body: the header's only phi is
** lx, the latch is wrap's, nothing leaves but through the latch, and no
** value of the loop is used after it. */
static int check_shape(vctx *x)
{
  size_t i;
  LLVMValueRef t = LLVMGetBasicBlockTerminator(x->latch), in;
  if (!LLVMIsAPHINode(x->lx) || LLVMGetInstructionParent(x->lx) != x->s->head ||
      LLVMCountIncoming(x->lx) != 2 ||
      (LLVMGetIncomingBlock(x->lx, 0) == x->latch) ==
          (LLVMGetIncomingBlock(x->lx, 1) == x->latch))
    return vx_refuse(x, "an unexpected loop shape");
  for (in = LLVMGetFirstInstruction(x->s->head); in && LLVMIsAPHINode(in);
       in = LLVMGetNextInstruction(in))
    if (in != x->lx)
      return vx_refuse(x, "a value carried from one work item to the next");
  if (!t || !LLVMIsABranchInst(t) || !LLVMIsConditional(t) ||
      LLVMGetSuccessor(t, 0) != x->s->head ||
      LLVMGetInstructionParent(x->s->next) != x->latch)
    return vx_refuse(x, "an unexpected loop shape");
  x->more = LLVMGetCondition(t);
  if (!LLVMIsAICmpInst(x->more) || LLVMGetOperand(x->more, 0) != x->s->next ||
      LLVMGetNextUse(LLVMGetFirstUse(x->more)))
    return vx_refuse(x, "an unexpected loop shape");
  if (LLVMIsAPHINode(LLVMGetFirstInstruction(x->s->done)))
    return vx_refuse(x, "a value used after the loop");
  for (i = 0; i < x->nbbs; i++)
    for (in = LLVMGetFirstInstruction(x->bbs[i]); in;
         in = LLVMGetNextInstruction(in)) {
      LLVMUseRef u;
      for (u = LLVMGetFirstUse(in); u; u = LLVMGetNextUse(u)) {
        LLVMValueRef user = LLVMGetUser(u);
        if (!LLVMIsAInstruction(user) ||
            !vx_in_loop(x, LLVMGetInstructionParent(user)))
          return vx_refuse(x, "a value used after the loop");
      }
    }
  return 0;
}

static unsigned type_bits(LLVMTypeRef t)
{
  switch (LLVMGetTypeKind(t)) {
  case LLVMFloatTypeKind: return 32;
  case LLVMDoubleTypeKind: return 64;
  case LLVMIntegerTypeKind: return LLVMGetIntTypeWidth(t);
  default: return 64;
  }
}

/* Is there work LLVM's loop vectorizer does not do on the fast loop: an
** inner loop (it vectorizes innermost loops only), a call it would keep
** scalar (libm), or an atomic (an assert's fault record, gpu.atomic_*),
** which keeps its whole loop scalar?  Without any (saxpy), it vectorizes
** the fast loop as well as this does, and interleaves it too. */
static int worth_it(const vctx *x)
{
  size_t i;
  for (i = 0; i < x->nbbs; i++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(x->bbs[i]), in;
    unsigned j, k;
    for (j = 0; x->bbs[i] != x->latch && j < LLVMGetNumSuccessors(t); j++)
      for (k = 0; k <= i; k++)      /* an edge back (or across, rarely) */
        if (x->bbs[k] == LLVMGetSuccessor(t, j)) return 1;
    for (in = LLVMGetFirstInstruction(x->bbs[i]); in;
         in = LLVMGetNextInstruction(in))
      if ((LLVMIsACallInst(in) && vx_get(x, in)->kind == V_VEC &&
           !vx_exact_intrinsic(LLVMGetIntrinsicID(LLVMGetCalledValue(in)))) ||
          LLVMIsAAtomicRMWInst(in))
        return 1;
  }
  return 0;
}

/* W: the target's vector bits over the widest value the lanes load, store
** or compute in floating point (index arithmetic in i64 is left out: it is
** mostly linear, and a wider vector of it costs two registers, not half
** the lanes). */
static unsigned choose_width(vctx *x, const gj_job *job)
{
  unsigned bits = strstr(job->features, "+avx512f") ? 512
                  : strstr(job->features, "+avx") ? 256 : 128;
  unsigned widest = 8, w;
  size_t i;
  for (i = 0; i < x->nbbs; i++) {
    LLVMValueRef in;
    for (in = LLVMGetFirstInstruction(x->bbs[i]); in;
         in = LLVMGetNextInstruction(in)) {
      LLVMOpcode op = LLVMGetInstructionOpcode(in);
      LLVMTypeRef t = NULL;
      if (vx_get(x, in)->kind != V_VEC) continue;
      /* an integer in the frame (a loop counter, an id) is index work */
      if (vx_frame_slot(x, in) &&
          LLVMGetTypeKind(op == LLVMStore ? LLVMTypeOf(LLVMGetOperand(in, 0))
                                          : LLVMTypeOf(in)) == LLVMIntegerTypeKind)
        continue;
      if (op == LLVMStore) t = LLVMTypeOf(LLVMGetOperand(in, 0));
      else if (op == LLVMLoad || op == LLVMCall) t = LLVMTypeOf(in);
      else if (LLVMGetTypeKind(LLVMTypeOf(in)) == LLVMFloatTypeKind ||
               LLVMGetTypeKind(LLVMTypeOf(in)) == LLVMDoubleTypeKind)
        t = LLVMTypeOf(in);
      if (t && LLVMGetTypeKind(t) != LLVMVoidTypeKind &&
          type_bits(t) > widest)
        widest = type_bits(t);
    }
  }
  w = bits / (widest < 32 ? 32 : widest);
  /* An inner loop carries its values from one iteration to the next (an
  ** accumulator, mandelbrot's z): one vector of them is one dependency
  ** chain, which waits out each operation's latency.  Twice the lanes are
  ** two vectors in each operation, independent chains that the core
  ** overlaps, as hand-vectorized C keeps several accumulators in flight
  ** (mandelbrot 1.3x faster, n-body unchanged, AVX-512; bench/RESULTS.md). */
  if (x->nloops || x->lin_loops) w *= VX_INTERLEAVE;
  return w < 2 ? 2 : w > VX_MAXW ? VX_MAXW : w;
}

static int simplify(LLVMModuleRef m, const char *passes, gj_err *err)
{
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(m, passes, NULL, po);
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    gj_err_set(err, "cpu: simplifying the kernel: %s", msg ? msg : "?");
    LLVMDisposeErrorMessage(msg);
    return -1;
  }
  return 0;
}

/* The shapes of native_vec_if.c and native_vec_loop.c did not cover the
** body: again, every branch linearized (native_vec_lin.c), the inner
** loops in LCSSA form first (LLVM's pass: their values leave them only
** through phis in their exit blocks). */
static int linearized(vctx *x, gj_err *err)
{
  vx_loops_free(x);
  vx_ifs_free(x);
  free(x->tab);
  free(x->bbs);
  x->loops = NULL;
  x->ifs = NULL;
  x->nloops = x->nifs = 0;
  x->tab = NULL;
  x->cap = x->n = 0;
  x->bbs = NULL;
  x->nbbs = x->capbbs = 0;
  x->why = NULL;
  x->why_line = 0;
  x->soft = 0;
  if (simplify(x->m, "cgscc(function-attrs),function(lcssa)", err)) return -1;
  if (collect(x)) return gj_err_set(err, "cpu: out of memory");
  if (vx_lin_plan(x)) {
    if (!x->why) return gj_err_set(err, "cpu: out of memory");
    return 0;
  }
  if (!check_shape(x) && !analyze(x) && !worth_it(x))
    vx_refuse(x, "no inner loop nor call: left to LLVM's loop vectorizer");
  return 0;
}

int cpu_vectorize(LLVMModuleRef m, const gj_job *job, cpu_split_site *s,
                  char *note, size_t notesz, gj_err *err)
{
  vctx x;
  LLVMValueRef t;
  int r = 0;
  if (!job->vectorize) {
    snprintf(note, notesz, "not vectorized: turned off");
    return 0;
  }
  memset(&x, 0, sizeof(x));
  x.m = m;
  x.c = LLVMGetModuleContext(m);
  x.td = LLVMGetModuleDataLayout(m);
  x.s = s;
  x.frame = s->frame;
  x.i8 = LLVMInt8TypeInContext(x.c);
  x.i32 = LLVMInt32TypeInContext(x.c);
  x.i64 = LLVMInt64TypeInContext(x.c);
  /* Barriers: the frame's redundant loads and dead stores go, before
  ** SimplifyCFG, which may turn the resume switch into branches. */
  x.fn = LLVMGetBasicBlockParent(s->head);
  if (x.frame && vx_frame_forward(&x)) return gj_err_set(err, "cpu: out of memory");
  /* Small ifs become selects (SimplifyCFG's speculation): what the
  ** vectorizer then needs no masks for; and dead phi webs go (ADCE): a
  ** variable's slot that a work item may skip writing leaves phis that
  ** carry the last value from work item to work item, read by none.  The
  ** loop's blocks may merge: its latch and exit are found again. */
  if (simplify(m, "function(simplifycfg,adce)", err)) return -1;
  x.lx = LLVMGetOperand(s->next, 0);   /* next = lx + 1 (w_loop_end) */
  x.latch = LLVMGetInstructionParent(s->next);
  x.fn = LLVMGetBasicBlockParent(s->head);
  t = LLVMGetBasicBlockTerminator(x.latch);
  if (!t || !LLVMIsABranchInst(t) || !LLVMIsConditional(t)) {
    vx_refuse(&x, "an unexpected loop shape");
  } else if (has_alloca(x.fn)) {
    vx_refuse(&x, "a private array (gpu.local_array)");
  } else if (s->done = LLVMGetSuccessor(t, 1),
             collect(&x) || vx_find_loops(&x) || add_insns(&x) ||
             vx_find_ifs(&x)) {
    r = gj_err_set(err, "cpu: out of memory");
  } else if (!check_shape(&x) && !(x.frame && vx_frame_slots(&x)) && !analyze(&x) &&
             !x.frame && !worth_it(&x)) {
    vx_refuse(&x, "no inner loop nor call: left to LLVM's loop vectorizer");
  } else if (x.why && x.soft && !x.frame) {
    r = linearized(&x, err);
  }
  if (r) {
    /* out of memory */
  } else if (!x.why) {
    x.W = choose_width(&x, job);
    x.b = LLVMCreateBuilderInContext(x.c);
    r = vx_build(&x) ? gj_err_set(err, "cpu: out of memory") : 0;
    LLVMDisposeBuilder(x.b);
    snprintf(note, notesz, "vectorized: %u lanes%s", x.W,
             x.frame ? " (groups through their barriers)"
             : x.lin ? " (linearized with masks)" : "");
  }
  if (x.why && x.why_line > 0)
    snprintf(note, notesz, "not vectorized: %s at line %d", x.why, x.why_line);
  else if (x.why)
    snprintf(note, notesz, "not vectorized: %s", x.why);
  vx_loops_free(&x);
  vx_ifs_free(&x);
  vx_lin_free(&x);
  free(x.slots);
  free(x.bbs);
  free(x.tab);
  return r;
}
