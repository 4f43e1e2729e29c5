/*
** Codegen of constant tables (docs/typing.md, "Constant tables"): t[idx]
** with t a known table of numbers (gj_typer_const.c read them) is a load
** from a read-only global of the module, one per table, in the address
** space of array arguments: int32_t elements when the numbers are whole
** (the typer's lnum), else double, and for an FFI array of int64_t or
** uint64_t its 64-bit integers.  Element 0 is 0 and stands for every
** index outside, so that no index reads outside the global.  A nested
** table has a second global, its directory (gj_kv.cdir: start and length
** per table, as int32_t), and `T[i]` is the node id of the table it
** reaches (a GJ_T_CROW, held as i32; node 0, empty, for an index outside).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gj_cg_int.h"

/* Global gj.<what>.<kv> of n elements of type et, made on first use in
** this module: element j is ival[j], qval[j] or dval[j] (the one set). */
static LLVMValueRef data_global(gj_cg *g, const char *what, int kv, LLVMTypeRef et,
                                int n, const int32_t *ival, const int64_t *qval,
                                const double *dval)
{
  char name[40];
  LLVMValueRef gv, *el;
  int j;
  snprintf(name, sizeof(name), "gj.%s.%d", what, kv);
  gv = LLVMGetNamedGlobal(g->M, name);
  if (gv) return gv;
  el = malloc(sizeof(LLVMValueRef) * (size_t)n);
  if (!el) return NULL;
  for (j = 0; j < n; j++)
    el[j] = ival ? LLVMConstInt(et, (unsigned long long)(long long)ival[j], 1)
          : qval ? LLVMConstInt(et, (unsigned long long)qval[j], 0)
          : LLVMGetTypeKind(et) == LLVMDoubleTypeKind
              ? LLVMConstReal(et, dval[j])
              : LLVMConstInt(et, (unsigned long long)(long long)dval[j], 1);
  gv = LLVMAddGlobalInAddressSpace(g->M, LLVMArrayType(et, (unsigned)n), name,
                                   g->job->as_global);
  LLVMSetInitializer(gv, LLVMConstArray(et, el, (unsigned)n));
  free(el);
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMInternalLinkage);
  LLVMSetAlignment(gv, 16);
  return gv;
}

/* The numbers of table kv: element 0 is 0, then cdata (or cidata). */
static LLVMValueRef numbers(gj_cg *g, const gj_kv *k, int kv, LLVMTypeRef et)
{
  LLVMValueRef gv;
  size_t n = (size_t)k->cn + 1;
  if (k->ci64) {
    int64_t *q = calloc(n, sizeof(int64_t));
    if (!q) return NULL;
    memcpy(q + 1, k->cidata, sizeof(int64_t) * (size_t)k->cn);
    gv = data_global(g, "const", kv, et, k->cn + 1, NULL, q, NULL);
    free(q);
  } else {
    double *d = calloc(n, sizeof(double));
    if (!d) return NULL;
    memcpy(d + 1, k->cdata, sizeof(double) * (size_t)k->cn);
    gv = data_global(g, "const", kv, et, k->cn + 1, NULL, NULL, d);
    free(d);
  }
  return gv;
}

static LLVMValueRef i64c(gj_cg *g, long long v)
{
  return LLVMConstInt(g->lt[LT_I64], (unsigned long long)v, 1);
}

/* Item idx (a number of type ti, converted as an array index is: a float
** truncated) of the node whose start and length are st and len (i64):
** start + idx when idx is in 1 .. len (0 .. len - 1 for an FFI array's
** copy), else 0. */
static LLVMValueRef item(gj_cg *g, const gj_kv *k, LLVMValueRef st, LLVMValueRef len,
                         LLVMValueRef iv, gj_ty ti)
{
  LLVMValueRef idx = LLVMBuildFreeze(g->B, gj_cg_to_scalar(g, iv, ti, GJ_I64), "");
  LLVMValueRef in;
  if (k->base0) idx = LLVMBuildAdd(g->B, idx, i64c(g, 1), "");
  in = LLVMBuildICmp(g->B, LLVMIntULT, LLVMBuildSub(g->B, idx, i64c(g, 1), ""), len, "");
  return LLVMBuildSelect(g->B, in, LLVMBuildAdd(g->B, st, idx, ""), i64c(g, 0), "");
}

/* Slot a gets item it (i64) of a node at level lv of table kv: a node id,
** or the number. */
static int store_item(gj_cg *g, int kv, int lv, LLVMValueRef it, int a, gj_ty out)
{
  const gj_kv *k = &g->cs->kv[kv];
  LLVMTypeRef et = k->ci64 ? g->lt[LT_I64] : k->cwhole ? g->lt[LT_I32] : g->lt[LT_F64];
  LLVMValueRef gv, v;
  gj_ty elem = gj_ty_num(k->ci64 == 2 ? GJ_U64 : k->ci64 ? GJ_I64 : k->cwhole ? GJ_I32 : GJ_F64);
  if (lv < k->cdepth) {
    gj_cg_store(g, a, out, LLVMBuildTrunc(g->B, it, g->lt[LT_I32], ""));
    return 0;
  }
  gv = numbers(g, k, kv, et);
  if (!gv) return gj_err_set(g->cs->err, "out of memory");
  v = LLVMBuildLoad2(g->B, et, LLVMBuildInBoundsGEP2(g->B, et, gv, &it, 1, ""), "");
  elem.cint = k->ci64 != 0;
  if (k->cwhole && !k->ci64) {   /* the lnum: the value held in 64 bits */
    elem.rng = 1;
    elem.lo = k->clo;
    elem.hi = k->chi;
  }
  gj_cg_store(g, a, out, gj_cg_convert(g, v, elem, out));
  return 0;
}

int gj_cg_const_table(gj_cg *g, int kv, LLVMValueRef iv, gj_ty ti, int a, gj_ty out)
{
  const gj_kv *k = &g->cs->kv[kv];
  /* the root, node 1: its start and length are known */
  return store_item(g, kv, 1, item(g, k, i64c(g, k->cdir[2]), i64c(g, k->cdir[3]), iv, ti),
                    a, out);
}

int gj_cg_const_row(gj_cg *g, gj_ty row, LLVMValueRef rv, LLVMValueRef iv,
                    gj_ty ti, int a, gj_ty out)
{
  const gj_kv *k = &g->cs->kv[row.aux];
  LLVMTypeRef it = g->lt[LT_I32];
  LLVMValueRef dir = data_global(g, "cdir", row.aux, it, 2 * k->cnodes, k->cdir, NULL, NULL);
  LLVMValueRef at, st, len;
  if (!dir) return gj_err_set(g->cs->err, "out of memory");
  at = LLVMBuildMul(g->B, LLVMBuildZExt(g->B, rv, g->lt[LT_I64], ""), i64c(g, 2), "");
  st = LLVMBuildLoad2(g->B, it, LLVMBuildInBoundsGEP2(g->B, it, dir, &at, 1, ""), "");
  at = LLVMBuildAdd(g->B, at, i64c(g, 1), "");
  len = LLVMBuildLoad2(g->B, it, LLVMBuildInBoundsGEP2(g->B, it, dir, &at, 1, ""), "");
  return store_item(g, row.aux, row.s + 1,
                    item(g, k, LLVMBuildSExt(g->B, st, g->lt[LT_I64], ""),
                         LLVMBuildZExt(g->B, len, g->lt[LT_I64], ""), iv, ti),
                    a, out);
}
