/*
** Codegen of assert(v [, msg]) and error(msg) in kernels.  Where the call
** fails (assert: v is nil or false; error: always) the work item writes
** ~(item << 16 | site) into the fault record's `fail` word with an atomic
** unsigned max (item: its linear global id; site: the call's index in
** opts->asserts, which says file:line and the message), so the smallest
** failing work item is what the word holds after the launch, whatever
** order the items ran in, and then returns from the function (the
** kernel's body: the work item ends; a device function: an undefined
** value, and its caller returns at the check after the call).  The other
** work items go on.  Except on OpenCL (SPIR, SPIR-V) in a function that
** reaches gpu.barrier(): a work item may not leave its group's barriers
** there (PoCL then runs the whole group down one arm of the branch), so it
** records the failure and goes on.  The host raises the error (gj_fault.c).  The record's
** layout and how a backend provides it: src/gj_backend.h.  A kernel
** without assert or error has no site, and its IR is as without this file.
*/
#include <stdio.h>
#include <string.h>

#include "gj_cg_int.h"
#include "gj_fault.h"
#include "gj_intr.h"

/* The failing branch: taken once in 100000, as weights go. */
static void cold(gj_cg *g, LLVMValueRef br) { gj_cg_branch_weights(g, br, 1, 100000); }

static LLVMValueRef fail_word(gj_cg *g)
{
  LLVMValueRef rec, idx;
  rec = gj_cg_call(g, "gj.fault_record", g->ptr_global, &g->ptr_wi, 1, &g->wi);
  idx = LLVMConstInt(g->lt[LT_I64], offsetof(gj_fault, fail), 0);
  return LLVMBuildInBoundsGEP2(g->B, g->lt[LT_I8], rec, &idx, 1, "fail");
}

/* Return from the function being emitted (the builder is left after it). */
static void leave(gj_cg *g)
{
  LLVMTypeRef rt = LLVMGetReturnType(LLVMGlobalGetValueType(g->llfn));
  if (LLVMGetTypeKind(rt) == LLVMVoidTypeKind) LLVMBuildRetVoid(g->B);
  else LLVMBuildRet(g->B, LLVMGetUndef(rt));
}

/* Can a work item return early from the function being emitted? */
static int may_leave(const gj_cg *g)
{
  return !(g->fn->uses_barrier && strncmp(g->job->format, "spir", 4) == 0);
}

/* At the builder's position: record site's failure, and return where the
** item may (else go on at cont). */
static void fail_here(gj_cg *g, int site, LLVMBasicBlockRef cont)
{
  LLVMTypeRef i64 = g->lt[LT_I64];
  LLVMValueRef w = LLVMBuildShl(g->B, gj_cg_linear_id(g), LLVMConstInt(i64, 16, 0), "");
  w = LLVMBuildOr(g->B, w, LLVMConstInt(i64, (unsigned)site, 0), "");
  w = LLVMBuildNot(g->B, w, "");
  LLVMBuildAtomicRMW(g->B, LLVMAtomicRMWBinOpUMax, fail_word(g), w,
                     LLVMAtomicOrderingMonotonic, 0);
  if (may_leave(g)) leave(g);
  else LLVMBuildBr(g->B, cont);
}

int gj_cg_assert(gj_cg *g, int i, int intr, int nargs, LLVMValueRef *args,
                 const gj_ty *at, LLVMValueRef *res)
{
  const gj_proto *p = g->fn->proto;
  char text[1200];
  const char *msg;
  int truth = 1, site;
  LLVMBasicBlockRef failb, cont;
  if (!g->opts->asserts)
    return gj_err_set(g->cs->err, "internal error: assert without a site table");
  if (intr == GJ_I_ASSERT) {
    res[0] = args[0];
    truth = gj_ty_truth(at[0]);
    if (truth == 1) return 0;   /* never fails: no code, no site */
    msg = nargs > 1 ? (const char *)(uintptr_t)at[1].u.origin : NULL;
    if (msg) snprintf(text, sizeof(text), "assertion failed: %s", msg);
    else snprintf(text, sizeof(text), "assertion failed!");
  } else {
    truth = 0;
    snprintf(text, sizeof(text), "%s", (const char *)(uintptr_t)at[0].u.origin);
  }
  site = gj_asites_add(g->opts->asserts, p->chunk, p->ins[i].line, text, g->cs->err);
  if (site < 0) return -1;
  failb = LLVMAppendBasicBlockInContext(g->C, g->llfn, "assert.fail");
  cont = LLVMAppendBasicBlockInContext(g->C, g->llfn, truth ? "assert.ok" : "after.error");
  if (truth == 0) LLVMBuildBr(g->B, failb);   /* cont: no predecessor */
  else cold(g, LLVMBuildCondBr(g->B, args[0], cont, failb));
  LLVMPositionBuilderAtEnd(g->B, failb);
  fail_here(g, site, cont);
  LLVMPositionBuilderAtEnd(g->B, cont);
  return 0;
}

void gj_cg_assert_after_call(gj_cg *g)
{
  LLVMTypeRef i64 = g->lt[LT_I64];
  LLVMValueRef w, first, stop;
  LLVMBasicBlockRef out, next;
  if (!g->cs->fails || !may_leave(g)) return;
  w = LLVMBuildLoad2(g->B, i64, fail_word(g), "fail");
  LLVMSetOrdering(w, LLVMAtomicOrderingMonotonic);
  LLVMSetAlignment(w, 8);
  /* the smallest failed work item (none: 2^48 - 1, above every item) */
  first = LLVMBuildLShr(g->B, LLVMBuildNot(g->B, w, ""), LLVMConstInt(i64, 16, 0), "");
  stop = LLVMBuildICmp(g->B, LLVMIntULE, first, gj_cg_linear_id(g), "");
  out = LLVMAppendBasicBlockInContext(g->C, g->llfn, "assert.stop");
  next = LLVMAppendBasicBlockInContext(g->C, g->llfn, "assert.go");
  cold(g, LLVMBuildCondBr(g->B, stop, out, next));
  LLVMPositionBuilderAtEnd(g->B, out);
  leave(g);
  LLVMPositionBuilderAtEnd(g->B, next);
}
