/*
** The boundary of emitted functions, and codegen's entry point.
**
** Every function (kernel or device function) crosses the same boundary:
** its LLVM type (a kernel's parameters as the launch passes them: a
** (ptr, i64) pair per array and per struct passed by reference, a scalar
** as the signature holds it, an lnum in 64 bits; a device function's as
** its slots hold them; results by value), its declaration with the
** attributes every function gets, the parameters into their slots at
** entry, and the return.  gj_cg_module builds the module, declares and
** emits the kernel (gj_cg.c emits bodies) and writes the gj_sig the
** launcher reads; the two must agree on the order of parameters, which
** is why they live in one file.
*/
#include <stdio.h>
#include <string.h>

#include "gj_cg_int.h"
#include "gj_fault.h"
#include "gj_print.h"

/* --- Function types and declarations ------------------------------------- */

/* A result's LLVM type: a struct made in the function is returned by
** value (its bytes), everything else as its slot holds it. */
LLVMTypeRef gj_cg_ret_llvm(gj_cg *g, gj_ty t)
{
  if (gj_ty_byvalue(t)) return gj_cg_struct_value_type(g, gj_ty_struct(g->cs, t));
  return gj_cg_type(g, t);
}

static LLVMValueRef ret_value(gj_cg *g, LLVMValueRef v, gj_ty from, gj_ty to)
{
  if (gj_ty_byvalue(to)) return gj_cg_struct_out(g, v, to);
  return gj_cg_convert(g, v, from, to);
}

static LLVMTypeRef ret_type(gj_cg *g, gj_fn *fn)
{
  LLVMTypeRef el[GJ_MAXRET];
  int j, n = 0;
  for (j = 0; j < fn->nret; j++)
    if (gj_cg_ret_llvm(g, fn->ret[j])) el[n++] = gj_cg_ret_llvm(g, fn->ret[j]);
  if (n == 0) return LLVMVoidTypeInContext(g->C);
  if (fn->nret == 1) return el[0];
  return LLVMStructTypeInContext(g->C, el, (unsigned)n, 0);
}

/* A kernel's scalar parameter arrives as the signature holds it (an lnum
** in 64 bits), whatever type the body keeps it in (gj_ty_scalar:
** narrow_ints); a device function's as its slot holds it. */
static LLVMTypeRef param_llvm(gj_cg *g, const gj_fn *fn, gj_ty t)
{
  if (fn->kv < 0 && t.k == GJ_T_NUM) return gj_cg_scalar_type(g, (gj_scalar)t.s);
  return gj_cg_type(g, t);
}

LLVMValueRef gj_cg_declare_fn(gj_cg *g, gj_fn *fn, const char *name)
{
  LLVMTypeRef ps[GJ_MAXPARAMS * 2 + 2];   /* nextra: within GJ_MAXPARAMS */
  unsigned n = 0;
  int j;
  LLVMValueRef f;
  ps[n++] = g->ptr_wi;
  if (fn->kv >= 0 && gj_cg_is_resumable(g, fn)) ps[n++] = g->ptr_wi;  /* frame */
  for (j = 0; j < fn->nparams; j++) {
    gj_ty t = fn->params[j];
    /* kernel: (ptr, i64) per array, and per struct passed by reference */
    if (fn->kv < 0 && (t.k == GJ_T_ARR || t.k == GJ_T_SREF)) {
      ps[n++] = g->ptr_global;
      ps[n++] = g->lt[LT_I64];
    } else if (gj_cg_type(g, t)) {
      ps[n++] = param_llvm(g, fn, t);
    }
  }
  if (fn->kv < 0)
    for (j = 0; j < g->opts->nextra; j++) {
      ps[n++] = g->ptr_global;
      ps[n++] = g->lt[LT_I64];
    }
  f = LLVMAddFunction(g->M, name, LLVMFunctionType(ret_type(g, fn), ps, n, 0));
  LLVMSetLinkage(f, LLVMInternalLinkage);
  if (fn->kv < 0)
    for (j = 0; j < g->opts->nextra; j++) {
      char len[96];
      const char *nm = g->opts->extra_names[j];
      snprintf(len, sizeof(len), "%s.len", nm);
      LLVMSetValueName2(LLVMGetParam(f, n - 2 * (g->opts->nextra - j)), nm,
                        strlen(nm));
      LLVMSetValueName2(LLVMGetParam(f, n - 2 * (g->opts->nextra - j) + 1),
                        len, strlen(len));
    }
  /* Inlined into the kernel, so the work-item state never escapes and the
  ** CPU's work-item loop vectorizes; recursion is rejected by the typer. */
  {
    unsigned kind = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(g->C, kind, 0));
    /* a barrier must not be moved into or out of control flow */
    if (fn->uses_barrier && !g->job->serial_groups) {
      kind = LLVMGetEnumAttributeKindForName("convergent", 10);
      LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                              LLVMCreateEnumAttribute(g->C, kind, 0));
    }
  }
  if (g->opts->fastmath) {
    static const char *const attrs[] = {
      "unsafe-fp-math", "no-nans-fp-math", "no-infs-fp-math",
      "no-signed-zeros-fp-math", "approx-func-fp-math"
    };
    size_t k;
    for (k = 0; k < sizeof(attrs) / sizeof(attrs[0]); k++)
      LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                              LLVMCreateStringAttribute(g->C, attrs[k], (unsigned)strlen(attrs[k]), "true", 4));
  }
  fn->llfn = f;
  return f;
}

/* --- Entry and return --------------------------------------------------- */

/* A kernel's array (or struct by reference) arrives as its (ptr, i64)
** pair, rebuilt into the array value its slot holds; its scalar as the
** signature holds it, converted to the type the body keeps; a device
** function's parameters as their slots hold them. */
void gj_cg_params_in(gj_cg *g, gj_fn *fn, int k)
{
  int j;
  for (j = 0; j < fn->nparams; j++) {
    gj_ty t = fn->params[j];
    LLVMValueRef v;
    if (fn->kv < 0 && (t.k == GJ_T_ARR || t.k == GJ_T_SREF)) {
      v = LLVMGetUndef(g->lt[LT_ARR]);
      v = LLVMBuildInsertValue(g->B, v, LLVMGetParam(g->llfn, (unsigned)k++), 0, "");
      v = LLVMBuildInsertValue(g->B, v, LLVMGetParam(g->llfn, (unsigned)k++), 1, "");
    } else if (gj_cg_type(g, t)) {
      v = LLVMGetParam(g->llfn, (unsigned)k++);
      if (fn->kv < 0 && t.k == GJ_T_NUM)
        v = gj_cg_to_scalar(g, v, gj_ty_num((gj_scalar)t.s), gj_ty_scalar(g->cs, t));
    } else {
      continue;
    }
    gj_cg_store(g, j, t, v);
  }
}

void gj_cg_return(gj_cg *g, gj_fn *fn, int n, LLVMValueRef *v,
                  const gj_ty *t)
{
  LLVMTypeRef rt = ret_type(g, fn);
  LLVMValueRef agg;
  int j, k = 0;
  if (LLVMGetTypeKind(rt) == LLVMVoidTypeKind) {
    LLVMBuildRetVoid(g->B);
    return;
  }
  if (fn->nret == 1) {
    LLVMBuildRet(g->B, ret_value(g, v[0], t[0], fn->ret[0]));
    return;
  }
  agg = LLVMGetUndef(rt);
  for (j = 0; j < n && j < fn->nret; j++) {
    if (!gj_cg_ret_llvm(g, fn->ret[j])) continue;
    agg = LLVMBuildInsertValue(g->B, agg, ret_value(g, v[j], t[j], fn->ret[j]),
                               (unsigned)k++, "");
  }
  LLVMBuildRet(g->B, agg);
}

/* --- The module --------------------------------------------------------- */

int gj_cg_module(gj_cs *cs, gj_fn *kernel, const gj_job *job,
                 const gj_cgopts *opts, LLVMContextRef C, LLVMModuleRef *out,
                 LLVMValueRef *body, gj_sig *sig)
{
  gj_cg g;
  LLVMTypeRef arr[2];
  int j, rc;
  memset(&g, 0, sizeof(g));
  g.cs = cs;
  g.job = job;
  g.opts = opts;
  g.C = C;
  g.M = LLVMModuleCreateWithNameInContext(kernel->proto->name, C);
  g.B = LLVMCreateBuilderInContext(C);
  g.lt[LT_I1] = LLVMInt1TypeInContext(C);
  g.lt[LT_I8] = LLVMInt8TypeInContext(C);
  g.lt[LT_I16] = LLVMInt16TypeInContext(C);
  g.lt[LT_I32] = LLVMInt32TypeInContext(C);
  g.lt[LT_I64] = LLVMInt64TypeInContext(C);
  g.lt[LT_F32] = LLVMFloatTypeInContext(C);
  g.lt[LT_F64] = LLVMDoubleTypeInContext(C);
  g.ptr_global = LLVMPointerTypeInContext(C, job->as_global);
  g.ptr_wi = LLVMPointerTypeInContext(C, 0);
  arr[1] = g.lt[LT_I64];
  arr[0] = g.ptr_global;
  g.lt[LT_ARR] = LLVMStructTypeInContext(C, arr, 2, 0);
  arr[0] = LLVMPointerTypeInContext(C, job->as_shared);
  g.lt[LT_ARR_SHARED] = LLVMStructTypeInContext(C, arr, 2, 0);
  arr[0] = LLVMPointerTypeInContext(C, job->as_local);
  g.lt[LT_ARR_LOCAL] = LLVMStructTypeInContext(C, arr, 2, 0);
  LLVMSetTarget(g.M, job->triple);
  if (job->datalayout[0]) LLVMSetDataLayout(g.M, job->datalayout);
  if (gj_cg_struct_check(&g)) {
    LLVMDisposeBuilder(g.B);
    LLVMDisposeModule(g.M);
    return -1;
  }
  *body = gj_cg_declare_fn(&g, kernel, "gj_body");
  rc = gj_cg_emit_fn(&g, kernel);
  LLVMDisposeBuilder(g.B);
  if (rc) {
    LLVMDisposeModule(g.M);
    return -1;
  }
  memset(sig, 0, sizeof(*sig));
  sig->nparams = kernel->nparams + opts->nextra;
  for (j = 0; j < opts->nextra; j++) {   /* plugin buffers */
    gj_param *pp = &sig->params[kernel->nparams + j];
    pp->is_array = 1;
    pp->elem = (uint8_t)opts->extra_elems[j];
    pp->read = pp->written = 1;
  }
  for (j = 0; j < kernel->nparams; j++) {
    gj_ty t = kernel->params[j];
    gj_param *pp = &sig->params[j];
    /* a struct argument is passed as an array of one (gj_pipeline.c) */
    pp->is_array = t.k == GJ_T_ARR || t.k == GJ_T_SREF;
    pp->elem = (uint8_t)(pp->is_array ? (t.sid ? GJ_U8 : t.s)
                         : t.k == GJ_T_NUM ? t.s : gj_ty_scalar(cs, t));
    if (gj_ty_struct(cs, t)) pp->esize = (uint16_t)gj_ty_struct(cs, t)->size;
    if (t.k == GJ_T_NUM && t.lnum) {   /* the class the launch tests */
      pp->lnum = (uint8_t)gj_lnum_of(t.lo, t.hi);
      sig->lnum = 1;
    }
    pp->read = (kernel->rmask >> j) & 1;
    pp->written = (kernel->wmask >> j) & 1;
    pp->len_used = (kernel->lmask >> j) & 1;
  }
  gj_sig_layout(sig);
  sig->shared_bytes = g.shared_size;
  sig->frame_bytes = kernel->frame_bytes;
  sig->uses_barrier = (uint8_t)kernel->uses_barrier;
  sig->cancel = (uint8_t)(opts->cancel != 0);
  sig->prints = (uint8_t)(opts->prints && opts->prints->n > 0);
  sig->faults = (opts->sites && opts->sites->n > 0) || sig->cancel || sig->prints ||
                (opts->asserts && opts->asserts->n > 0);
  *out = g.M;
  return 0;
}
