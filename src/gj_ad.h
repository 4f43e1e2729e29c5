/*
** Derivatives of kernels (docs/autodiff.md): a built-in transformation of
** the target-neutral LLVM IR of @gj_body, run by the pipeline right after
** codegen (stage 3), before the plugins' ir hooks, the disk cache's key
** and the target's wrap, as Enzyme differentiates before the target.
**
** Contract:
** - The compile's options name the mode (GJ_AD_FORWARD, GJ_AD_REVERSE) and, over the
**   whole argument list the launch passes (o->types), which entries are
**   shadows: shadow[f] is '1' when argument f is the shadow (tangent) of
**   argument f-1, a primal.  The pipeline typed and generated the kernel
**   from the primal arguments alone (the codegen option `ad` set: every
**   instruction carries !gj.line, math.floor/ceil are gj.math calls).
** - gj_ad_transform replaces @gj_body by one whose parameters follow the
**   whole list: each shadow right after its primal, with the primal's LLVM
**   types (an array: pointer and length), plugin buffers last; *body is
**   the new function and sig is rewritten to match (layout included), so
**   that the target wraps and the launcher fills it like any kernel.
** - Forward mode: for each float value v the new body computes its
**   tangent dv beside it; a load of a[i] from an array with a shadow loads
**   da[i] too, a store a[i] = v stores dv into da[i].  Integers,
**   comparisons and booleans carry no tangent; an array or scalar without
**   a shadow has tangent 0.
** - Reverse mode (GJ_AD_REVERSE): the shadows are
**   adjoints, added into.  The body runs the kernel, then the adjoints
**   backwards (gj_ad_rev.c): a load of x[i] adds its adjoint into dx[i]
**   atomically, a store y[i] = v takes dy[i] as v's adjoint and zeroes it;
**   a float scalar's shadow is an array (pointer and length, in address
**   space as_global) into whose element 0 its adjoint is added.  shadow[f]
**   '2' marks the tape, an array of bytes (uint8_t[]), the last argument
**   before the plugins' buffers: the stacks of values and branches that
**   the reverse of loops needs, per work item; a stack that runs out
**   claims the fault record with a site added to sites (sig->faults is
**   then 1) and the launch fails.
** - Never silently wrong: what it has no exact rule for (an intrinsic
**   without a derivative, a float in local or shared memory, the value an
**   atomic_add on an array with a shadow returns, barriers, bit-level
**   float operations, a device function that was not inlined; in reverse
**   mode a read of an array after a write to it) fails with
**   "SOURCE:LINE: derivative: <construct> ... (in kernel NAME)"; nothing
**   is compiled.
** Returns 0, or -1 with err set.
*/
#ifndef GJ_AD_H
#define GJ_AD_H

#include <llvm-c/Core.h>

#include "gj_err.h"
#include "gj_fault.h"
#include "gj_type.h"

enum { GJ_AD_NONE = 0, GJ_AD_FORWARD = 1, GJ_AD_REVERSE = 2 };

/* "forward" / "reverse" -> GJ_AD_*; anything else -1. */
int gj_ad_mode(const char *name);

int gj_ad_transform(LLVMModuleRef m, LLVMValueRef *body, gj_sig *sig,
                    int mode, const char *shadow, int nfull,
                    unsigned as_global, gj_sites *sites, const char *kname,
                    gj_err *err);

/* The derivatives a kernel takes inside itself (gpu.derivative,
** gpu.gradient; src/gj_cg_deriv.c): each function of m marked
** "gj-derivative" = "P" (a wrapper that calls a device function f at its
** own parameters and returns f's first result) gets the forward-mode
** derivative of that result with respect to its parameter P as its body:
** f inlined, its tangents computed with tangent 1 on P (0 on the others,
** and on whatever f reads from arrays), the tangent returned.  The wrapper
** is then an ordinary alwaysinline device function.  body (@gj_body) is
** kept.  What has no exact rule is refused as gj_ad_transform refuses it
** (needs the codegen option ad).  0, or -1 with err set. */
int gj_ad_inner(LLVMModuleRef m, LLVMValueRef body, const char *kname,
                gj_err *err);

#endif
