/*
** Codegen of struct types (docs/typing.md, "Structs"): references to
** structs in arrays, their fields, copies of whole elements, and the check
** that the device can hold LuaJIT's layout.  A reference (GJ_T_SREF) is
** held as an array value { ptr, 0 }: the struct's address in its space.
** Also the rows of multi-dimensional arrays, the other aggregate in memory
** (an array value { first element, length }) and their copies.
*/
#include <stdio.h>
#include <string.h>

#include <llvm-c/Target.h>

#include "gj_cg_int.h"

/* The alignment LuaJIT's layout guarantees at byte offset off of a struct
** of alignment align, for a value of size bytes. */
static unsigned layout_align(uint32_t align, uint32_t off, uint32_t size)
{
  unsigned a = align;
  while (a > 1 && off % a) a >>= 1;
  while (a > 1 && a > size) a >>= 1;
  return a ? a : 1;
}

int gj_cg_struct_check(gj_cg *g)
{
  const gj_structs *tab = g->cs->structs;
  LLVMTargetDataRef td;
  int i, j, rc = 0;
  if (!tab || !tab->n || !g->job->datalayout[0]) return 0;
  td = LLVMCreateTargetData(g->job->datalayout);
  for (i = 0; i < tab->n && !rc; i++) {
    const gj_struct *st = &tab->s[i];
    for (j = 0; j < st->nfields && !rc; j++) {
      const gj_field *f = &st->fields[j];
      gj_scalar s = (gj_scalar)f->scalar;
      unsigned want, have;
      if (s >= GJ_SCALAR__MAX) continue;   /* a struct: its own entry */
      want = LLVMABIAlignmentOfType(td, s == GJ_BOOL ? g->lt[LT_I8]
                                                     : gj_cg_scalar_type(g, s));
      have = layout_align(st->align, f->offset, (uint32_t)gj_scalar_size(s));
      if (want > have)
        rc = gj_err_set(g->cs->err, "kernel %s: %s%s: field '%s' (%s) "
                        "at byte offset %u is %u-byte aligned, and device "
                        "code for %s needs %u (a packed struct?)",
                        g->cs->kname, gj_struct_word(st->name), st->name, f->name, gj_scalar_name(s),
                        (unsigned)f->offset, have, g->job->triple, want);
    }
  }
  LLVMDisposeTargetData(td);
  return rc;
}

/* A zeroed global the size of struct st (the largest asked for so far is
** the one kept), for accesses whose bounds check failed. */
static LLVMValueRef struct_scratch(gj_cg *g, const gj_struct *st)
{
  LLVMValueRef v = LLVMGetNamedGlobal(g->M, "gj.struct.scratch"), nv;
  LLVMTypeRef t = LLVMArrayType(g->lt[LT_I8], st->size);
  if (v && LLVMGetArrayLength(LLVMGlobalGetValueType(v)) >= st->size) return v;
  if (v) LLVMSetValueName2(v, "gj.struct.scratch.old", 21);
  nv = LLVMAddGlobalInAddressSpace(g->M, t, "gj.struct.scratch", g->job->as_global);
  LLVMSetInitializer(nv, LLVMConstNull(t));
  LLVMSetLinkage(nv, LLVMInternalLinkage);
  LLVMSetAlignment(nv, 16);
  if (v) {
    LLVMReplaceAllUsesWith(v, nv);
    LLVMDeleteGlobal(v);
  }
  return nv;
}

LLVMValueRef gj_cg_struct_elem(gj_cg *g, LLVMValueRef arr, gj_ty ta,
                               LLVMValueRef p, int checked)
{
  if (checked) {
    /* where the check failed (it reports the fault) p is null: an element
    ** of zeros instead, so that accesses through the reference stay in
    ** memory -- in global memory a scratch one, elsewhere (a fixed array
    ** in a struct, never empty) the array's first */
    LLVMValueRef alt = ta.space == GJ_SPACE_GLOBAL
                           ? struct_scratch(g, gj_ty_struct(g->cs, ta))
                           : LLVMBuildExtractValue(g->B, arr, 0, "");
    p = LLVMBuildSelect(g->B, LLVMBuildIsNull(g->B, p, ""), alt, p, "");
  }
  return gj_cg_sref(g, p, ta.space);
}

LLVMValueRef gj_cg_sref(gj_cg *g, LLVMValueRef ptr, int space)
{
  LLVMValueRef v = LLVMGetUndef(g->lt[LT_ARR + space]);
  v = LLVMBuildInsertValue(g->B, v, ptr, 0, "");
  return LLVMBuildInsertValue(g->B, v, LLVMConstInt(g->lt[LT_I64], 0, 0), 1, "");
}

/* Element type of a GEP over an array of structs st: its bytes. */
LLVMTypeRef gj_cg_struct_type(gj_cg *g, const gj_struct *st)
{
  return LLVMArrayType(g->lt[LT_I8], st->size);
}

static LLVMValueRef field_ptr(gj_cg *g, LLVMValueRef ref, const gj_field *f)
{
  LLVMValueRef p = LLVMBuildExtractValue(g->B, ref, 0, "");
  LLVMValueRef off = LLVMConstInt(g->lt[LT_I64], f->offset, 0);
  return LLVMBuildGEP2(g->B, g->lt[LT_I8], p, &off, 1, f->name);
}

LLVMValueRef gj_cg_field_get(gj_cg *g, LLVMValueRef ref, gj_ty tref,
                             const gj_field *f)
{
  const gj_struct *st = gj_ty_struct(g->cs, tref);
  gj_scalar s = (gj_scalar)f->scalar;
  LLVMValueRef p = field_ptr(g, ref, f), v;
  if (f->count) {   /* a fixed array: { ptr, count } */
    v = LLVMGetUndef(g->lt[LT_ARR + tref.space]);
    v = LLVMBuildInsertValue(g->B, v, p, 0, "");
    return LLVMBuildInsertValue(g->B, v, LLVMConstInt(g->lt[LT_I64], f->count, 0),
                                1, "");
  }
  if (s >= GJ_SCALAR__MAX) return gj_cg_sref(g, p, tref.space);
  v = LLVMBuildLoad2(g->B, s == GJ_BOOL ? g->lt[LT_I8] : gj_cg_scalar_type(g, s),
                     p, "");
  LLVMSetAlignment(v, layout_align(st->align, f->offset, (uint32_t)gj_scalar_size(s)));
  if (s == GJ_BOOL)
    v = LLVMBuildICmp(g->B, LLVMIntNE, v, LLVMConstInt(g->lt[LT_I8], 0, 0), "");
  return v;
}

void gj_cg_field_set(gj_cg *g, LLVMValueRef ref, gj_ty tref, const gj_field *f,
                     LLVMValueRef v, gj_ty tv)
{
  const gj_struct *st = gj_ty_struct(g->cs, tref);
  gj_scalar s = (gj_scalar)f->scalar;
  LLVMValueRef p = field_ptr(g, ref, f);
  v = gj_cg_to_elem(g, v, tv, s);
  if (s == GJ_BOOL) v = LLVMBuildZExt(g->B, v, g->lt[LT_I8], "");
  LLVMSetAlignment(LLVMBuildStore(g->B, v, p),
                   layout_align(st->align, f->offset, (uint32_t)gj_scalar_size(s)));
}

void gj_cg_struct_copy(gj_cg *g, LLVMValueRef dst, LLVMValueRef src_ref,
                       const gj_struct *st)
{
  LLVMValueRef src = LLVMBuildExtractValue(g->B, src_ref, 0, "");
  LLVMBuildMemCpy(g->B, dst, st->align, src, st->align,
                   LLVMConstInt(g->lt[LT_I64], st->size, 0));
}

/* Private memory for one struct st: one object per call site. */
static LLVMValueRef struct_alloc(gj_cg *g, const gj_struct *st)
{
  LLVMValueRef p;
  if (g->resumable) {
    /* it may outlive a barrier: in the work item's frame */
    p = gj_cg_frame_alloc(g, st->size, st->align < 16 ? 16 : st->align);
  } else {
    /* one object per call site, in the entry block (so SROA can keep its
    ** fields in registers); a call in a loop makes it anew each time */
    LLVMBuilderRef b = LLVMCreateBuilderInContext(g->C);
    LLVMValueRef first = LLVMGetFirstInstruction(g->allocas);
    if (first) LLVMPositionBuilderBefore(b, first);
    else LLVMPositionBuilderAtEnd(b, g->allocas);
    p = LLVMBuildAlloca(b, gj_cg_struct_type(g, st), st->name);
    LLVMSetAlignment(p, st->align < 16 ? 16 : st->align);
    LLVMDisposeBuilder(b);
  }
  return p;
}

LLVMValueRef gj_cg_struct_new(gj_cg *g, gj_ty t, int nargs,
                              const LLVMValueRef *args, const gj_ty *at)
{
  const gj_struct *st = gj_ty_struct(g->cs, t);
  LLVMValueRef p = struct_alloc(g, st), ref;
  int j;
  LLVMBuildMemSet(g->B, p, LLVMConstInt(g->lt[LT_I8], 0, 0),
                  LLVMConstInt(g->lt[LT_I64], st->size, 0), st->align);
  ref = gj_cg_sref(g, p, t.space);
  for (j = 0; j < nargs; j++)
    gj_cg_field_set(g, ref, t, &st->fields[j], args[j], at[j]);
  return ref;
}

/* The scalar members of struct st at byte offset base, in order, into
** el[*n] with [k x i8] padding before each (at most max; -1 beyond). */
static int value_members(gj_cg *g, const gj_struct *st, uint32_t base,
                         LLVMTypeRef *el, int *n, int max, uint32_t *at)
{
  int j;
  uint32_t k;
  for (j = 0; j < st->nfields; j++) {
    const gj_field *f = &st->fields[j];
    for (k = 0; k < (f->count ? f->count : 1); k++) {
      if (f->scalar >= GJ_SCALAR__MAX) {
        const gj_struct *sub = &g->cs->structs->s[f->sid - 1];
        if (value_members(g, sub, base + f->offset + k * sub->size, el, n,
                          max, at))
          return -1;
        continue;
      }
      {
        gj_scalar sc = (gj_scalar)f->scalar;
        uint32_t off = base + f->offset + k * (uint32_t)gj_scalar_size(sc);
        if (off < *at || *n + 2 > max) return -1;
        if (off > *at) el[(*n)++] = LLVMArrayType(g->lt[LT_I8], off - *at);
        el[(*n)++] = sc == GJ_BOOL ? g->lt[LT_I8] : gj_cg_scalar_type(g, sc);
        *at = off + (uint32_t)gj_scalar_size(sc);
      }
    }
  }
  return 0;
}

/* The type a struct crosses a return in: a packed LLVM struct of its
** scalar members at LuaJIT's offsets (padding as i8 arrays), so that once
** inlined, SROA splits the copy into the fields' own loads and stores; a
** struct with too many members is its bytes. */
static LLVMTypeRef value_type(gj_cg *g, const gj_struct *st)
{
  LLVMTypeRef el[64];
  int n = 0;
  uint32_t at = 0;
  if (value_members(g, st, 0, el, &n, 63, &at) || at > st->size)
    return gj_cg_struct_type(g, st);
  if (at < st->size) el[n++] = LLVMArrayType(g->lt[LT_I8], st->size - at);
  return LLVMStructTypeInContext(g->C, el, (unsigned)n, 1);
}

LLVMTypeRef gj_cg_struct_value_type(gj_cg *g, const gj_struct *st)
{
  return value_type(g, st);
}

LLVMValueRef gj_cg_struct_out(gj_cg *g, LLVMValueRef ref, gj_ty t)
{
  const gj_struct *st = gj_ty_struct(g->cs, t);
  LLVMValueRef v = LLVMBuildLoad2(g->B, value_type(g, st),
                                  LLVMBuildExtractValue(g->B, ref, 0, ""), "");
  LLVMSetAlignment(v, st->align);
  return v;
}

LLVMValueRef gj_cg_struct_in(gj_cg *g, LLVMValueRef v, gj_ty t)
{
  const gj_struct *st = gj_ty_struct(g->cs, t);
  LLVMValueRef p = struct_alloc(g, st);
  LLVMSetAlignment(LLVMBuildStore(g->B, v, p), st->align);
  return gj_cg_sref(g, p, t.space);
}

/* --- Metatypes (docs/typing.md, "Metatypes") ---------------------------- */

int gj_cg_meta(gj_cg *g, int i, const gj_meta *m, LLVMValueRef *out)
{
  LLVMValueRef args[2], res[GJ_MAXRET + 1], c;
  gj_ty rt[GJ_MAXRET + 1];
  int j, nout = 0, t;
  *out = NULL;
  if (m->kv < 0) return 0;   /* an __index table's value: known, no code */
  for (j = 0; j < m->nargs; j++)
    args[j] = m->slot[j] >= 0 ? gj_cg_load(g, m->slot[j], m->args[j])
            : m->args[j].hasc ? gj_cg_const(g, m->args[j]) : NULL;
  if (gj_cg_call_lua(g, i, m->kv, m->nargs, args, m->args, res, rt, &nout))
    return -1;
  if (!gj_ins_isbranch(g->fn->proto->ins[i].op)) {
    /* rt[0] is m->res, the type the typer put in the slot */
    *out = nout > 0 ? res[0] : NULL;
    return 0;
  }
  /* a comparison: LuaJIT takes the truth of the metamethod's result */
  t = nout > 0 ? gj_ty_truth(rt[0]) : 0;
  if (t >= 0) c = LLVMConstInt(g->lt[LT_I1], (unsigned long long)t, 0);
  else c = res[0];   /* a boolean */
  *out = m->negate ? LLVMBuildNot(g->B, c, "") : c;
  return 0;
}

/* --- Rows of multi-dimensional arrays (docs/typing.md) ------------------- */

LLVMValueRef gj_cg_row(gj_cg *g, gj_ty ta, LLVMValueRef p, const gj_cg_guard *gd)
{
  const gj_shape *sh = &g->cs->shapes[ta.shp - 1];
  LLVMValueRef v, len = LLVMConstInt(g->lt[LT_I64], (unsigned long long)sh->dims[0], 0);
  if (gd->cont) {
    /* failed: { null, 0 }, the parts merged each on its own (SPIR-V's
    ** translator mistypes a phi of the pair's pointer) */
    LLVMValueRef in[2], phi;
    LLVMBasicBlockRef from[2];
    from[0] = LLVMGetInsertBlock(g->B);
    from[1] = gd->fail;
    LLVMBuildBr(g->B, gd->cont);
    LLVMPositionBuilderAtEnd(g->B, gd->cont);
    in[0] = p;
    in[1] = LLVMConstNull(LLVMTypeOf(p));
    LLVMAddIncoming(phi = LLVMBuildPhi(g->B, LLVMTypeOf(p), ""), in, from, 2);
    p = phi;
    in[0] = len;
    in[1] = LLVMConstInt(g->lt[LT_I64], 0, 0);
    LLVMAddIncoming(phi = LLVMBuildPhi(g->B, g->lt[LT_I64], ""), in, from, 2);
    len = phi;
  }
  v = LLVMGetUndef(g->lt[LT_ARR + ta.space]);
  v = LLVMBuildInsertValue(g->B, v, p, 0, "");
  return LLVMBuildInsertValue(g->B, v, len, 1, "row");
}

void gj_cg_row_copy(gj_cg *g, gj_ty ta, LLVMValueRef dst, LLVMValueRef src_row)
{
  LLVMValueRef src = LLVMBuildExtractValue(g->B, src_row, 0, "");
  unsigned al = ta.sid ? (unsigned)gj_ty_struct(g->cs, ta)->align
                       : (unsigned)gj_scalar_size((gj_scalar)ta.s);
  /* a row whose own check failed is { null, 0 }: copy dst onto itself */
  if (g->opts->sites) src = LLVMBuildSelect(g->B, LLVMBuildIsNull(g->B, src, ""), dst, src, "");
  /* rows are the same or disjoint, as LuaJIT's: memcpy (the SPIR-V
  ** translator turns a memmove into a temporary it places badly) */
  LLVMBuildMemCpy(g->B, dst, al, src, al,
                  LLVMConstInt(g->lt[LT_I64], (unsigned long long)gj_ty_elem_bytes(g->cs, ta), 0));
}
