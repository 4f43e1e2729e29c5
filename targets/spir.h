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
** calls through the table whose address is the last slot of its argument
** block (targets/spir.c).
** f64 first, then the same functions for f32 (the `f`-suffixed names). */
enum {
  LIBM_TAN, LIBM_ASIN, LIBM_ACOS, LIBM_ATAN, LIBM_SINH, LIBM_COSH,
  LIBM_TANH, LIBM_ATAN2, LIBM_POW, LIBM__N1
};
#define LIBM__N (2 * LIBM__N1)

/* An entry point's arguments: the buffer (a global pointer) of each array
** parameter, in order; then one by-value block of 8-byte slots (below);
** then, for a bounds-checked kernel (sig.faults), the fault record's
** buffer (a global int*).  Everything that is not a buffer goes in the
** block because PoCL copies each argument of each launch into an
** allocation of its own: a kernel of one array and one scalar took 7
** arguments, and its enqueue cost 1.5x a 2-argument kernel's.  A device
** that runs kernels in this process (gj_job.block_by_address) takes the
** block's host address (a ulong) instead of the block: PoCL allocates a
** by-value argument over 16 bytes with posix_memalign, which cost 0.2 us
** per enqueue; the runtime keeps the block until the launch has finished.
** The entry keeps the global size in %wi[0..2] and the record's address in
** %wi[OCL_WI_FAULT]. */
enum { OCL_HIDDEN_GLOBAL = 3, OCL_WI_FAULT = 3 };

/* The block's slots, 8 bytes each; a narrower value sits at its slot's
** start (a bool as one byte; host and device share their byte order,
** which every device the runtime takes does): for each parameter in order,
** an array's byte offset into its buffer (negative for a Lua table: its
** buffer minus one element) and its length, a scalar's value; then the
** launch's real global size (OCL_HIDDEN_GLOBAL slots: the launch rounds
** the global size up to a multiple of the group, and the entry returns at
** once in the work items beyond it); last the address of the host libm
** table (host_libm devices; 0 elsewhere, where no kernel reads it). */
#define OCL_BLOCK_MAX (2 * GJ_MAXPARAMS + OCL_HIDDEN_GLOBAL + 1)
static inline unsigned ocl_block_slots(const gj_sig *sig)
{
  unsigned n = OCL_HIDDEN_GLOBAL + 1;
  int i;
  for (i = 0; i < sig->nparams; i++) n += sig->params[i].is_array ? 2u : 1u;
  return n;
}

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
