/*
** The targets of the opencl runtime (SPIR 1.2 bitcode, SPIR-V, PTX on
** NVIDIA's OpenCL) and their contract with it: the entry points' names and
** hidden parameters, which the runtime's launch fills (runtimes/opencl_run.c),
** the host libm table a host_libm device's kernels call through, and the
** SPIR-V translator, the SPIR-V target's state, which the runtime keeps and
** also runs to load SPIR-V on a device that takes only SPIR.  The design is
** described at the top of runtimes/opencl.c and targets/spir.c.
*/
#ifndef GJ_SPIR_H
#define GJ_SPIR_H

#include <stddef.h>

#include <llvm-c/Core.h>

#include "gj_backend.h"

/* Indices of the host libm functions a kernel on an in-process device
** calls through the table at the end of its argument list (targets/spir.c).
** f64 first, then the same functions for f32 (the `f`-suffixed names). */
enum {
  LIBM_TAN, LIBM_ASIN, LIBM_ACOS, LIBM_ATAN, LIBM_SINH, LIBM_COSH,
  LIBM_TANH, LIBM_ATAN2, LIBM_POW, LIBM__N1
};
#define LIBM__N (2 * LIBM__N1)

/* Kernel arguments a program has besides the user's: the real global size
** (3 x i64), then, for a bounds-checked kernel (sig.faults), the fault
** record's buffer (a global int*), then, on host_libm devices, the address
** of the libm table.  The entry keeps the global size in %wi[0..2] and the
** record's address in %wi[OCL_WI_FAULT]. */
enum { OCL_HIDDEN_GLOBAL = 3, OCL_WI_FAULT = 3 };

/* The program's entry points: OCL_ENTRY tests each work item against the
** real global size; OCL_ENTRY_EXACT (kernels without barriers) does not,
** for launches whose global size is a multiple of the group. */
#define OCL_ENTRY "gj_kernel"
#define OCL_ENTRY_EXACT "gj_kernel_exact"

/* -- spir.c ----------------------------------------------------------------- */

extern const char ocl_spir_intrinsics_ir[];   /* devices with their own libm */
extern const char ocl_spir_hostlibm_ir[];     /* host_libm devices */

/* The kernel entry point around @gj_body, for every target of the runtime
** (SPIR, SPIR-V: the SPIR module translated, PTX on NVIDIA's platform);
** keeps no state (ts unused). */
int ocl_wrap(void *ts, const gj_job *job, LLVMModuleRef m, LLVMValueRef body,
             const gj_sig *sig, gj_err *err);

/* The runtime's targets, chosen per job (runtimes/opencl.c, ocl_target):
** SPIR 1.2 bitcode and PTX (no state), SPIR-V (spirv.c; its state is an
** ocl_spirv_tool). */
extern const gj_codegen gj_codegen_spir;
extern const gj_codegen gj_codegen_ocl_ptx;
extern const gj_codegen gj_codegen_spirv;

/* -- spir_loops.c ----------------------------------------------------------- */

/* The SPIR name of OpenCL C's barrier(flags), which gj.barrier calls. */
#define OCL_SPIR_BARRIER "_Z7barrierj"

/* In a SPIR module with barriers, marks every loop llvm.loop.unroll.disable,
** as clang marks the loops of the OpenCL C it builds for PoCL (why:
** targets/spir_loops.c). */
int ocl_loops_no_unroll(LLVMModuleRef m, gj_err *err);

/* -- spirv.c ---------------------------------------------------------------- */

/* The Khronos LLVM/SPIR-V translator, found on first use
** ($GPUJIT_LLVM_SPIRV, else llvm-spirv-15 on PATH, else Debian's path).
** Zeroed by its owner (the runtime, once per state) before first use. */
typedef struct ocl_spirv_tool {
  int state;               /* 0 not looked for yet, 1 found, -1 missing */
  char path[512];
  char id[24];             /* the start of its BLAKE3, for the cache key */
  char why[640];           /* state -1: why */
} ocl_spirv_tool;

/* Find the translator (once); 0, or -1 with err saying why it is missing. */
int ocl_spirv_find(ocl_spirv_tool *t, gj_err *err);

/* SPIR-V back into SPIR bitcode (*bc malloc'ed), for a device that takes
** only SPIR (GPUJIT_OPENCL_FORMAT=spirv on PoCL: how the SPIR-V path is
** tested). */
int ocl_spirv_to_spir(ocl_spirv_tool *t, const char *spv, size_t len,
                      char **bc, size_t *bclen, gj_err *err);

#endif
