/*
** Codegen of constant tables (docs/typing.md, "Constant tables"): t[idx]
** with t a known table of numbers (gj_typer_const.c read them) is a load
** from a read-only global of the module, one per table, in the address
** space of array arguments: int32_t elements when the numbers are whole
** (the typer's lnum), else double.  Element 0 is 0 and stands for every
** index outside 1..n, so that no index reads outside the global.
*/
#include <stdio.h>
#include <stdlib.h>

#include "gj_cg_int.h"

/* The global of table kv, made on first use in this module. */
static LLVMValueRef table_global(gj_cg *g, const gj_kv *k, int kv, LLVMTypeRef et)
{
  char name[40];
  LLVMValueRef gv, *el;
  LLVMTypeRef at = LLVMArrayType(et, (unsigned)k->cn + 1);
  int j;
  snprintf(name, sizeof(name), "gj.const.%d", kv);
  gv = LLVMGetNamedGlobal(g->M, name);
  if (gv) return gv;
  el = malloc(sizeof(LLVMValueRef) * ((size_t)k->cn + 1));
  if (!el) return NULL;
  for (j = 0; j <= k->cn; j++) {
    double v = j ? k->cdata[j - 1] : 0.0;
    el[j] = k->cwhole ? LLVMConstInt(et, (unsigned long long)(long long)v, 1)
                      : LLVMConstReal(et, v);
  }
  gv = LLVMAddGlobalInAddressSpace(g->M, at, name, g->job->as_global);
  LLVMSetInitializer(gv, LLVMConstArray(et, el, (unsigned)k->cn + 1));
  free(el);
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMInternalLinkage);
  LLVMSetAlignment(gv, 16);
  return gv;
}

int gj_cg_const_table(gj_cg *g, int kv, int c, gj_ty ti, int a, gj_ty out)
{
  const gj_kv *k = &g->cs->kv[kv];
  LLVMTypeRef et = k->cwhole ? g->lt[LT_I32] : g->lt[LT_F64];
  LLVMValueRef gv, idx, in, p, v;
  gj_ty elem = gj_ty_num(k->cwhole ? GJ_I32 : GJ_F64);
  if (ti.k == GJ_T_WINT && ti.hasc) return 0;   /* a field: the typer's constant */
  gv = table_global(g, k, kv, et);
  if (!gv) return gj_err_set(g->cs->err, "out of memory");
  /* a float index truncated as an array's; outside 1..n: element 0 */
  idx = LLVMBuildFreeze(g->B, gj_cg_to_scalar(g, gj_cg_load(g, c, ti), ti, GJ_I64), "");
  if (k->base0)   /* an FFI array's: 0-based, its element 0 at 1 */
    idx = LLVMBuildAdd(g->B, idx, LLVMConstInt(g->lt[LT_I64], 1, 0), "");
  in = LLVMBuildICmp(g->B, LLVMIntULE, idx,
                     LLVMConstInt(g->lt[LT_I64], (unsigned long long)k->cn, 0), "");
  idx = LLVMBuildSelect(g->B, in, idx, LLVMConstInt(g->lt[LT_I64], 0, 0), "");
  p = LLVMBuildInBoundsGEP2(g->B, et, gv, &idx, 1, "");
  v = LLVMBuildLoad2(g->B, et, p, "");
  if (k->cwhole) {   /* the lnum: the value held in 64 bits */
    elem.rng = 1;
    elem.lo = k->clo;
    elem.hi = k->chi;
  }
  gj_cg_store(g, a, out, gj_cg_convert(g, v, elem, out));
  return 0;
}
