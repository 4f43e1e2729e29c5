/*
** Codegen of cancellation checks (gpu.kernel's timeout).  Where a work item
** could run for ever, at each loop back-edge, and after each call of a
** device function (whose own loops may have stopped it), it loads the
** launch's cancel word (the fault record's `cancel`, src/gj_backend.h)
** with a monotonic atomic load, so that the load is not hoisted out of the
** loop, and returns when it is set: the kernel's body returns void, a
** device function an undefined value that its caller never uses (it
** returns too, at the check after the call).  In a resumable function
** (barriers on cpu) the resume point is 0 wherever code runs, so the
** return reads as "this work item has finished".
** The host decides and reports (src/gj_watch.c); the device only stops.
** Nothing here emits anything when the kernel is compiled without timeout.
*/
#include "gj_cg_int.h"

/* Offset of gj_fault.cancel: part of the convention. */
_Static_assert(offsetof(gj_fault, cancel) == 12, "gj_fault.cancel at byte 12");

/* The cancelled branch: taken once in 100000, as weights go. */
static void cold(gj_cg *g, LLVMValueRef br) { gj_cg_branch_weights(g, br, 1, 100000); }

/* At the builder's position: if cancelled, return; else go to next. */
static void check(gj_cg *g, LLVMBasicBlockRef next)
{
  LLVMTypeRef i32 = g->lt[LT_I32];
  LLVMTypeRef rt = LLVMGetReturnType(LLVMGlobalGetValueType(g->llfn));
  LLVMValueRef rec, idx, p, v;
  LLVMBasicBlockRef stop = LLVMAppendBasicBlockInContext(g->C, g->llfn, "cancelled");
  rec = gj_cg_call(g, "gj.fault_record", g->ptr_global, &g->ptr_wi, 1, &g->wi);
  idx = LLVMConstInt(g->lt[LT_I64], offsetof(gj_fault, cancel), 0);
  p = LLVMBuildInBoundsGEP2(g->B, g->lt[LT_I8], rec, &idx, 1, "");
  v = LLVMBuildLoad2(g->B, i32, p, "cancel");
  LLVMSetOrdering(v, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(v, 4);
  cold(g, LLVMBuildCondBr(g->B, LLVMBuildICmp(g->B, LLVMIntNE, v,
                                              LLVMConstNull(i32), ""),
                          stop, next));
  LLVMPositionBuilderAtEnd(g->B, stop);
  if (LLVMGetTypeKind(rt) == LLVMVoidTypeKind) LLVMBuildRetVoid(g->B);
  else LLVMBuildRet(g->B, LLVMGetUndef(rt));
}

LLVMBasicBlockRef gj_cg_cancel_edge(gj_cg *g, LLVMBasicBlockRef target)
{
  LLVMBasicBlockRef cur = LLVMGetInsertBlock(g->B), cb;
  if (!g->opts->cancel) return NULL;
  cb = LLVMAppendBasicBlockInContext(g->C, g->llfn, "cancel.check");
  LLVMPositionBuilderAtEnd(g->B, cb);
  check(g, target);
  LLVMPositionBuilderAtEnd(g->B, cur);
  return cb;
}

void gj_cg_cancel_here(gj_cg *g)
{
  LLVMBasicBlockRef next;
  if (!g->opts->cancel) return;
  next = LLVMAppendBasicBlockInContext(g->C, g->llfn, "cancel.ok");
  check(g, next);
  LLVMPositionBuilderAtEnd(g->B, next);
}
