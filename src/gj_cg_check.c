/*
** Codegen of bounds checks (gpu.kernel's boundscheck).  Each array access
** tests its index against the array's length; where the test fails the
** work item claims the launch's fault record (the first fault wins: a
** cmpxchg of the record's site from 0), fills it and skips the access.
** The record's layout and how a backend provides it: src/gj_backend.h.
** Nothing here emits anything when the kernel is compiled without checks.
*/
#include <stdio.h>

#include "gj_cg_int.h"
#include "gj_fault.h"

/* What the message calls the array, and its first index. */
static void describe(const gj_cg *g, gj_ty ta, char *what, size_t n, int *base)
{
  const char *name;
  int arg;
  *base = 0;
  if (ta.space == GJ_SPACE_SHARED) {
    snprintf(what, n, "a gpu.shared array");
    return;
  }
  if (ta.space == GJ_SPACE_LOCAL) {
    snprintf(what, n, "a gpu.local_array");
    return;
  }
  arg = GJ_ARR_TAG_ARG(ta.aux);
  *base = GJ_ARR_TAG_BASE(ta.aux);
  name = arg >= 0 && g->opts->argnames ? g->opts->argnames[arg] : NULL;
  if (ta.shp) {   /* a level of a multi-dimensional array: which one */
    int o = snprintf(what, n, "dimension %d of ", g->cs->shapes[ta.shp - 1].level + 1);
    if (o > 0 && (size_t)o < n) {
      what += o;
      n -= (size_t)o;
    }
  }
  if (arg < 0) snprintf(what, n, "an array argument");  /* one of several */
  else if (name) snprintf(what, n, "argument %d '%s'", arg + 1, name);
  else snprintf(what, n, "argument %d", arg + 1);
}

static LLVMValueRef field(gj_cg *g, LLVMValueRef rec, unsigned off)
{
  LLVMValueRef idx = LLVMConstInt(g->lt[LT_I64], off, 0);
  return LLVMBuildInBoundsGEP2(g->B, g->lt[LT_I8], rec, &idx, 1, "");
}

/* The failing path: claim the record and fill it; returns the path's last
** block, which goes on at gd->cont. */
static LLVMBasicBlockRef record(gj_cg *g, int site, int line, int arg,
                                LLVMValueRef idx, LLVMValueRef len,
                                const gj_cg_guard *gd)
{
  LLVMTypeRef i32 = g->lt[LT_I32];
  LLVMValueRef rec, x;
  LLVMBasicBlockRef fill = LLVMAppendBasicBlockInContext(g->C, g->llfn, "fault.fill");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->C, g->llfn, "fault.done");
  rec = gj_cg_call(g, "gj.fault_record", g->ptr_global, &g->ptr_wi, 1, &g->wi);
  x = LLVMBuildAtomicCmpXchg(g->B, rec, LLVMConstInt(i32, 0, 0),
                             LLVMConstInt(i32, (unsigned)site + 1, 0),
                             LLVMAtomicOrderingMonotonic,
                             LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildCondBr(g->B, LLVMBuildExtractValue(g->B, x, 1, ""), fill, done);
  LLVMPositionBuilderAtEnd(g->B, fill);
  LLVMBuildStore(g->B, LLVMConstInt(i32, (unsigned)line, 0), field(g, rec, 4));
  LLVMBuildStore(g->B, LLVMConstInt(i32, (unsigned)arg, 0), field(g, rec, 8));
  LLVMBuildStore(g->B, idx, field(g, rec, 16));
  LLVMBuildStore(g->B, len, field(g, rec, 24));
  LLVMBuildBr(g->B, done);
  LLVMPositionBuilderAtEnd(g->B, done);
  LLVMBuildBr(g->B, gd->cont);
  return done;
}

/* The failing branch is cold: keep the checked loop's layout tight. */
static void unlikely(gj_cg *g, LLVMValueRef br) { gj_cg_branch_weights(g, br, 2000, 1); }

int gj_cg_check_begin(gj_cg *g, int i, LLVMValueRef arr, gj_ty ta,
                      LLVMValueRef idx, gj_ty ti, gj_cg_guard *gd)
{
  const gj_proto *p = g->fn->proto;
  LLVMValueRef len, ok;
  LLVMBasicBlockRef okb, fail;
  char what[96];
  int base, site, line = p->ins[i].line, arg;
  gd->fail = gd->cont = NULL;
  if (!g->opts->sites) return 0;
  if (ta.space == GJ_SPACE_GLOBAL && ta.aux == 0)
    return gj_typer_error(g->cs, g->fn, i, "boundscheck: this array may be a Lua table "
                          "(indexed from 1) or an array indexed from 0, and the check "
                          "needs to know which: pass the same kind of array to the "
                          "arguments that flow here");
  describe(g, ta, what, sizeof(what), &base);
  site = gj_sites_add(g->opts->sites, p->chunk, line, what, base, g->cs->err);
  if (site < 0) return -1;
  arg = ta.space == GJ_SPACE_GLOBAL ? GJ_ARR_TAG_ARG(ta.aux) + 1 : 0;
  idx = gj_cg_to_scalar(g, idx, ti, GJ_I64);
  len = LLVMBuildExtractValue(g->B, arr, 1, "len");
  /* unsigned: a negative index fails too; a length of -1 (an FFI pointer,
  ** length unknown) lets every index but base - 1 through */
  {
    LLVMValueRef off = LLVMBuildSub(g->B, idx, LLVMConstInt(g->lt[LT_I64],
                                    (unsigned)base, 0), "");
    ok = LLVMBuildICmp(g->B, LLVMIntULT, off, len, "inbounds");
  }
  okb = LLVMAppendBasicBlockInContext(g->C, g->llfn, "inbounds");
  fail = LLVMAppendBasicBlockInContext(g->C, g->llfn, "fault");
  gd->cont = LLVMAppendBasicBlockInContext(g->C, g->llfn, "checked");
  unlikely(g, LLVMBuildCondBr(g->B, ok, okb, fail));
  LLVMPositionBuilderAtEnd(g->B, fail);
  gd->fail = record(g, site, line, arg, idx, len, gd);
  LLVMPositionBuilderAtEnd(g->B, okb);
  return 0;
}

LLVMValueRef gj_cg_check_end(gj_cg *g, const gj_cg_guard *gd, LLVMValueRef v)
{
  LLVMValueRef phi, in[2];
  LLVMBasicBlockRef from[2];
  if (!gd->cont) return v;
  from[0] = LLVMGetInsertBlock(g->B);
  LLVMBuildBr(g->B, gd->cont);
  LLVMPositionBuilderAtEnd(g->B, gd->cont);
  if (!v) return NULL;
  phi = LLVMBuildPhi(g->B, LLVMTypeOf(v), "");
  in[0] = v;
  in[1] = LLVMConstNull(LLVMTypeOf(v));   /* a skipped load gives 0 */
  from[1] = gd->fail;
  LLVMAddIncoming(phi, in, from, 2);
  return phi;
}
