/*
** Codegen: LLVM IR from typed bytecode.
**
** The module holds `internal void @gj_body(ptr %wi, <params>)` (see
** src/gj_backend.h for the parameter convention), one internal function
** per device-function specialization that is called, and declarations of
** the target-neutral intrinsics (gj.global_id, gj.math.*) that the job's
** intrinsics_ir defines.  Slots live in allocas, one per (slot, LLVM type);
** mem2reg/SROA turn them into SSA.
*/
#ifndef GJ_CG_H
#define GJ_CG_H

#include <llvm-c/Core.h>

#include "gj_backend.h"
#include "gj_typer.h"

struct gj_sites;

typedef struct gj_cgopts {
  int fastmath;
  /* boundscheck: check every array index (gj_cg_check.c); each check is
  ** appended to sites.  NULL: no checks, and the IR is as without them. */
  struct gj_sites *sites;
  /* timeout: cancellation checks at loop back-edges and after device
  ** function calls (gj_cg_cancel.c).  0: none, and the IR is as without. */
  int cancel;
  const char *const *argnames;   /* kernel parameter names (entries may be
                                 ** NULL), for the sites' messages */
  /* Plugin buffers: array parameters of @gj_body after the kernel's own,
  ** named extra_names[i] (and ".len"), also appended to the signature. */
  int nextra;
  const char *const *extra_names;
  const gj_scalar *extra_elems;
  /* Tag each array load and store with !gj.loc (gpujit_plugin.h). */
  int locs;
  /* A derivative's compile (src/gj_ad.h): tag every instruction that a
  ** bytecode instruction emits into its block with !gj.line !{i32 line,
  ** !"source"} (for the derivative's messages), and emit math.floor and
  ** math.ceil as gj.math calls rather than bit-level arithmetic, so that
  ** each has a derivative rule. */
  int ad;
  /* print(...) calls: each is appended to prints (gj_cg_print.c). */
  struct gj_psites *prints;
  /* assert(...) and error(...) calls: each is appended to asserts
  ** (gj_cg_assert.c). */
  struct gj_asites *asserts;
} gj_cgopts;

/* math.floor (ceil: math.ceil) of float or double x as LuaJIT computes it
** (the sign of a zero result included, where C's ceil differs), built at B
** in module M: for gj_ad_inner, which turns the gj.math.floor/ceil calls of
** a compile with the option ad back into it. */
LLVMValueRef gj_cg_floor_at(LLVMModuleRef M, LLVMBuilderRef B, LLVMValueRef x,
                            int ceil);

/* Emit the kernel fn (typed) into a new module in C.  Fills sig (params,
** read/written flags, layout) and *body (@gj_body). */
int gj_cg_module(gj_cs *cs, gj_fn *kernel, const gj_job *job,
                 const gj_cgopts *opts, LLVMContextRef C, LLVMModuleRef *out,
                 LLVMValueRef *body, gj_sig *sig);

#endif
