/*
** Codegen of work-group features: gpu.barrier, gpu.shared,
** gpu.local_array and the atomics, and the resumable functions that carry
** barriers on targets that run a group's work items one after another
** (job->serial_groups; the conventions are at the top of gj_backend.h, the
** design in docs/backends.md).
**
** A resumable function keeps every slot in its frame instead of allocas,
** so nothing it computes lives in SSA values across a barrier.  Its entry
** switches on the frame's resume point: 0 starts the function (parameters
** into their slots), k > 0 jumps to the code after the k-th suspension.
** A barrier stores k and returns; a call of a resumable callee gives the
** callee a frame inside the caller's and suspends the caller (with its own
** k) while the callee is suspended.  Recursion is rejected by the typer, so
** every frame has a size known at compile time.
*/
#include <stdio.h>
#include <string.h>

#include "gj_cg_int.h"
#include "gj_intr.h"

int gj_cg_is_resumable(const gj_cg *g, const gj_fn *fn)
{
  return g->job->serial_groups && fn->uses_barrier;
}

static uint32_t align_up(uint32_t n, uint32_t a)
{
  return (n + a - 1) / a * a;
}

/* Address of frame byte off, computed in the entry block. */
static LLVMValueRef frame_at(gj_cg *g, uint32_t off)
{
  LLVMBuilderRef b = LLVMCreateBuilderInContext(g->C);
  LLVMValueRef idx = LLVMConstInt(g->lt[LT_I64], off, 0), p;
  LLVMPositionBuilderBefore(b, LLVMGetBasicBlockTerminator(g->allocas));
  p = LLVMBuildInBoundsGEP2(b, g->lt[LT_I8], g->frame, &idx, 1, "");
  LLVMDisposeBuilder(b);
  return p;
}

LLVMValueRef gj_cg_frame_alloc(gj_cg *g, uint32_t n, uint32_t align)
{
  uint32_t off = align_up(g->frame_size, align);
  g->frame_size = off + n;
  return frame_at(g, off);
}

static LLVMValueRef suspended_return(gj_cg *g)
{
  LLVMTypeRef rt = LLVMGetReturnType(LLVMGlobalGetValueType(g->llfn));
  if (LLVMGetTypeKind(rt) == LLVMVoidTypeKind) return LLVMBuildRetVoid(g->B);
  return LLVMBuildRet(g->B, LLVMGetUndef(rt));
}

static void set_resume_point(gj_cg *g, LLVMValueRef frame, int k)
{
  LLVMValueRef st = LLVMBuildStore(g->B, LLVMConstInt(g->lt[LT_I32], (unsigned)k, 0),
                                   frame);
  LLVMSetAlignment(st, 4);
}

/* A new resume point: its block, entered from the entry switch, where the
** function's resume point is reset to 0. */
static int new_resume_block(gj_cg *g, LLVMBasicBlockRef *bb)
{
  int k = ++g->nresume;
  *bb = LLVMAppendBasicBlockInContext(g->C, g->llfn, "resume");
  LLVMAddCase(g->resume, LLVMConstInt(g->lt[LT_I32], (unsigned)k, 0), *bb);
  return k;
}

void gj_cg_resume_begin(gj_cg *g)
{
  LLVMValueRef st = LLVMBuildLoad2(g->B, g->lt[LT_I32], g->frame, "resume");
  LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(g->C, g->llfn, "start");
  LLVMSetAlignment(st, 4);
  g->resume = LLVMBuildSwitch(g->B, st, start, 4);
  g->frame_size = GJ_FRAME_HEAD;
  g->nresume = 0;
  g->ncallees = 0;
  LLVMPositionBuilderAtEnd(g->B, start);
}

void gj_cg_resume_point(gj_cg *g)
{
  LLVMBasicBlockRef rb;
  int k = new_resume_block(g, &rb);
  set_resume_point(g, g->frame, k);
  suspended_return(g);
  LLVMPositionBuilderAtEnd(g->B, rb);
  set_resume_point(g, g->frame, 0);
}

/* The callee's frame inside ours: one per callee, since calls of one
** function never overlap. */
static LLVMValueRef callee_frame(gj_cg *g, gj_fn *callee)
{
  int j;
  for (j = 0; j < g->ncallees; j++)
    if (g->callee[j] == callee) return frame_at(g, g->callee_off[j]);
  if (g->ncallees == (int)(sizeof(g->callee) / sizeof(g->callee[0]))) {
    /* more distinct callees than slots: give this one a frame of its own
    ** without remembering it */
    return gj_cg_frame_alloc(g, callee->frame_bytes, 16);
  }
  g->callee[g->ncallees] = callee;
  g->callee_off[g->ncallees] = align_up(g->frame_size, 16);
  g->frame_size = g->callee_off[g->ncallees] + callee->frame_bytes;
  return frame_at(g, g->callee_off[g->ncallees++]);
}

static LLVMValueRef not_zero(gj_cg *g, LLVMValueRef frame)
{
  LLVMValueRef st = LLVMBuildLoad2(g->B, g->lt[LT_I32], frame, "");
  LLVMSetAlignment(st, 4);
  return LLVMBuildICmp(g->B, LLVMIntNE, st, LLVMConstNull(g->lt[LT_I32]), "");
}

LLVMValueRef gj_cg_call_resumable(gj_cg *g, gj_fn *callee, LLVMTypeRef fty,
                                  LLVMValueRef *args, unsigned n)
{
  LLVMTypeRef pt[2 * GJ_MAXPARAMS + 2];
  LLVMValueRef f = (LLVMValueRef)callee->llfn, r1, r2, cf = callee_frame(g, callee);
  LLVMBasicBlockRef from, susp, cont, rb;
  unsigned j;
  int k;
  args[1] = cf;
  set_resume_point(g, cf, 0);
  r1 = LLVMBuildCall2(g->B, fty, f, args, n, "");
  susp = LLVMAppendBasicBlockInContext(g->C, g->llfn, "suspend");
  cont = LLVMAppendBasicBlockInContext(g->C, g->llfn, "cont");
  LLVMBuildCondBr(g->B, not_zero(g, cf), susp, cont);
  from = LLVMGetInsertBlock(g->B);
  /* suspended inside the callee: suspend here too */
  k = new_resume_block(g, &rb);
  LLVMPositionBuilderAtEnd(g->B, susp);
  set_resume_point(g, g->frame, k);
  suspended_return(g);
  /* resumed: resume the callee, whose parameters are in its frame */
  LLVMPositionBuilderAtEnd(g->B, rb);
  set_resume_point(g, g->frame, 0);
  LLVMGetParamTypes(fty, pt);
  for (j = 2; j < n; j++) args[j] = LLVMGetUndef(pt[j]);
  r2 = LLVMBuildCall2(g->B, fty, f, args, n, "");
  LLVMBuildCondBr(g->B, not_zero(g, cf), susp, cont);
  LLVMPositionBuilderAtEnd(g->B, cont);
  if (LLVMGetTypeKind(LLVMGetReturnType(fty)) == LLVMVoidTypeKind) return r1;
  {
    LLVMValueRef phi = LLVMBuildPhi(g->B, LLVMGetReturnType(fty), "");
    LLVMValueRef v[2];
    LLVMBasicBlockRef b[2];
    v[0] = r1;
    v[1] = r2;
    b[0] = from;
    b[1] = rb;
    LLVMAddIncoming(phi, v, b, 2);
    return phi;
  }
}

/* --- The intrinsics ------------------------------------------------------ */

static LLVMTypeRef mem_type(gj_cg *g, gj_scalar s)
{
  return s == GJ_BOOL ? g->lt[LT_I8] : gj_cg_scalar_type(g, s);
}

static LLVMValueRef make_array(gj_cg *g, int space, LLVMValueRef p, int64_t n)
{
  LLVMValueRef v = LLVMGetUndef(g->lt[LT_ARR + space]);
  v = LLVMBuildInsertValue(g->B, v, p, 0, "");
  return LLVMBuildInsertValue(g->B, v, LLVMConstInt(g->lt[LT_I64], (unsigned long long)n, 0),
                              1, "");
}

static LLVMValueRef shared_array(gj_cg *g, gj_scalar s, int64_t n)
{
  uint32_t bytes = (uint32_t)(n * gj_scalar_size(s));
  LLVMValueRef p;
  if (g->job->serial_groups) {
    /* a slice of the group's shared block */
    LLVMTypeRef ptr = LLVMPointerTypeInContext(g->C, 0);
    LLVMValueRef idx;
    uint32_t off = align_up(g->shared_size, 16);
    g->shared_size = off + bytes;
    p = gj_cg_call(g, "gj.shared_base", ptr, &ptr, 1, &g->wi);
    idx = LLVMConstInt(g->lt[LT_I64], off, 0);
    p = LLVMBuildInBoundsGEP2(g->B, g->lt[LT_I8], p, &idx, 1, "");
  } else {
    /* one group-shared global per call site */
    LLVMTypeRef at = LLVMArrayType(mem_type(g, s), (unsigned)n);
    char name[32];
    snprintf(name, sizeof(name), "gj.shared.%d", g->nshared++);
    p = LLVMAddGlobalInAddressSpace(g->M, at, name, g->job->as_shared);
    LLVMSetLinkage(p, LLVMInternalLinkage);
    LLVMSetInitializer(p, LLVMGetUndef(at));
    LLVMSetAlignment(p, 16);
    g->shared_size = align_up(g->shared_size, 16) + bytes;
  }
  return make_array(g, GJ_SPACE_SHARED, p, n);
}

static LLVMValueRef local_array(gj_cg *g, gj_scalar s, int64_t n)
{
  LLVMValueRef p;
  if (g->resumable) {
    /* it must outlive a barrier: in the work item's frame */
    p = gj_cg_frame_alloc(g, (uint32_t)(n * gj_scalar_size(s)), 16);
  } else {
    LLVMBuilderRef b = LLVMCreateBuilderInContext(g->C);
    LLVMValueRef first = LLVMGetFirstInstruction(g->allocas);
    if (first) LLVMPositionBuilderBefore(b, first);
    else LLVMPositionBuilderAtEnd(b, g->allocas);
    p = LLVMBuildAlloca(b, LLVMArrayType(mem_type(g, s), (unsigned)n), "local");
    LLVMSetAlignment(p, 16);
    LLVMDisposeBuilder(b);
  }
  return make_array(g, GJ_SPACE_LOCAL, p, n);
}

void gj_cg_barrier(gj_cg *g)
{
  if (g->job->serial_groups) {
    gj_cg_resume_point(g);
  } else {
    LLVMTypeRef ptr = g->ptr_wi;
    LLVMValueRef c = gj_cg_call(g, "gj.barrier", LLVMVoidTypeInContext(g->C), &ptr, 1,
                                &g->wi);
    unsigned kind = LLVMGetEnumAttributeKindForName("convergent", 10);
    LLVMAddCallSiteAttribute(c, LLVMAttributeFunctionIndex,
                             LLVMCreateEnumAttribute(g->C, kind, 0));
  }
}

static LLVMAtomicRMWBinOp rmw_op(int intr, gj_scalar e)
{
  int sg = gj_scalar_issigned(e);
  switch (intr) {
  case GJ_I_ATOMIC_ADD:
    return gj_scalar_isfloat(e) ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd;
  case GJ_I_ATOMIC_SUB: return LLVMAtomicRMWBinOpSub;
  case GJ_I_ATOMIC_MIN: return sg ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin;
  case GJ_I_ATOMIC_MAX: return sg ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax;
  case GJ_I_ATOMIC_AND: return LLVMAtomicRMWBinOpAnd;
  case GJ_I_ATOMIC_OR: return LLVMAtomicRMWBinOpOr;
  case GJ_I_ATOMIC_XOR: return LLVMAtomicRMWBinOpXor;
  default: return LLVMAtomicRMWBinOpXchg;
  }
}

/* An atomic's operand as the element type: integers convert as in C
** (modulo 2^bits, so bit.bnot(x) masks a uint64_t as it would in CUDA),
** floats as a store into the array would. */
static LLVMValueRef operand(gj_cg *g, LLVMValueRef v, gj_ty t, gj_scalar e)
{
  if (gj_scalar_isint(gj_ty_scalar(g->cs, t))) return gj_cg_to_scalar(g, v, t, e);
  return gj_cg_to_elem(g, v, t, e);
}

int gj_cg_group_intr(gj_cg *g, int i, int intr, LLVMValueRef *args,
                     const gj_ty *at, const gj_ty *rt, LLVMValueRef *res)
{
  gj_scalar e;
  LLVMValueRef p;
  gj_cg_guard gd;
  switch (intr) {
  case GJ_I_BARRIER:
    gj_cg_barrier(g);
    return 0;
  case GJ_I_SHARED:
    res[0] = shared_array(g, (gj_scalar)rt[0].s, rt[0].aux);
    return 0;
  case GJ_I_LOCAL_ARRAY:
    res[0] = local_array(g, (gj_scalar)rt[0].s, rt[0].aux);
    return 0;
  default:
    break;
  }
  /* atomics: monotonic, as CUDA's atomicAdd and OpenCL 1.2's atomic_add */
  e = (gj_scalar)at[0].s;
  if (gj_cg_check_begin(g, i, args[0], at[0], args[1], at[1], &gd)) return -1;
  p = gj_cg_elem_ptr(g, args[0], at[0], args[1], at[1]);
  if (intr == GJ_I_ATOMIC_CAS) {
    LLVMValueRef cmp = operand(g, args[2], at[2], e);
    LLVMValueRef nv = operand(g, args[3], at[3], e);
    LLVMValueRef x = LLVMBuildAtomicCmpXchg(g->B, p, cmp, nv,
                                            LLVMAtomicOrderingMonotonic,
                                            LLVMAtomicOrderingMonotonic, 0);
    res[0] = LLVMBuildExtractValue(g->B, x, 0, "");
  } else {
    res[0] = LLVMBuildAtomicRMW(g->B, rmw_op(intr, e), p,
                                operand(g, args[2], at[2], e),
                                LLVMAtomicOrderingMonotonic, 0);
  }
  res[0] = gj_cg_convert(g, gj_cg_check_end(g, &gd, res[0]), gj_ty_num(e), rt[0]);
  return 0;
}
