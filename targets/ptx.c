/*
** NVPTX code generation shared by the backends that emit PTX (ptx.h).
**
** Facts this relies on (LLVM 15): the triple nvptx64-nvidia-cuda knows
** sm_20..sm_86 and PTX up to 7.5; a kernel is a function named in the
** nvvm.annotations metadata; allocas stay in address space 0 and the
** target moves them to .local; the target's pass-builder callbacks run
** NVVMReflect, which folds libdevice's __nvvm_reflect("__CUDA_FTZ") to 0
** (no flush to zero) when the module has no "nvvm-reflect-ftz" flag.
** NVPTX lowers frem to x - trunc(x / y) * y, which is not C's fmod, and
** has no instruction for exp, sin, ...: without libdevice those stay
** unsupported rather than wrong.
*/
#include "ptx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>

#include "gj_target.h"

/* -- Intrinsics IR ------------------------------------------------------- */

/* gj.<name>(ptr %wi, i32 %d): special register <reg>.x/.y/.z as i64, and
** `other` for d > 2. */
#define PTX_SREG(name, reg, other)                                        \
  "declare i32 @llvm.nvvm.read.ptx.sreg." reg ".x()\n"                    \
  "declare i32 @llvm.nvvm.read.ptx.sreg." reg ".y()\n"                    \
  "declare i32 @llvm.nvvm.read.ptx.sreg." reg ".z()\n"                    \
  "define linkonce_odr i64 @gj." name "(ptr %wi, i32 %d) #0 {\n"          \
  "  switch i32 %d, label %o [ i32 0, label %x i32 1, label %y "          \
  "i32 2, label %z ]\n"                                                   \
  "x:\n  %a = call i32 @llvm.nvvm.read.ptx.sreg." reg ".x()\n  br label %e\n" \
  "y:\n  %b = call i32 @llvm.nvvm.read.ptx.sreg." reg ".y()\n  br label %e\n" \
  "z:\n  %c = call i32 @llvm.nvvm.read.ptx.sreg." reg ".z()\n  br label %e\n" \
  "e:\n  %v = phi i32 [ %a, %x ], [ %b, %y ], [ %c, %z ]\n"               \
  "  %r = zext i32 %v to i64\n  ret i64 %r\n"                             \
  "o:\n  ret i64 " #other "\n}\n"

/* gj.math.<fn>.<sfx>: a call of impl, one or two operands of type T. */
#define PTX_M1(fn, T, sfx, impl)                                          \
  "declare " T " @" impl "(" T ")\ndefine linkonce_odr " T " @gj.math."   \
  fn "." sfx "(" T " %x) #1 {\n  %r = call " T " @" impl "(" T " %x)\n"   \
  "  ret " T " %r\n}\n"
#define PTX_M2(fn, T, sfx, impl)                                          \
  "declare " T " @" impl "(" T ", " T ")\ndefine linkonce_odr " T         \
  " @gj.math." fn "." sfx "(" T " %x, " T " %y) #1 {\n  %r = call " T     \
  " @" impl "(" T " %x, " T " %y)\n  ret " T " %r\n}\n"
/* Both precisions through an LLVM intrinsic, or libdevice (__nv_sinf,
** __nv_sin). */
#define PTX_LLVM(fn)                                                      \
  PTX_M1(#fn, "float", "f32", "llvm." #fn ".f32")                         \
  PTX_M1(#fn, "double", "f64", "llvm." #fn ".f64")
#define PTX_NV1(fn)                                                       \
  PTX_M1(#fn, "float", "f32", "__nv_" #fn "f")                            \
  PTX_M1(#fn, "double", "f64", "__nv_" #fn)
#define PTX_NV2(fn)                                                       \
  PTX_M2(#fn, "float", "f32", "__nv_" #fn "f")                            \
  PTX_M2(#fn, "double", "f64", "__nv_" #fn)

/* #0 ids, #1 math, #2 the barrier.  %wi as ptx.h says (the fault
** record's address at index 3, GJ_PTX_WI_FAULT). */
#define PTX_BASE                                                          \
  PTX_SREG("local_id", "tid", 0)                                          \
  PTX_SREG("group_id", "ctaid", 0)                                        \
  PTX_SREG("group_size", "ntid", 1)                                       \
  PTX_SREG("num_groups", "nctaid", 1)                                     \
  "define linkonce_odr i64 @gj.global_id(ptr %wi, i32 %d) #0 {\n"         \
  "  %g = call i64 @gj.group_id(ptr %wi, i32 %d)\n"                       \
  "  %n = call i64 @gj.group_size(ptr %wi, i32 %d)\n"                     \
  "  %l = call i64 @gj.local_id(ptr %wi, i32 %d)\n"                       \
  "  %m = mul i64 %g, %n\n  %r = add i64 %m, %l\n  ret i64 %r\n}\n"       \
  "define linkonce_odr i64 @gj.global_size(ptr %wi, i32 %d) #0 {\n"       \
  "  %in = icmp ult i32 %d, 3\n  br i1 %in, label %r, label %o\n"         \
  "r:\n  %i = zext i32 %d to i64\n"                                       \
  "  %p = getelementptr inbounds [3 x i64], ptr %wi, i64 0, i64 %i\n"     \
  "  %v = load i64, ptr %p, align 8\n  ret i64 %v\n"                      \
  "o:\n  ret i64 1\n}\n"                                                  \
  "declare void @llvm.nvvm.barrier0() #2\n"                               \
  "define linkonce_odr void @gj.barrier(ptr %wi) #3 {\n"                  \
  "  call void @llvm.nvvm.barrier0()\n  ret void\n}\n"                    \
  "define linkonce_odr ptr addrspace(1) @gj.fault_record(ptr %wi) #0 {\n" \
  "  %p = getelementptr inbounds i64, ptr %wi, i64 3\n"                   \
  "  %v = load i64, ptr %p, align 8\n"                                    \
  "  %r = inttoptr i64 %v to ptr addrspace(1)\n"                          \
  "  ret ptr addrspace(1) %r\n}\n"                                        \
  PTX_LLVM(sqrt) PTX_LLVM(floor) PTX_LLVM(ceil) PTX_LLVM(fabs)            \
  PTX_LLVM(trunc)

#define PTX_ATTRS                                                         \
  "attributes #0 = { alwaysinline nounwind willreturn readonly }\n"       \
  "attributes #1 = { alwaysinline nounwind willreturn readnone }\n"       \
  "attributes #2 = { convergent nounwind }\n"                             \
  "attributes #3 = { alwaysinline convergent nounwind }\n"

const char gj_ptx_ir_base[] = PTX_BASE PTX_ATTRS;

const char gj_ptx_ir_libdevice[] =
  PTX_BASE
  PTX_NV1(exp) PTX_NV1(log) PTX_NV1(log2) PTX_NV1(log10) PTX_NV1(sin)
  PTX_NV1(cos) PTX_NV1(tan) PTX_NV1(asin) PTX_NV1(acos) PTX_NV1(atan)
  PTX_NV1(sinh) PTX_NV1(cosh) PTX_NV1(tanh)
  PTX_NV2(pow) PTX_NV2(atan2) PTX_NV2(fmod)
  PTX_ATTRS;

/* -- The job ------------------------------------------------------------- */

int gj_ptx_job(gj_job *j, int sm, gj_err *err)
{
  LLVMTargetMachineRef tm;
  LLVMTargetDataRef td;
  char *dl;
  if (sm < 30) sm = 30;
  if (sm > GJ_PTX_MAX_SM) sm = GJ_PTX_MAX_SM;
  snprintf(j->triple, sizeof(j->triple), "nvptx64-nvidia-cuda");
  snprintf(j->cpu, sizeof(j->cpu), "sm_%d", sm);
  snprintf(j->format, sizeof(j->format), "ptx");
  snprintf(j->features, sizeof(j->features), "%s", GJ_PTX_ISA);
  j->as_global = 1;
  j->as_shared = 3;
  j->as_local = 0;
  j->serial_groups = 0;
  j->narrow_ints = 1;   /* 64-bit integer ops are two or more on NVIDIA GPUs */
  j->codegen_opt = LLVMCodeGenLevelAggressive;
  j->reloc = LLVMRelocDefault;
  j->code_model = LLVMCodeModelDefault;
  snprintf(j->passes, sizeof(j->passes), "default<O3>");
  if (gj_target_machine(j, &tm, err) != 0) return -1;
  td = LLVMCreateTargetDataLayout(tm);
  dl = LLVMCopyStringRepOfTargetData(td);
  snprintf(j->datalayout, sizeof(j->datalayout), "%s", dl);
  LLVMDisposeMessage(dl);
  LLVMDisposeTargetData(td);
  LLVMDisposeTargetMachine(tm);
  return 0;
}

void gj_ptx_mark_kernel(LLVMModuleRef m, LLVMValueRef f)
{
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMValueRef v[3] = {
    f, LLVMMDStringInContext(c, "kernel", 6),
    LLVMConstInt(LLVMInt32TypeInContext(c), 1, 0)
  };
  LLVMAddNamedMetadataOperand(m, "nvvm.annotations",
                              LLVMMDNodeInContext(c, v, 3));
}

int gj_ptx_check_math(LLVMModuleRef m, const char *who, const char *why,
                      gj_err *err)
{
  LLVMValueRef f;
  for (f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char *name = LLVMGetValueName2(f, &len);
    if (LLVMIsDeclaration(f) && len > 8 &&
        strncmp(name, "gj.math.", 8) == 0 && LLVMGetFirstUse(f))
      return gj_err_set(err, "%s: %s is not supported on this target: %s",
                        who, name + 3, why);
  }
  return 0;
}

/* -- libdevice ----------------------------------------------------------- */

int gj_ptx_find_libdevice(char *buf, size_t n)
{
  static const char *const envs[2] = { "CUDA_HOME", "CUDA_PATH" };
  static const char rel[] = "/nvvm/libdevice/libdevice.10.bc";
  const char *roots[3], *given = getenv("GPUJIT_LIBDEVICE");
  int i, nroots = 0;
  if (given && given[0]) {
    snprintf(buf, n, "%s", given);
    if (access(buf, R_OK) == 0) return 0;
    snprintf(buf, n, "no libdevice at GPUJIT_LIBDEVICE=%s", given);
    return -1;
  }
  for (i = 0; i < 2; i++) {
    const char *e = getenv(envs[i]);
    if (e && e[0]) roots[nroots++] = e;
  }
  roots[nroots++] = "/usr/local/cuda";
  for (i = 0; i < nroots; i++) {
    snprintf(buf, n, "%s%s", roots[i], rel);
    if (access(buf, R_OK) == 0) return 0;
  }
  snprintf(buf, n, "no %s under $CUDA_HOME, $CUDA_PATH or /usr/local/cuda "
           "(or GPUJIT_LIBDEVICE)", rel + 1);
  return -1;
}

