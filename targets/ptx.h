/*
** NVPTX code generation that every backend emitting PTX shares (cuda, and
** opencl on NVIDIA's platform): the compile job's target fields, the
** intrinsics IR (ids from the PTX special registers, barrier0, math), the
** kernel annotation and libdevice.  PTX text is gj_target_emit's assembly.
*/
#ifndef GJ_PTX_H
#define GJ_PTX_H

#include <stddef.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "gj_backend.h"

/* The newest sm_XX and PTX ISA that the linked LLVM (15) knows; a newer
** device runs the PTX through the driver's JIT. */
#define GJ_PTX_MAX_SM 86
#define GJ_PTX_ISA "+ptx75"

/* %wi, the work-item state of a PTX entry point: an array of i64 that the
** entry fills, the three real global sizes, then for a bounds-checked
** kernel (sig->faults) the fault record's device address at index
** GJ_PTX_WI_FAULT (the intrinsics IR below reads it there). */
enum { GJ_PTX_WI_FAULT = 3 };

/* Ids (tid/ntid/ctaid/nctaid), gj.global_size and gj.fault_record read
** from %wi, gj.barrier as barrier0, and the math that needs no library
** (sqrt floor ceil fabs trunc).  Other gj.math.* stay declared:
** gj_ptx_check_math reports them. */
extern const char gj_ptx_ir_base[];
/* The same with every gj.math.* function, the rest as calls of libdevice's
** __nv_* functions: the job then lists libdevice among its libraries, with
** prefix "__nv_", and the core links it (gj_job.h). */
extern const char gj_ptx_ir_libdevice[];

/* Fill j's target fields for compute capability sm (e.g. 90; capped at
** GJ_PTX_MAX_SM): triple, cpu, features, data layout, address spaces
** (global 1, shared 3, allocas 0: NVPTX moves them to .local itself), O3. */
int gj_ptx_job(gj_job *j, int sm, gj_err *err);

/* Mark f as a kernel entry (nvvm.annotations). */
void gj_ptx_mark_kernel(LLVMModuleRef m, LLVMValueRef f);

/* A gj.math.* function that m calls and nothing defines: an error naming
** it and `why` (what would make it available). */
int gj_ptx_check_math(LLVMModuleRef m, const char *who, const char *why,
                      gj_err *err);

/* -- The cuda runtime's target (ptx_cuda.c) ------------------------------ */

/* Kernel arguments besides the user's: the real global size (3 x i64),
** then for a bounds-checked kernel the fault record's device address (the
** launch passes them in this order, runtimes/cuda_run.c).  In %wi they are
** in the same order. */
enum { CU_HIDDEN_GLOBAL = 3 };
_Static_assert((int)GJ_PTX_WI_FAULT == (int)CU_HIDDEN_GLOBAL,
               "the fault record's slot in %wi follows the global sizes");

/* The target's state, which the cuda runtime keeps and hands over with the
** choice (gj_backend.target): the libdevice found when the runtime opened. */
typedef struct gj_ptx_libdevice {
  int found;
  char path[512];          /* its path, or why there is none */
  char hash[65];           /* BLAKE3 of its bytes (the cache key's) */
} gj_ptx_libdevice;

/* The PTX target for cuda; its state is a gj_ptx_libdevice. */
extern const gj_codegen gj_codegen_ptx_cuda;

/* The libdevice bitcode of the CUDA toolkit: $GPUJIT_LIBDEVICE (its path;
** when set, nothing else is searched), else nvvm/libdevice/libdevice.10.bc
** under $CUDA_HOME, $CUDA_PATH, then /usr/local/cuda.  Its path into buf,
** 0; -1 when there is none (buf then says where it looked). */
int gj_ptx_find_libdevice(char *buf, size_t n);

#endif
