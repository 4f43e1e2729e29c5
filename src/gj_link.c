/*
** Linking IR into a module (the core links the job's intrinsics and
** libraries; a target's wrap may link more), and the @gj_body convention
** checked once for every target's wrap (a wrapper that loads arguments by
** the signature must find the body it calls shaped by the same signature).
** Declared in gj_backend.h.
*/
#include <string.h>

#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>

#include "gj_backend.h"

int gj_link_ir(LLVMModuleRef m, LLVMMemoryBufferRef buf, const char *what,
               gj_err *err)
{
  LLVMModuleRef im;
  char *msg = NULL;
  if (LLVMParseIRInContext(LLVMGetModuleContext(m), buf, &im, &msg)) {
    gj_err_set(err, "cannot parse %s: %s", what, msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMSetTarget(im, LLVMGetTarget(m));
  LLVMSetDataLayout(im, LLVMGetDataLayoutStr(m));
  if (LLVMLinkModules2(m, im))     /* disposes im */
    return gj_err_set(err, "cannot link %s", what);
  return 0;
}

/* The definitions are linkonce_odr in the target's text (the linker does
** not bind a declaration to an internal definition); the target's wrap
** makes them internal, and once inlined they disappear.  The linker takes
** only the definitions m refers to. */
int gj_link_intrinsics(LLVMModuleRef m, const gj_job *job, gj_err *err)
{
  if (!job->intrinsics_ir) return 0;
  if (gj_link_ir(m, LLVMCreateMemoryBufferWithMemoryRangeCopy(
                        job->intrinsics_ir, strlen(job->intrinsics_ir),
                        "gj_intrinsics"),
                 "the target's intrinsics", err))
    return gj_err_prefix(err, "internal error: ");
  return 0;
}

/* Does LLVM type t hold a scalar of kind s? */
static int holds_scalar(LLVMTypeRef t, gj_scalar s)
{
  switch (LLVMGetTypeKind(t)) {
  case LLVMIntegerTypeKind:
    return (s == GJ_BOOL || gj_scalar_isint(s)) &&
           LLVMGetIntTypeWidth(t) == (unsigned)gj_scalar_bits(s);
  case LLVMFloatTypeKind: return s == GJ_F32;
  case LLVMDoubleTypeKind: return s == GJ_F64;
  default: return 0;
  }
}

int gj_body_check(LLVMValueRef body, const gj_job *job, const gj_sig *sig,
                  const char *bk, gj_err *err)
{
  LLVMTypeRef bt[1 + 2 * GJ_MAXPARAMS], fty, i64;
  unsigned need = 1, nb, k;
  int i;
  if (!body || LLVMIsDeclaration(body))
    return gj_err_set(err, "%s: the kernel body is not defined", bk);
  fty = LLVMGlobalGetValueType(body);
  i64 = LLVMInt64TypeInContext(LLVMGetTypeContext(fty));
  for (i = 0; i < sig->nparams; i++) need += sig->params[i].is_array ? 2 : 1;
  nb = LLVMCountParamTypes(fty);
  if (nb != need || LLVMGetTypeKind(LLVMGetReturnType(fty)) != LLVMVoidTypeKind)
    return gj_err_set(err, "%s: gj_body has %u parameters, the signature "
                      "needs %u (and a void result)", bk, nb, need);
  LLVMGetParamTypes(fty, bt);
  if (LLVMGetTypeKind(bt[0]) != LLVMPointerTypeKind)
    return gj_err_set(err, "%s: gj_body's first parameter must be a pointer", bk);
  for (i = 0, k = 1; i < sig->nparams; i++) {
    const gj_param *p = &sig->params[i];
    if (p->is_array) {
      if (LLVMGetTypeKind(bt[k]) != LLVMPointerTypeKind ||
          LLVMGetPointerAddressSpace(bt[k]) != job->as_global || bt[k + 1] != i64)
        return gj_err_set(err, "%s: gj_body parameter %u: expected an array "
                          "(ptr addrspace(%u), i64)", bk, k, job->as_global);
      k += 2;
    } else {
      if (!holds_scalar(bt[k], (gj_scalar)p->elem))
        return gj_err_set(err, "%s: gj_body parameter %u does not hold a %s",
                          bk, k, gj_scalar_name((gj_scalar)p->elem));
      k += 1;
    }
  }
  return 0;
}
