/*
** Reverse mode's tape (src/gj_ad_rev.h, docs/autodiff.md): per work item,
** one stack per value kept from a loop and per block in a loop with
** several predecessors, in the tape argument, an array of bytes that the
** launch passes: its first 8 bytes are a scratch word (what a full stack
** pushes, or an empty one reads), the rest is divided evenly between the
** work items of the launch and the stacks, 8 bytes an entry.  A stack that
** runs out is found where the forward pass ends (gj_adr_tape_full), so the
** reverse never reads what was not kept; its message's index is the deepest
** entry the work item's stacks asked for.  Also: whether the launch is 1-D.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gj_ad_rev.h"

void gj_adr_mark_adj(gj_ad *a, LLVMValueRef I)
{
  unsigned kind = LLVMGetMDKindIDInContext(a->C, "gj.adj", 6);
  LLVMSetMetadata(I, kind, LLVMMDNodeInContext(a->C, NULL, 0));
}

LLVMValueRef gj_adr_bbv(LLVMBasicBlockRef b)
{
  return LLVMBasicBlockAsValue(b);
}

/* A slot of type t in the entry block, set to init (NULL: undef).  Even
** a slot that every path stores before reading it is set on entry: the
** target inlines the body into its work-item loop, where SROA would
** otherwise see the previous work item's value reach the loads and carry
** it around the loop in a phi (which keeps the cpu's vectorizer off). */
LLVMValueRef gj_adr_slot(rev *R, LLVMTypeRef t, LLVMValueRef init)
{
  LLVMValueRef s = LLVMBuildAlloca(R->Ba, t, "");
  LLVMBuildStore(R->Ba, init ? init : LLVMGetUndef(t), s);
  return s;
}


/* --- the tape's stacks ----------------------------------------------------- */

LLVMTypeRef gj_adr_i64(rev *R)
{
  return LLVMInt64TypeInContext(R->a->C);
}

/* The stack of key (a value, or a block's predecessor index): its top's
** slot; *id its number.  Made on first use. */
LLVMValueRef gj_adr_stack(rev *R, LLVMValueRef key, int *id)
{
  LLVMValueRef top = gj_admap_get(&R->stk, key);
  if (!top) {
    top = gj_adr_slot(R, gj_adr_i64(R), LLVMConstInt(gj_adr_i64(R), 0, 0));
    if (gj_admap_put(&R->stk, key, top) ||
        gj_admap_put(&R->stkid, key, LLVMConstInt(gj_adr_i64(R), (unsigned)++R->nstk, 0)))
      return NULL;
  }
  *id = (int)LLVMConstIntGetZExtValue(gj_admap_get(&R->stkid, key)) - 1;
  return top;
}

/* The address of entry e of stack id at B, or of the tape's first 8 bytes
** (written and read only when the launch fails) when e is past the end. */
static LLVMValueRef entry(rev *R, LLVMBuilderRef B, int id, LLVMValueRef e)
{
  gj_ad *a = R->a;
  LLVMTypeRef i64 = gj_adr_i64(R), i8 = LLVMInt8TypeInContext(a->C);
  LLVMTypeRef pg = LLVMPointerTypeInContext(a->C, a->as_global);
  LLVMValueRef cap = LLVMBuildLoad2(B, i64, R->cap, "");
  LLVMValueRef base = LLVMBuildLoad2(B, pg, R->base, "");
  LLVMValueRef in = LLVMBuildICmp(B, LLVMIntULT, e, cap, "");
  LLVMValueRef off = LLVMBuildMul(B, LLVMBuildAdd(B, LLVMBuildMul(B, cap,
                                  LLVMConstInt(i64, (unsigned)id, 0), ""), e, ""),
                                  LLVMConstInt(i64, 8, 0), "");
  LLVMValueRef p = LLVMBuildGEP2(B, i8, base, &off, 1, "");
  return LLVMBuildSelect(B, in, p, a->tape, "");
}

/* Push v (bool as a byte) on stack id, at B. */
void gj_adr_push(rev *R, LLVMBuilderRef B, LLVMValueRef top, int id, LLVMValueRef v)
{
  LLVMTypeRef i64 = gj_adr_i64(R);
  LLVMValueRef t = LLVMBuildLoad2(B, i64, top, ""), n, need;
  if (LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMIntegerTypeKind &&
      LLVMGetIntTypeWidth(LLVMTypeOf(v)) == 1)
    v = LLVMBuildZExt(B, v, LLVMInt8TypeInContext(R->a->C), "");
  LLVMBuildStore(B, v, entry(R, B, id, t));
  n = LLVMBuildAdd(B, t, LLVMConstInt(i64, 1, 0), "");
  LLVMBuildStore(B, n, top);
  need = LLVMBuildLoad2(B, i64, R->need, "");
  LLVMBuildStore(B, LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGT, n, need, ""),
                                    n, need, ""), R->need);
}

/* The top of stack id (of type t), at B. */
LLVMValueRef gj_adr_peek(rev *R, LLVMBuilderRef B, LLVMValueRef top, int id, LLVMTypeRef t)
{
  LLVMTypeRef i64 = gj_adr_i64(R), i8 = LLVMInt8TypeInContext(R->a->C);
  int is1 = LLVMGetTypeKind(t) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 1;
  LLVMValueRef e = LLVMBuildSub(B, LLVMBuildLoad2(B, i64, top, ""), LLVMConstInt(i64, 1, 0), "");
  LLVMValueRef v = LLVMBuildLoad2(B, is1 ? i8 : t, entry(R, B, id, e), "");
  return is1 ? LLVMBuildTrunc(B, v, t, "") : v;
}

void gj_adr_pop(rev *R, LLVMBuilderRef B, LLVMValueRef top)
{
  LLVMTypeRef i64 = gj_adr_i64(R);
  LLVMBuildStore(B, LLVMBuildSub(B, LLVMBuildLoad2(B, i64, top, ""),
                                 LLVMConstInt(i64, 1, 0), ""), top);
}

LLVMValueRef gj_adr_intrinsic(gj_ad *a, const char *name, LLVMTypeRef ret,
                              LLVMValueRef *args, unsigned n)
{
  LLVMTypeRef ps[2];
  LLVMTypeRef fty;
  LLVMValueRef f;
  unsigned j;
  for (j = 0; j < n; j++) ps[j] = LLVMTypeOf(args[j]);
  fty = LLVMFunctionType(ret, ps, n, 0);
  f = LLVMGetNamedFunction(a->m, name);
  if (!f) f = LLVMAddFunction(a->m, name, fty);
  return LLVMBuildCall2(a->B, fty, f, args, n, "");
}

/* At the entry (a->B there): the work item's part of the tape, and how
** many entries each stack has: the tape's bytes after its first 8,
** divided by the work items of the launch and the stacks. */
void gj_adr_tape_setup(rev *R)
{
  gj_ad *a = R->a;
  LLVMBuilderRef B = a->B;
  LLVMTypeRef i64 = gj_adr_i64(R), i32 = LLVMInt32TypeInContext(a->C);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(a->C);
  LLVMValueRef wi = LLVMGetParam(a->fn, 0), id[3], gs[3], args[2], items, lid;
  LLVMValueRef len, per, cap, off;
  int d;
  for (d = 0; d < 3; d++) {
    args[0] = wi;
    args[1] = LLVMConstInt(i32, (unsigned)d, 0);
    id[d] = gj_adr_intrinsic(a, "gj.global_id", i64, args, 2);
    gs[d] = gj_adr_intrinsic(a, "gj.global_size", i64, args, 2);
  }
  items = LLVMBuildMul(B, LLVMBuildMul(B, gs[0], gs[1], ""), gs[2], "");
  lid = LLVMBuildAdd(B, id[0], LLVMBuildMul(B, gs[0], LLVMBuildAdd(B, id[1],
                     LLVMBuildMul(B, gs[1], id[2], ""), ""), ""), "");
  len = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntUGT, a->tape_len, LLVMConstInt(i64, 8, 0), ""),
                        LLVMBuildSub(B, a->tape_len, LLVMConstInt(i64, 8, 0), ""),
                        LLVMConstInt(i64, 0, 0), "");
  per = LLVMBuildUDiv(B, len, items, "");
  cap = LLVMBuildUDiv(B, per, LLVMConstInt(i64, (unsigned long long)R->nstk * 8, 0), "");
  LLVMBuildStore(B, cap, R->cap);
  off = LLVMBuildAdd(B, LLVMConstInt(i64, 8, 0),
                     LLVMBuildMul(B, lid, LLVMBuildMul(B, cap,
                                  LLVMConstInt(i64, (unsigned long long)R->nstk * 8, 0), ""), ""), "");
  LLVMBuildStore(B, LLVMBuildGEP2(B, i8, a->tape, &off, 1, ""), R->base);
}

/* Where the forward pass ends: a stack that ran out (its pushes went to
** the scratch word) fails the launch through the fault record, and the
** reverse, which would read what was not kept, is skipped.  Returns the
** failing path's block (it returns), or NULL with a->err set. */
LLVMBasicBlockRef gj_adr_tape_full(rev *R, LLVMValueRef loop_at)
{
  gj_ad *a = R->a;
  LLVMBuilderRef B = a->B;
  LLVMTypeRef i64 = gj_adr_i64(R), i32 = LLVMInt32TypeInContext(a->C);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(a->C);
  LLVMValueRef wi = LLVMGetParam(a->fn, 0), rec, x, idx, cap, deep;
  LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(a->C, a->fn, "tape.full");
  LLVMBasicBlockRef fill = LLVMAppendBasicBlockInContext(a->C, a->fn, "tape.fill");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(a->C, a->fn, "tape.done");
  char chunk[200];
  int line = 0, site;
  gj_ad_where(a, loop_at, chunk, sizeof(chunk), &line);
  site = gj_sites_add(a->sites, chunk, line, "the reverse-mode tape (gpu.grad's tape option)",
                      0, a->err);
  if (site < 0) return NULL;
  LLVMPositionBuilderAtEnd(B, fail);
  cap = LLVMBuildLoad2(B, i64, R->cap, "");
  deep = LLVMBuildSub(B, LLVMBuildLoad2(B, i64, R->need, ""), LLVMConstInt(i64, 1, 0), "");
  rec = gj_adr_intrinsic(a, "gj.fault_record", LLVMPointerTypeInContext(a->C, a->as_global), &wi, 1);
  x = LLVMBuildAtomicCmpXchg(B, rec, LLVMConstInt(i32, 0, 0),
                             LLVMConstInt(i32, (unsigned)site + 1, 0),
                             LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, 0);
  LLVMBuildCondBr(B, LLVMBuildExtractValue(B, x, 1, ""), fill, done);
  LLVMPositionBuilderAtEnd(B, fill);
  idx = LLVMConstInt(i64, 4, 0);
  LLVMBuildStore(B, LLVMConstInt(i32, (unsigned)line, 0), LLVMBuildGEP2(B, i8, rec, &idx, 1, ""));
  idx = LLVMConstInt(i64, 16, 0);
  /* the index: the deepest entry a stack of this work item asked for (its
  ** pushes went on counting past the end), so that the message says how
  ** many entries the stacks need: length (index + 1) of each */
  LLVMBuildStore(B, deep, LLVMBuildGEP2(B, i8, rec, &idx, 1, ""));
  idx = LLVMConstInt(i64, 24, 0);
  LLVMBuildStore(B, cap, LLVMBuildGEP2(B, i8, rec, &idx, 1, ""));
  LLVMBuildBr(B, done);
  LLVMPositionBuilderAtEnd(B, done);
  LLVMBuildRetVoid(B);
  a->used_faults = 1;
  return fail;
}

/* At the entry (a->B there): is the launch 1-D? */
void gj_adr_oned_setup(rev *R)
{
  gj_ad *a = R->a;
  LLVMBuilderRef B = a->B;
  LLVMTypeRef i64 = gj_adr_i64(R), i32 = LLVMInt32TypeInContext(a->C);
  LLVMValueRef args[2], g1, g2;
  args[0] = LLVMGetParam(a->fn, 0);
  args[1] = LLVMConstInt(i32, 1, 0);
  g1 = gj_adr_intrinsic(a, "gj.global_size", i64, args, 2);
  args[1] = LLVMConstInt(i32, 2, 0);
  g2 = gj_adr_intrinsic(a, "gj.global_size", i64, args, 2);
  LLVMBuildStore(B, LLVMBuildICmp(B, LLVMIntEQ, LLVMBuildMul(B, g1, g2, ""),
                                  LLVMConstInt(i64, 1, 0), ""), R->oned);
}

