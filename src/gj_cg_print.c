/*
** Codegen of print(...) in kernels.  A call appends one record to the
** launch's print area, which follows the fault record (src/gj_backend.h:
** gj_print_head, gj_print_rec): it reserves its bytes with an atomic add
** to the head's `used`, and where they fit below `cap` writes the work
** item's linear global id, the call's site and its values, then counts
** itself in `written`; else it counts itself in `dropped`.  Each call is a
** site in opts->prints (gj_print.h), which says how to read its values;
** the host orders the records by work item, then by reservation (a work
** item's calls reserve in program order) and prints them after the launch
** (lua/gpujit/printer.lua).  A kernel without print has no site, and its
** IR is as without this file.
*/
#include <stdio.h>

#include "gj_cg_int.h"
#include "gj_print.h"

_Static_assert(sizeof(gj_fault) == 40 && sizeof(gj_print_head) == 32 &&
               sizeof(gj_print_rec) == 16, "the print area's layout");

static LLVMValueRef at_off(gj_cg *g, LLVMValueRef base, LLVMValueRef off)
{
  return LLVMBuildInBoundsGEP2(g->B, g->lt[LT_I8], base, &off, 1, "");
}

static LLVMValueRef at(gj_cg *g, LLVMValueRef base, uint64_t off)
{
  return at_off(g, base, LLVMConstInt(g->lt[LT_I64], off, 0));
}

static LLVMValueRef id(gj_cg *g, const char *name, int dim)
{
  LLVMTypeRef ps[2] = { g->ptr_wi, g->lt[LT_I32] };
  LLVMValueRef a[2] = { g->wi, LLVMConstInt(g->lt[LT_I32], (unsigned)dim, 0) };
  return gj_cg_call(g, name, g->lt[LT_I64], ps, 2, a);
}

LLVMValueRef gj_cg_linear_id(gj_cg *g)
{
  /* x + gx * (y + gy * z) */
  LLVMValueRef item = LLVMBuildAdd(g->B, id(g, "gj.global_id", 1),
                                   LLVMBuildMul(g->B, id(g, "gj.global_size", 1),
                                                id(g, "gj.global_id", 2), ""), "");
  return LLVMBuildAdd(g->B, id(g, "gj.global_id", 0),
                      LLVMBuildMul(g->B, id(g, "gj.global_size", 0), item, ""), "item");
}

/* The kind of an argument of type t, as its record holds it. */
static char kind_of(const gj_cg *g, gj_ty t)
{
  gj_scalar s;
  switch (t.k) {
  case GJ_T_BOOL: return GJ_PK_BOOL;
  case GJ_T_NIL: case GJ_T_UNDEF: return GJ_PK_NIL;
  case GJ_T_STR: return GJ_PK_STR;
  default: break;
  }
  s = gj_ty_scalar(g->cs, t);
  if (gj_scalar_isfloat(s)) return GJ_PK_NUM;
  if (t.k == GJ_T_NUM && t.cint && s == GJ_I64) return GJ_PK_I64;
  if (t.k == GJ_T_NUM && s == GJ_U64) return t.cint ? GJ_PK_U64 : GJ_PK_NUM;
  return GJ_PK_INT;
}

/* The 8-byte slot of a value of kind k. */
static LLVMValueRef slot_value(gj_cg *g, LLVMValueRef v, gj_ty t, char k)
{
  switch (k) {
  case GJ_PK_NUM: return gj_cg_to_scalar(g, v, t, GJ_F64);
  case GJ_PK_BOOL: return LLVMBuildZExt(g->B, v, g->lt[LT_I64], "");
  case GJ_PK_U64: return gj_cg_to_scalar(g, v, t, GJ_U64);
  default: return gj_cg_to_scalar(g, v, t, GJ_I64);
  }
}

int gj_cg_print(gj_cg *g, int i, int nargs, LLVMValueRef *args, const gj_ty *at_)
{
  const gj_proto *p = g->fn->proto;
  LLVMTypeRef i64 = g->lt[LT_I64], i32 = g->lt[LT_I32];
  char kinds[GJ_PRINT_MAXARGS];
  const char *strs[GJ_PRINT_MAXARGS];
  LLVMValueRef rec, head, area, off, cap, size, fits, r, item;
  LLVMBasicBlockRef put, drop, done;
  int j, site, nslots = 0;
  if (!g->opts->prints)
    return gj_err_set(g->cs->err, "internal error: print without a site table");
  if (nargs > GJ_PRINT_MAXARGS) nargs = GJ_PRINT_MAXARGS;   /* typer refused */
  for (j = 0; j < nargs; j++) {
    kinds[j] = kind_of(g, at_[j]);
    strs[j] = kinds[j] == GJ_PK_STR ? (const char *)(uintptr_t)at_[j].u.origin : NULL;
    if (kinds[j] != GJ_PK_STR && kinds[j] != GJ_PK_NIL) nslots++;
  }
  site = gj_psites_add(g->opts->prints, p->chunk, p->ins[i].line, nargs, kinds,
                       strs, g->cs->err);
  if (site < 0) return -1;

  rec = gj_cg_call(g, "gj.fault_record", g->ptr_global, &g->ptr_wi, 1, &g->wi);
  head = at(g, rec, sizeof(gj_fault));
  area = at(g, head, sizeof(gj_print_head));
  size = LLVMConstInt(i64, sizeof(gj_print_rec) + 8 * (unsigned)nslots, 0);
  off = LLVMBuildAtomicRMW(g->B, LLVMAtomicRMWBinOpAdd,
                           at(g, head, offsetof(gj_print_head, used)), size,
                           LLVMAtomicOrderingMonotonic, 0);
  cap = LLVMBuildLoad2(g->B, i64, at(g, head, offsetof(gj_print_head, cap)), "print.cap");
  LLVMSetAlignment(cap, 8);
  fits = LLVMBuildICmp(g->B, LLVMIntULE, LLVMBuildAdd(g->B, off, size, ""), cap, "");
  put = LLVMAppendBasicBlockInContext(g->C, g->llfn, "print.put");
  drop = LLVMAppendBasicBlockInContext(g->C, g->llfn, "print.drop");
  done = LLVMAppendBasicBlockInContext(g->C, g->llfn, "print.done");
  LLVMBuildCondBr(g->B, fits, put, drop);

  LLVMPositionBuilderAtEnd(g->B, put);
  r = at_off(g, area, off);
  item = gj_cg_linear_id(g);
  LLVMSetAlignment(LLVMBuildStore(g->B, item, r), 8);
  LLVMSetAlignment(LLVMBuildStore(g->B, LLVMConstInt(i32, (unsigned)site, 0),
                                  at(g, r, offsetof(gj_print_rec, site))), 4);
  LLVMSetAlignment(LLVMBuildStore(g->B, LLVMConstInt(i32, (unsigned)nslots, 0),
                                  at(g, r, offsetof(gj_print_rec, nslots))), 4);
  for (j = 0, nslots = 0; j < nargs; j++) {
    if (kinds[j] == GJ_PK_STR || kinds[j] == GJ_PK_NIL) continue;
    LLVMSetAlignment(LLVMBuildStore(g->B, slot_value(g, args[j], at_[j], kinds[j]),
                                    at(g, r, sizeof(gj_print_rec) + 8 * (unsigned)nslots++)), 8);
  }
  LLVMBuildAtomicRMW(g->B, LLVMAtomicRMWBinOpAdd,
                     at(g, head, offsetof(gj_print_head, written)),
                     LLVMConstInt(i64, 1, 0), LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildBr(g->B, done);

  LLVMPositionBuilderAtEnd(g->B, drop);
  LLVMBuildAtomicRMW(g->B, LLVMAtomicRMWBinOpAdd,
                     at(g, head, offsetof(gj_print_head, dropped)),
                     LLVMConstInt(i64, 1, 0), LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildBr(g->B, done);
  LLVMPositionBuilderAtEnd(g->B, done);
  return 0;
}
