/*
** The PTX target for the cuda runtime: the code it generates.  `wrap` adds the
** kernel entry point around @gj_body (libdevice is in the job's libraries,
** which the core links before); `emit` gives the
** PTX.  The intrinsics IR is the shared NVPTX one (targets/ptx.c).
**
** The entry point's parameters mirror the argument block that the
** dispatcher packs (gj_sig_layout), so that a launch passes pointers into
** the block as they are:
**
**   define void @gj_kernel(ptr addrspace(1) %a.ptr, i64 %a.len, i32 %s,
**                          i64 %gx, i64 %gy, i64 %gz
**                          [, ptr addrspace(1) %fault])
**
** for (a: float[], s: int32_t): an array is its device pointer and its
** length, a scalar its type (bool as i8, tested != 0).  %gx..%gz are the
** launch's real global size: the grid is rounded up to whole blocks, and
** the work items beyond it return at once (a kernel with barriers is only
** launched with a multiple of its group, the launcher checks, so it has no
** such test and skips no barrier).  %wi, the work-item state the core
** passes around, is an alloca of those three numbers, which
** gj.global_size reads (targets/ptx.h).
**
** Bounds checks.  A kernel compiled with boundscheck (sig->faults) has one
** more parameter, %fault: the device address of its program's fault record
** (runtimes/cuda_run.c), kept in %wi[GJ_PTX_WI_FAULT] where
** gj.fault_record reads it.  A parameter rather than a module global read with
** cuModuleGetGlobal: the same PTX entry shape serves opencl's NVIDIA path,
** where no API gives a global's address, and a kernel without checks has
** neither the parameter nor the copies around its launch.
*/
#include "ptx.h"

#include <stdio.h>
#include <string.h>

#include "gj_target.h"

/* The thread's global id in dimension d, from the special registers. */
static LLVMValueRef global_id(LLVMModuleRef m, LLVMBuilderRef b, int d)
{
  static const char *const regs[3] = { "ctaid", "ntid", "tid" };
  static const char xyz[3] = { 'x', 'y', 'z' };
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
  LLVMTypeRef fty = LLVMFunctionType(i32, NULL, 0, 0);
  LLVMValueRef v[3];
  int k;
  for (k = 0; k < 3; k++) {
    char name[64];
    LLVMValueRef f;
    snprintf(name, sizeof(name), "llvm.nvvm.read.ptx.sreg.%s.%c", regs[k],
             xyz[d]);
    f = LLVMGetNamedFunction(m, name);
    if (!f) f = LLVMAddFunction(m, name, fty);
    v[k] = LLVMBuildZExt(b, LLVMBuildCall2(b, fty, f, NULL, 0, ""), i64, "");
  }
  return LLVMBuildAdd(b, LLVMBuildMul(b, v[0], v[1], ""), v[2], "");
}

/* The entry's parameter types, in the argument block's order, then the
** hidden global size and the fault record; returns how many. */
static unsigned entry_params(LLVMContextRef c, const gj_job *job,
                             LLVMValueRef body, const gj_sig *sig,
                             LLVMTypeRef *out)
{
  LLVMTypeRef btypes[1 + 2 * GJ_MAXPARAMS];
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
  unsigned n = 0, k = 1;
  int i;
  LLVMGetParamTypes(LLVMGlobalGetValueType(body), btypes);
  for (i = 0; i < sig->nparams; i++) {
    if (sig->params[i].is_array) {
      out[n++] = LLVMPointerTypeInContext(c, job->as_global);
      out[n++] = i64;
      k += 2;
    } else {
      out[n++] = sig->params[i].elem == GJ_BOOL ? LLVMInt8TypeInContext(c)
                                               : btypes[k];
      k++;
    }
  }
  for (i = 0; i < CU_HIDDEN_GLOBAL; i++) out[n++] = i64;
  if (sig->faults) out[n++] = LLVMPointerTypeInContext(c, job->as_global);
  return n;
}

static void add_attr(LLVMValueRef f, const char *name)
{
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(f));
  unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                          LLVMCreateEnumAttribute(c, k, 0));
}

/* The entry's code: keep the real global size (and the fault record) in
** %wi, return in the items beyond the size, call the body with the block's
** values. */
static void entry_body(LLVMModuleRef m, LLVMValueRef kernel,
                       LLVMValueRef body, const gj_sig *sig, unsigned g0)
{
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(c), i64 = LLVMInt64TypeInContext(c);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c, kernel, "entry");
  LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(c, kernel, "run");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c, kernel, "done");
  LLVMValueRef bargs[1 + 2 * GJ_MAXPARAMS], wi, ok = NULL;
  unsigned a = 0, k = 1, nwi = CU_HIDDEN_GLOBAL + (sig->faults ? 1u : 0u);
  int i;
  LLVMPositionBuilderAtEnd(b, entry);
  wi = LLVMBuildAlloca(b, LLVMArrayType(i64, nwi), "wi");
  LLVMSetAlignment(wi, 8);
  for (i = 0; i < (int)nwi; i++) {
    LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)i, 0);
    LLVMValueRef gi = LLVMGetParam(kernel, g0 + (unsigned)i);
    if (i == GJ_PTX_WI_FAULT) gi = LLVMBuildPtrToInt(b, gi, i64, "");
    LLVMSetAlignment(LLVMBuildStore(b, gi,
                                    LLVMBuildInBoundsGEP2(b, i64, wi, &idx, 1,
                                                          "")), 8);
    if (i < CU_HIDDEN_GLOBAL && !sig->uses_barrier) {
      LLVMValueRef in = LLVMBuildICmp(b, LLVMIntULT, global_id(m, b, i), gi,
                                      "");
      ok = ok ? LLVMBuildAnd(b, ok, in, "") : in;
    }
  }
  if (ok) LLVMBuildCondBr(b, ok, run, done);
  else LLVMBuildBr(b, run);
  LLVMPositionBuilderAtEnd(b, run);
  bargs[0] = wi;
  for (i = 0; i < sig->nparams; i++) {
    const gj_param *p = &sig->params[i];
    LLVMValueRef v = LLVMGetParam(kernel, a++);
    if (p->is_array) {
      bargs[k++] = v;
      bargs[k++] = LLVMGetParam(kernel, a++);
    } else if (p->elem == GJ_BOOL) {
      bargs[k++] = LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstInt(i8, 0, 0), "");
    } else {
      bargs[k++] = v;
    }
  }
  LLVMBuildCall2(b, LLVMGlobalGetValueType(body), body, bargs, k, "");
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
}

static int cu_wrap(void *ts, const gj_job *job, LLVMModuleRef m,
                   LLVMValueRef body, const gj_sig *sig, gj_err *err)
{
  const gj_ptx_libdevice *ld = ts;
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef ptypes[2 * GJ_MAXPARAMS + CU_HIDDEN_GLOBAL + 1];
  LLVMValueRef kernel, f;
  unsigned n;
  if (LLVMGetNamedFunction(m, "gj_kernel"))
    return gj_err_set(err, "cuda: the module already has a gj_kernel");
  if (!body || LLVMIsDeclaration(body))
    return gj_err_set(err, "cuda: the kernel body is not defined");
  if (gj_body_check(body, job, sig, "cuda", err)) return -1;
  if (!ld->found && gj_ptx_check_math(m, "cuda", ld->path, err) != 0)
    return -1;

  n = entry_params(c, job, body, sig, ptypes);
  kernel = LLVMAddFunction(m, "gj_kernel",
                           LLVMFunctionType(LLVMVoidTypeInContext(c), ptypes,
                                            n, 0));
  add_attr(kernel, "nounwind");
  if (sig->uses_barrier) add_attr(kernel, "convergent");
  add_attr(body, "alwaysinline");
  gj_ptx_mark_kernel(m, kernel);
  entry_body(m, kernel, body, sig,
             n - CU_HIDDEN_GLOBAL - (sig->faults ? 1u : 0u));

  /* Only the kernel is left once the optimizer has inlined the rest. */
  for (f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (f != kernel && !LLVMIsDeclaration(f))
      LLVMSetLinkage(f, LLVMInternalLinkage);
  return 0;
}

static int cu_emit(void *ts, const gj_job *job, LLVMTargetMachineRef tm,
                   LLVMModuleRef m, int asm, char **out, size_t *len,
                   gj_err *err)
{
  (void)ts;
  (void)job;
  if (gj_target_emit(tm, m, 1, "cuda", out, len, err) != 0) return -1;
  /* The artifact keeps its NUL: the driver reads PTX as a C string. */
  *len += !asm;
  return 0;
}

const gj_codegen gj_codegen_ptx_cuda = {
  .name = "ptx", .wrap = cu_wrap, .emit = cu_emit,
  /* finish_ir: none */
};
