/*
** LLVM helpers shared by the shipped plugins (plugins/count,
** plugins/nancheck); compiled into each plugin's shared object.
** Not part of the plugin API (src/gpujit_plugin.h).
*/
#ifndef GJ_PLUGIN_IR_H
#define GJ_PLUGIN_IR_H

#include <stdint.h>

#include "gpujit_plugin.h"

/* Inline every device function into @gj_body (they are alwaysinline), so
** that @gj_body alone is one work item.  @gj_body keeps its own attributes
** and is never dropped.  Returns @gj_body, with *buf its parameter for the
** plugin's first buffer, or NULL with a message in err. */
LLVMValueRef gj_pir_inline(LLVMModuleRef m, const gpujit_kernel_desc *k,
                           LLVMValueRef *buf, char *err, size_t errlen);

/* The 1-based kernel argument whose array `ptr` points into (a `ptr
** addrspace(G)` parameter of @gj_body among the kernel's own, found through
** GEPs, {ptr, i64} aggregates, phis, selects and the stack or frame slots
** codegen keeps values in), or 0 when ptr is not into a kernel array
** argument: shared, local and private memory, a plugin's buffer, or an
** origin the walk does not follow.  This is what "global memory" means for
** both plugins, the same on every backend. */
int gj_pir_global_arg(LLVMValueRef body, const gpujit_kernel_desc *k,
                      LLVMValueRef ptr);

/* Emit at b's position the work item's linear id, gid0 + gs0 * (gid1 + gs1
** * gid2), with @gj.global_id and @gj.global_size (declared when missing). */
LLVMValueRef gj_pir_linear_id(LLVMBuilderRef b, LLVMModuleRef m,
                              LLVMValueRef body);

#endif
