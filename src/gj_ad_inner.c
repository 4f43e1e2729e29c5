/*
** Derivatives inside kernels (src/gj_ad.h, gj_ad_inner): the wrappers that
** codegen made for gpu.derivative and gpu.gradient (src/gj_cg_deriv.c) get
** the forward-mode derivative of their device function as their body.
**
** Forward mode because the functions are scalar: a handful of float
** arguments and one result, where one pass per active argument (tangent 1
** there) is exact, needs no tape, and keeps loops as they are (tangents
** flow through phis, whatever the trip count).  The walk is gj_ad_fwd.c's,
** the rules and refusals those of gpu.jvp.
*/
#include <stdlib.h>
#include <string.h>

#include "gj_ad_int.h"
#include "gj_cg.h"

#define ATTR "gj-derivative"
#define ATTRLEN 13

/* The active parameter's index of wrapper f, or -1 when f is none. */
static int active_param(LLVMValueRef f)
{
  LLVMAttributeRef at = LLVMGetStringAttributeAtIndex(
      f, LLVMAttributeFunctionIndex, ATTR, ATTRLEN);
  unsigned len = 0;
  const char *v;
  if (!at) return -1;
  v = LLVMGetStringAttributeValue(at, &len);
  return v && len ? atoi(v) : -1;
}

/* The byte offset of the field of a struct parameter that wrapper f is
** the derivative with respect to, or -1 (a float parameter). */
static long active_field(LLVMValueRef f)
{
  LLVMAttributeRef at = LLVMGetStringAttributeAtIndex(
      f, LLVMAttributeFunctionIndex, ATTR "-field", ATTRLEN + 6);
  unsigned len = 0;
  const char *v;
  if (!at) return -1;
  v = LLVMGetStringAttributeValue(at, &len);
  return v && len ? atol(v) : -1;
}

/* Wrapper w's body becomes its derivative with respect to parameter p (a
** float; or a struct, with respect to its field at offset field >= 0). */
static int differentiate(gj_ad *a, LLVMValueRef w, unsigned p, long field)
{
  LLVMBasicBlockRef bb;
  unsigned j, n = LLVMCountParams(w);
  LLVMValueRef par = LLVMGetParam(w, p);
  a->fn = w;
  gj_admap_free(&a->tan);
  gj_admap_free(&a->roots);
  /* arrays f reads (a pointer parameter, or the pointer of an array
  ** parameter's { pointer, length }): no shadow, tangent 0; their loads are
  ** allowed */
  for (j = 1; j < n; j++) {
    LLVMValueRef q = LLVMGetParam(w, j);
    if (LLVMGetTypeKind(LLVMTypeOf(q)) == LLVMPointerTypeKind &&
        gj_admap_put(&a->roots, q, q))
      return gj_err_set(a->err, "out of memory");
  }
  for (bb = LLVMGetFirstBasicBlock(w); bb; bb = LLVMGetNextBasicBlock(bb)) {
    LLVMValueRef I;
    for (I = LLVMGetFirstInstruction(bb); I; I = LLVMGetNextInstruction(I))
      if (LLVMGetInstructionOpcode(I) == LLVMExtractValue &&
          LLVMIsAArgument(LLVMGetOperand(I, 0)) &&
          LLVMGetTypeKind(LLVMTypeOf(I)) == LLVMPointerTypeKind &&
          gj_admap_put(&a->roots, I, I))
        return gj_err_set(a->err, "out of memory");
  }
  a->seed_par = NULL;
  if (field >= 0) {   /* the struct { ptr, length }: its field's loads */
    a->seed_par = par;
    a->seed_off = field;
  } else if (!gj_ad_isfloat(LLVMTypeOf(par))) {
    return gj_err_set(a->err, "internal error: kernel %s: derivative parameter "
                      "%u of %s is not a float", a->kname, p,
                      LLVMGetValueName(w));
  } else if (gj_admap_put(&a->tan, par, LLVMConstReal(LLVMTypeOf(par), 1.0))) {
    return gj_err_set(a->err, "out of memory");
  }
  gj_ad_forward_extracts(w);
  if (gj_ad_forward(a)) return -1;
  /* return the tangent of what was returned */
  for (bb = LLVMGetFirstBasicBlock(w); bb; bb = LLVMGetNextBasicBlock(bb)) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(bb), v, d;
    if (!t || LLVMGetInstructionOpcode(t) != LLVMRet) continue;
    v = LLVMGetOperand(t, 0);
    d = gj_admap_get(&a->tan, v);
    LLVMSetOperand(t, 0, d ? d : LLVMConstNull(LLVMTypeOf(v)));
  }
  a->seed_par = NULL;
  LLVMRemoveStringAttributeAtIndex(w, LLVMAttributeFunctionIndex, ATTR, ATTRLEN);
  if (field >= 0)
    LLVMRemoveStringAttributeAtIndex(w, LLVMAttributeFunctionIndex, ATTR "-field",
                                     ATTRLEN + 6);
  LLVMAddAttributeAtIndex(w, LLVMAttributeFunctionIndex,
                          LLVMCreateEnumAttribute(a->C, LLVMGetEnumAttributeKindForName(
                              "alwaysinline", 12), 0));
  return 0;
}

/* The calls of gj.math.floor and gj.math.ceil (the option ad's, which gave
** them a rule) back to LuaJIT's arithmetic (gj_cg_floor_at): the kernel's
** own values stay LuaJIT's bit for bit.  (A loop limit's floor, also such a
** call, is then computed that way too: the same integer.) */
static void lower_floors(gj_ad *a)
{
  LLVMValueRef f, I, next;
  LLVMBasicBlockRef bb;
  for (f = LLVMGetFirstFunction(a->m); f; f = LLVMGetNextFunction(f))
    for (bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (I = LLVMGetFirstInstruction(bb); I; I = next) {
        LLVMValueRef callee, r;
        size_t len = 0;
        const char *name;
        int ceil;
        next = LLVMGetNextInstruction(I);
        if (!LLVMIsACallInst(I) || !LLVMIsAFunction(callee = LLVMGetCalledValue(I)))
          continue;
        name = LLVMGetValueName2(callee, &len);
        if (len > 14 && !strncmp(name, "gj.math.floor.", 14)) ceil = 0;
        else if (len > 13 && !strncmp(name, "gj.math.ceil.", 13)) ceil = 1;
        else continue;
        LLVMPositionBuilderBefore(a->B, I);
        r = gj_cg_floor_at(a->m, a->B, LLVMGetOperand(I, 0), ceil);
        LLVMReplaceAllUsesWith(I, r);
        LLVMInstructionEraseFromParent(I);
      }
}

int gj_ad_inner(LLVMModuleRef m, LLVMValueRef body, const char *kname,
                gj_err *err)
{
  gj_ad a;
  LLVMValueRef f;
  int rc = -1, any = 0;
  for (f = LLVMGetFirstFunction(m); f && !any; f = LLVMGetNextFunction(f))
    any = active_param(f) >= 0;
  if (!any) return 0;
  gj_ad_init(&a, m, kname, err);
  /* f inlined into its wrappers (device functions are alwaysinline; the
  ** wrappers are not yet) */
  if (gj_ad_prepare(&a, body, 0)) return -1;
  a.B = LLVMCreateBuilderInContext(a.C);
  for (f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    int p = active_param(f);
    if (p >= 0 && differentiate(&a, f, (unsigned)p, active_field(f))) goto done;
  }
  lower_floors(&a);
  rc = 0;
done:
  gj_ad_free(&a);
  return rc;
}
