/*
** Codegen of gpu.derivative(f, x, ...) and gpu.gradient(f, a, b, ...) in a
** kernel (docs/autodiff.md, "Inside kernels"); the typer's rule is
** type_derivative (gj_typer_intr.c).
**
** Contract: the value (the call's last result) is a call of the device
** function f as the kernel calls it.  Each partial derivative (the one of
** derivative, each argument's of gradient) is a call, at the same
** arguments, of a wrapper @gj_d.<f>.<k>: a function of f's parameters that
** calls f and returns its first result converted to the partial's type,
** marked with the string attribute "gj-derivative" = the LLVM index of the
** active parameter k.  A struct argument (of float fields) has one wrapper
** per field, marked also "gj-derivative-field" = the field's byte offset,
** and its partial is a new struct of the same type holding them.  gj_ad_inner (src/gj_ad.h) then gives each wrapper
** the body of that derivative (forward mode, tangent 1 on that parameter)
** before the plugins, the disk cache's key and the target see the module.
** f is emitted before its wrappers, so a wrapper comes after any that f
** reaches in the module's order (nested derivatives are refused anyway).
*/
#include <stdio.h>
#include <string.h>

#include "gj_cg_int.h"

/* The LLVM index of callee's parameter k: after %wi (and a frame, which a
** differentiated function never has: it would use gpu.barrier), one per
** parameter with storage. */
static unsigned param_index(gj_cg *g, const gj_fn *callee, int k)
{
  unsigned n = 1;
  int j;
  for (j = 0; j < k; j++)
    if (gj_cg_type(g, callee->params[j])) n++;
  return n;
}

/* The wrapper of callee's derivative with respect to parameter k, whose
** result has type rt (made once per specialization and k); with field >= 0
** parameter k is a struct and the derivative is with respect to its float
** field at byte offset field (attribute "gj-derivative-field"). */
static LLVMValueRef wrapper(gj_cg *g, const gj_fn *callee, int k, gj_ty rt, int field)
{
  LLVMValueRef cf = (LLVMValueRef)callee->llfn, w, r;
  LLVMTypeRef cty = LLVMGlobalGetValueType(cf), pt[GJ_MAXPARAMS * 2 + 2];
  LLVMValueRef cargs[GJ_MAXPARAMS * 2 + 2];
  unsigned np = LLVMCountParamTypes(cty), j;
  size_t len = 0;
  const char *cname = LLVMGetValueName2(cf, &len);
  char name[256], idx[16];
  gj_cg sub = *g;
  if (field >= 0) snprintf(name, sizeof(name), "gj_d.%.*s.%d.%d", (int)len, cname, k, field);
  else snprintf(name, sizeof(name), "gj_d.%.*s.%d", (int)len, cname, k);
  if ((w = LLVMGetNamedFunction(g->M, name)) != NULL) return w;
  LLVMGetParamTypes(cty, pt);
  w = LLVMAddFunction(g->M, name, LLVMFunctionType(gj_cg_type(g, rt), pt, np, 0));
  LLVMSetLinkage(w, LLVMInternalLinkage);
  snprintf(idx, sizeof(idx), "%u", param_index(g, callee, k));
  LLVMAddAttributeAtIndex(w, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(g->C, "gj-derivative", 13,
                                                    idx, (unsigned)strlen(idx)));
  if (field >= 0) {
    snprintf(idx, sizeof(idx), "%d", field);
    LLVMAddAttributeAtIndex(w, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(g->C, "gj-derivative-field", 19,
                                                      idx, (unsigned)strlen(idx)));
  }
  sub.B = LLVMCreateBuilderInContext(g->C);
  LLVMPositionBuilderAtEnd(sub.B, LLVMAppendBasicBlockInContext(g->C, w, "entry"));
  for (j = 0; j < np; j++) cargs[j] = LLVMGetParam(w, j);
  r = LLVMBuildCall2(sub.B, cty, cf, cargs, np, "");
  if (callee->nret > 1) r = LLVMBuildExtractValue(sub.B, r, 0, "");
  LLVMBuildRet(sub.B, gj_cg_convert(&sub, r, callee->ret[0], rt));
  LLVMDisposeBuilder(sub.B);
  return w;
}

int gj_cg_derivative(gj_cg *g, int i, int intr, int nargs, LLVMValueRef *args,
                     const gj_ty *at, const gj_ty *rt, int nout,
                     LLVMValueRef *res)
{
  gj_cs *cs = g->cs;
  gj_ty vt[GJ_MAXRET], ta[GJ_MAXPARAMS];
  LLVMValueRef vr[GJ_MAXRET], cargs[GJ_MAXPARAMS * 2 + 2];
  gj_fn *callee;
  int nv = 0, k, j;
  unsigned n;
  /* integers made floats, as the typer typed f */
  gj_typer_deriv_args(cs, intr, nargs, at, ta);
  for (j = 1; j < nargs; j++)
    if (ta[j].k != at[j].k || ta[j].s != at[j].s)
      args[j] = gj_cg_convert(g, args[j], at[j], ta[j]);
  at = ta;
  /* the value, and f emitted */
  if (gj_cg_call_lua(g, i, at[0].aux, nargs - 1, args + 1, at + 1, vr, vt, &nv) ||
      gj_typer_callee(cs, at[0].aux, nargs - 1, at + 1,
                      g->fn->proto->ins[i].line, g->fn, &callee))
    return -1;
  res[nout - 1] = vr[0];
  n = gj_cg_call_args(g, callee, args + 1, at + 1, cargs);
  for (k = 0; k < nout - 1; k++) {
    LLVMValueRef w;
    const gj_struct *st = rt[k].k == GJ_T_SREF ? gj_ty_struct(cs, rt[k]) : NULL;
    if (st) {   /* a struct of floats: a new one, one partial per field */
      LLVMValueRef fv[GJ_MAXFIELDS];
      gj_ty ft[GJ_MAXFIELDS], dt = gj_ty_num(GJ_F64);
      int fi;
      for (fi = 0; fi < st->nfields && fi < GJ_MAXFIELDS; fi++) {
        ft[fi] = dt;
        if (!gj_cg_type(g, callee->ret[0])) {
          fv[fi] = LLVMConstNull(gj_cg_type(g, dt));
          continue;
        }
        w = wrapper(g, callee, k, dt, (int)st->fields[fi].offset);
        fv[fi] = LLVMBuildCall2(g->B, LLVMGlobalGetValueType(w), w, cargs, n, "");
      }
      res[k] = gj_cg_struct_new(g, rt[k], fi, fv, ft);
      continue;
    }
    if (!gj_cg_type(g, callee->ret[0])) {   /* a constant: no derivative */
      res[k] = LLVMConstNull(gj_cg_type(g, rt[k]));
      continue;
    }
    w = wrapper(g, callee, k, rt[k], -1);
    res[k] = LLVMBuildCall2(g->B, LLVMGlobalGetValueType(w), w, cargs, n, "");
  }
  return 0;
}
