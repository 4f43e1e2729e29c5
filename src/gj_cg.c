/*
** Codegen of function bodies: slots, blocks and edges, loops, array
** access, calls.  Their boundary (types, declarations, parameters, the
** return) and the module's entry point are gj_cg_sig.c's.  Types come
** from replaying the typer through each block (gj_typer_block /
** gj_typer_step), so codegen never re-derives a rule.  Device functions
** are emitted on demand, when a call to them is emitted (deferred
** codegen).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gj_cg_int.h"
#include "gj_intr.h"

/* --- Slots ------------------------------------------------------------- */

static LLVMValueRef slot_addr(gj_cg *g, int slot, int lt)
{
  static const uint8_t size[LT__MAX] = { 1, 1, 2, 4, 8, 4, 8, 16, 16, 16 };
  LLVMValueRef *a = &g->slots[slot * LT__MAX + lt];
  if (!*a && g->resumable) {
    *a = gj_cg_frame_alloc(g, size[lt], size[lt] < 8 ? size[lt] : 8);
  } else if (!*a) {
    LLVMBuilderRef b = LLVMCreateBuilderInContext(g->C);
    LLVMValueRef first = LLVMGetFirstInstruction(g->allocas);
    if (first) LLVMPositionBuilderBefore(b, first);
    else LLVMPositionBuilderAtEnd(b, g->allocas);
    *a = LLVMBuildAlloca(b, g->lt[lt], "");
    LLVMDisposeBuilder(b);
  }
  return *a;
}

LLVMValueRef gj_cg_load(gj_cg *g, int slot, gj_ty t)
{
  int lt;
  if ((t.k == GJ_T_WINT || t.k == GJ_T_WFLT || t.k == GJ_T_BOOL) && t.hasc)
    return gj_cg_const(g, t);
  lt = gj_cg_lt(g->cs, t);
  if (lt < 0) return NULL;
  return LLVMBuildLoad2(g->B, g->lt[lt], slot_addr(g, slot, lt), "");
}

void gj_cg_store(gj_cg *g, int slot, gj_ty t, LLVMValueRef v)
{
  int lt = gj_cg_lt(g->cs, t);
  if (lt < 0 || !v) return;
  LLVMBuildStore(g->B, v, slot_addr(g, slot, lt));
}

/* --- Edges --------------------------------------------------------------- */

typedef struct fnstate {
  LLVMBasicBlockRef *bb;     /* per typer block (NULL: unreached) */
  gj_tstate st, pre;
  int cur;                   /* the block being emitted; -1: the entry */
} fnstate;

static LLVMBasicBlockRef edge_to(gj_cg *g, fnstate *fs, const gj_ty *out,
                                 int s, int copy_a, int copy_d);

/* Branch target for the edge from the current state (st) into block s:
** a fresh block converting slots whose storage differs, or s itself.  A
** back-edge (s at or before the current block: a loop) goes through the
** cancellation check first when the kernel has a timeout. */
static LLVMBasicBlockRef edge(gj_cg *g, fnstate *fs, const gj_ty *out, int s,
                              int copy_a, int copy_d)
{
  LLVMBasicBlockRef t = edge_to(g, fs, out, s, copy_a, copy_d), c = NULL;
  if (fs->cur >= 0 && s <= fs->cur) c = gj_cg_cancel_edge(g, t);
  return c ? c : t;
}

static LLVMBasicBlockRef edge_to(gj_cg *g, fnstate *fs, const gj_ty *out, int s,
                              int copy_a, int copy_d)
{
  gj_fn *fn = g->fn;
  const gj_ty *in = gj_fn_entry(fn, s);
  int n = fn->proto->framesize, k, need = copy_a >= 0;
  LLVMBasicBlockRef cur = LLVMGetInsertBlock(g->B), eb;
  for (k = 0; k < n && !need; k++) {
    int lo = gj_cg_lt(g->cs, out[k]), li = gj_cg_lt(g->cs, in[k]);
    if (in[k].k == GJ_T_CONFLICT || li < 0 || lo < 0) continue;
    if (lo != li || (out[k].hasc && !in[k].hasc)) need = 1;
  }
  if (!need) return fs->bb[s];
  eb = LLVMAppendBasicBlockInContext(g->C, g->llfn, "edge");
  LLVMPositionBuilderAtEnd(g->B, eb);
  for (k = 0; k < n; k++) {
    gj_ty from = out[k];
    int src = k, lo, li = gj_cg_lt(g->cs, in[k]);
    if (k == copy_a) {
      from = out[copy_d];
      src = copy_d;
    }
    lo = gj_cg_lt(g->cs, from);
    if (in[k].k == GJ_T_CONFLICT || li < 0 || lo < 0) continue;
    if (lo == li && !(from.hasc && !in[k].hasc) && src == k) continue;
    gj_cg_store(g, k, in[k], gj_cg_convert(g, gj_cg_load(g, src, from), from, in[k]));
  }
  LLVMBuildBr(g->B, fs->bb[s]);
  LLVMPositionBuilderAtEnd(g->B, cur);
  return eb;
}

/* --- Instructions -------------------------------------------------------- */

#define PRE(x) (fs->pre.slot[(x)])
#define POST(x) (fs->st.slot[(x)])

LLVMValueRef gj_cg_elem_ptr(gj_cg *g, LLVMValueRef arr, gj_ty ta,
                            LLVMValueRef idx, gj_ty ti)
{
  LLVMTypeRef et = gj_cg_scalar_type(g, (gj_scalar)ta.s);
  LLVMValueRef p = LLVMBuildExtractValue(g->B, arr, 0, "");
  if ((gj_scalar)ta.s == GJ_BOOL) et = g->lt[LT_I8];
  if (ta.sid) et = gj_cg_struct_type(g, gj_ty_struct(g->cs, ta));
  idx = gj_cg_to_scalar(g, idx, ti, GJ_I64);
  if (ta.shp && ta.nd > 0) {
    /* a row: its first element, idx * (elements in a row) elements on --
    ** a pointer to the element type, as every other (SPIR-V's translator
    ** gives a GEP's result its source element's pointer type) */
    int64_t per = gj_ty_elem_bytes(g->cs, ta) /
                  (ta.sid ? (int64_t)gj_ty_struct(g->cs, ta)->size
                          : (int64_t)gj_scalar_size((gj_scalar)ta.s));
    idx = LLVMBuildMul(g->B, idx, LLVMConstInt(g->lt[LT_I64], (unsigned long long)per, 0), "");
  }
  return LLVMBuildGEP2(g->B, et, p, &idx, 1, "");
}

/* With opts->locs: !gj.loc !{i32 line, i32 arg, !"source"} on the access
** v of array arr by instruction i (gpujit_plugin.h).  arg is 1-based when
** the array is known to be one parameter of the kernel, else 0. */
static void tag_loc(gj_cg *g, int i, gj_ty ta, LLVMValueRef v)
{
  LLVMMetadataRef md[3];
  const gj_proto *p = g->fn->proto;
  uint64_t o = ta.u.origin;
  int arg = 0;
  if (!g->opts->locs) return;
  if (g->fn->kv < 0 && ta.space == GJ_SPACE_GLOBAL && o && !(o & (o - 1)))
    while (!((o >> arg++) & 1)) {}
  md[0] = LLVMValueAsMetadata(
      LLVMConstInt(g->lt[LT_I32], (unsigned)p->ins[i].line, 0));
  md[1] = LLVMValueAsMetadata(LLVMConstInt(g->lt[LT_I32], (unsigned)arg, 0));
  md[2] = LLVMMDStringInContext2(g->C, p->chunk, strlen(p->chunk));
  LLVMSetMetadata(v, LLVMGetMDKindIDInContext(g->C, "gj.loc", 6),
                  LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, md, 3)));
}

/* With opts->lines: !gj.line on the instructions after `after` (NULL: the
** block's first) in bb that have none yet, for instruction i. */
static void tag_lines(gj_cg *g, LLVMBasicBlockRef bb, LLVMValueRef after,
                      int i)
{
  unsigned kind = LLVMGetMDKindIDInContext(g->C, "gj.line", 7);
  const gj_proto *p = g->fn->proto;
  LLVMMetadataRef md[2];
  LLVMValueRef v, node;
  md[0] = LLVMValueAsMetadata(
      LLVMConstInt(g->lt[LT_I32], (unsigned)p->ins[i].line, 0));
  md[1] = LLVMMDStringInContext2(g->C, p->chunk, strlen(p->chunk));
  node = LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, md, 2));
  for (v = after ? LLVMGetNextInstruction(after) : LLVMGetFirstInstruction(bb);
       v; v = LLVMGetNextInstruction(v))
    if (!LLVMGetMetadata(v, kind)) LLVMSetMetadata(v, kind, node);
}

/* a[idx] (instruction i) into *out. */
static int emit_aload(gj_cg *g, int i, LLVMValueRef arr, gj_ty ta,
                      LLVMValueRef idx, gj_ty ti, LLVMValueRef *out)
{
  gj_cg_guard gd;
  LLVMValueRef p, v;
  if (gj_cg_check_begin(g, i, arr, ta, idx, ti, &gd)) return -1;
  p = gj_cg_elem_ptr(g, arr, ta, idx, ti);
  if (ta.shp && ta.nd > 0) {   /* a row: { its first element, its length } */
    *out = gj_cg_row(g, ta, p, &gd);
    return 0;
  }
  if (ta.sid) {   /* a reference to the element */
    *out = gj_cg_struct_elem(g, arr, ta, gj_cg_check_end(g, &gd, p), gd.cont != NULL);
    return 0;
  }
  if ((gj_scalar)ta.s == GJ_BOOL) {
    v = LLVMBuildLoad2(g->B, g->lt[LT_I8], p, "");
    tag_loc(g, i, ta, v);
    v = LLVMBuildICmp(g->B, LLVMIntNE, v, LLVMConstInt(g->lt[LT_I8], 0, 0), "");
  } else {
    v = LLVMBuildLoad2(g->B, gj_cg_scalar_type(g, (gj_scalar)ta.s), p, "");
    tag_loc(g, i, ta, v);
  }
  *out = gj_cg_check_end(g, &gd, v);
  return 0;
}

static int emit_astore(gj_cg *g, int i, LLVMValueRef arr, gj_ty ta,
                       LLVMValueRef idx, gj_ty ti, LLVMValueRef v, gj_ty tv)
{
  gj_cg_guard gd;
  LLVMValueRef p;
  if (gj_cg_check_begin(g, i, arr, ta, idx, ti, &gd)) return -1;
  p = gj_cg_elem_ptr(g, arr, ta, idx, ti);
  if (ta.shp && ta.nd > 0) {   /* a[y] = r: a copy of the row */
    gj_cg_row_copy(g, ta, p, v);
    gj_cg_check_end(g, &gd, NULL);
    return 0;
  }
  if (ta.sid) {   /* p[j] = p[i]: a copy of the struct */
    gj_cg_struct_copy(g, p, v, gj_ty_struct(g->cs, ta));
    gj_cg_check_end(g, &gd, NULL);
    return 0;
  }
  v = gj_cg_to_elem(g, v, tv, (gj_scalar)ta.s);
  if ((gj_scalar)ta.s == GJ_BOOL) v = LLVMBuildZExt(g->B, v, g->lt[LT_I8], "");
  tag_loc(g, i, ta, LLVMBuildStore(g->B, v, p));
  gj_cg_check_end(g, &gd, NULL);
  return 0;
}

/* Values of n slots from base in their types (pre state). */
static void load_range(gj_cg *g, fnstate *fs, int base, int n,
                       LLVMValueRef *v, gj_ty *t)
{
  int j;
  for (j = 0; j < n; j++) {
    t[j] = PRE(base + j);
    v[j] = gj_cg_load(g, base + j, t[j]);
  }
}

/* A call: results (nout of them, types rt) into res. */
static int emit_call(gj_cg *g, fnstate *fs, int i, LLVMValueRef *res,
                     gj_ty *rt, int *nout)
{
  gj_cs *cs = g->cs;
  const gj_ins *in = &g->fn->proto->ins[i];
  LLVMValueRef args[GJ_MAXPARAMS];
  gj_ty at[GJ_MAXPARAMS];
  int fslot, arg0, nargs, nres;
  gj_ty f = PRE(in->a);
  gj_call_shape(cs, in, &fs->pre, &fslot, &arg0, &nargs, &nres);
  load_range(g, fs, arg0, nargs, args, at);
  if (f.k == GJ_T_STR && f.sid) {   /* particle(x, y, ...) */
    memset(&rt[0], 0, sizeof(rt[0]));
    rt[0].k = GJ_T_SREF;
    rt[0].sid = f.sid;
    rt[0].space = GJ_SPACE_LOCAL;
    res[0] = gj_cg_struct_new(g, rt[0], nargs, args, at);
    *nout = 1;
    return 0;
  }
  if (cs->kv[f.aux].kind == GJ_KV_INTR) {
    int intr = cs->kv[f.aux].intr;
    if (gj_typer_intr(cs, g->fn, i, intr, &nargs, at, rt, nout)) return -1;
    if (intr == GJ_I_DERIVATIVE || intr == GJ_I_GRADIENT)
      return gj_cg_derivative(g, i, intr, nargs, args, at, rt, *nout, res);
    return gj_cg_intr(g, i, intr, nargs, args, at, rt, *nout, res);
  }
  (void)nres;
  return gj_cg_call_lua(g, i, f.aux, nargs, args, at, res, rt, nout);
}

unsigned gj_cg_call_args(gj_cg *g, const gj_fn *callee, LLVMValueRef *args,
                         const gj_ty *at, LLVMValueRef *cargs)
{
  unsigned n = 0;
  int j;
  cargs[n++] = g->wi;
  if (gj_cg_is_resumable(g, callee)) cargs[n++] = NULL;   /* its frame */
  for (j = 0; j < callee->nparams; j++) {
    gj_ty pt = callee->params[j];
    if (!gj_cg_type(g, pt)) continue;
    cargs[n++] = gj_cg_convert(g, args[j], at[j], pt);
  }
  return n;
}

int gj_cg_call_lua(gj_cg *g, int i, int kv, int nargs, LLVMValueRef *args,
                   const gj_ty *at, LLVMValueRef *res, gj_ty *rt, int *nout)
{
  gj_cs *cs = g->cs;
  const gj_ins *in = &g->fn->proto->ins[i];
  int j;
  {
    gj_fn *callee, *saved = g->fn;
    LLVMValueRef cargs[GJ_MAXPARAMS + 1], r;
    int rc;
    LLVMTypeRef fty;
    unsigned n = 0;
    if (gj_typer_callee(cs, kv, nargs, at, in->line, g->fn, &callee))
      return -1;
    if (!callee->llfn) {
      /* deferred codegen: emit the callee now, with its own builder state */
      gj_cg sub = *g;
      char name[160];
      if (gj_typer_depth_check(cs, g->fn, i, callee->proto->name,
                               cs->depth + 1))
        return -1;
      snprintf(name, sizeof(name), "gj_fn_%s", callee->proto->name);
      gj_cg_declare_fn(&sub, callee, name);
      sub.B = LLVMCreateBuilderInContext(g->C);
      cs->depth++;
      rc = gj_cg_emit_fn(&sub, callee);
      cs->depth--;
      LLVMDisposeBuilder(sub.B);
      if (rc) return -1;
      g->shared_size = sub.shared_size;   /* module-wide */
      g->nshared = sub.nshared;
    }
    g->fn = saved;
    n = gj_cg_call_args(g, callee, args, at, cargs);
    fty = LLVMGlobalGetValueType((LLVMValueRef)callee->llfn);
    if (gj_cg_is_resumable(g, callee))
      r = gj_cg_call_resumable(g, callee, fty, cargs, n);
    else
      r = LLVMBuildCall2(g->B, fty, (LLVMValueRef)callee->llfn, cargs, n, "");
    gj_cg_cancel_here(g);   /* stopped inside the callee: stop here too */
    gj_cg_assert_after_call(g);   /* failed inside it: return too */
    *nout = callee->nret;
    if (callee->nret == 1) {
      res[0] = gj_cg_ret_llvm(g, callee->ret[0]) ? r : NULL;
    } else {
      unsigned k = 0;
      for (j = 0; j < callee->nret; j++)
        res[j] = gj_cg_ret_llvm(g, callee->ret[j]) ? LLVMBuildExtractValue(g->B, r, k++, "") : NULL;
    }
    for (j = 0; j < callee->nret; j++) {
      rt[j] = gj_ty_returned(callee->ret[j], nargs, at);
      if (gj_ty_byvalue(callee->ret[j]))   /* a new object of this function's */
        res[j] = gj_cg_struct_in(g, res[j], rt[j]);
    }
    return 0;
  }
}

/* !gj.line !{i32 line} on a conditional branch (an if's, a loop's): the
** Lua line of its condition, for the cpu vectorizer's note
** (targets/native_vec.c). */
static void tag_line(gj_cg *g, LLVMValueRef br, int line)
{
  LLVMMetadataRef md = LLVMValueAsMetadata(
      LLVMConstInt(g->lt[LT_I32], (unsigned)line, 0));
  LLVMSetMetadata(br, LLVMGetMDKindIDInContext(g->C, "gj.line", 7),
                  LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, &md, 1)));
}

static void cond_branch(gj_cg *g, fnstate *fs, int b, LLVMValueRef cond,
                        const gj_edges *ed)
{
  const gj_block *blk = &g->fn->blocks[b];
  LLVMBasicBlockRef t0 = NULL, t1 = NULL;
  int ca = ed->copy_a, cd = ed->copy_d;
  if (ed->live[0]) t0 = edge(g, fs, fs->st.slot, blk->succ[0], -1, 0);
  if (ed->live[1]) t1 = edge(g, fs, fs->st.slot, blk->succ[1], ca, cd);
  if (t0 && t1 && cond)
    tag_line(g, LLVMBuildCondBr(g->B, cond, t1, t0),
             g->fn->proto->ins[blk->end - 1].line);
  else if (t1) LLVMBuildBr(g->B, t1);
  else if (t0) LLVMBuildBr(g->B, t0);
  else LLVMBuildUnreachable(g->B);
}

static int emit_ins(gj_cg *g, fnstate *fs, int b, int i, gj_edges *ed)
{
  gj_cs *cs = g->cs;
  gj_fn *fn = g->fn;
  const gj_ins *in = &fn->proto->ins[i];
  const gj_proto *p = fn->proto;
  LLVMBuilderRef B = g->B;
  LLVMValueRef va, vb, vc;
  memcpy(fs->pre.slot, fs->st.slot, sizeof(gj_ty) * (size_t)p->framesize);
  fs->pre.mr_base = fs->st.mr_base;
  fs->pre.mr_n = fs->st.mr_n;
  ed->live[0] = ed->live[1] = 1;
  ed->copy_a = -1;
  if (gj_typer_step(cs, fn, i, &fs->st, ed)) return -1;
  {
    gj_meta m;
    LLVMValueRef r;
    int mr = gj_typer_meta(cs, fn, i, &fs->pre, &m);
    if (mr < 0) return -1;
    if (mr > 0) {   /* a metamethod call (or a constant of an __index table) */
      if (gj_cg_meta(g, i, &m, &r)) return -1;
      if (!gj_ins_isbranch(in->op)) {
        gj_cg_store(g, in->a, POST(in->a), r);
        return 0;
      }
      cond_branch(g, fs, b, ed->live[0] && ed->live[1] ? r : NULL, ed);
      return 1;
    }
  }
  switch (in->op) {
  case GJ_BC_ISLT: case GJ_BC_ISGE: case GJ_BC_ISLE: case GJ_BC_ISGT:
  case GJ_BC_ISEQV: case GJ_BC_ISNEV: case GJ_BC_ISEQN: case GJ_BC_ISNEN:
  case GJ_BC_ISEQP: case GJ_BC_ISNEP: case GJ_BC_ISEQS: case GJ_BC_ISNES: {
    LLVMValueRef cond = NULL;   /* ISEQS: decided while typing */
    if (ed->live[0] && ed->live[1]) {
      gj_ty ta = PRE(in->a), tb;
      va = gj_cg_load(g, in->a, ta);
      if (in->op == GJ_BC_ISEQN || in->op == GJ_BC_ISNEN) {
        tb = gj_ty_const(p->knum[in->d]);
        vb = gj_cg_const(g, tb);
      } else if (in->op == GJ_BC_ISEQP || in->op == GJ_BC_ISNEP) {
        tb = gj_ty_num(GJ_BOOL);
        vb = LLVMConstInt(g->lt[LT_I1], in->d == 2, 0);
      } else {
        tb = PRE(in->d);
        vb = gj_cg_load(g, in->d, tb);
      }
      {
        int op = in->op == GJ_BC_ISEQP ? GJ_BC_ISEQV
               : in->op == GJ_BC_ISNEP ? GJ_BC_ISNEV : in->op;
        cond = gj_cg_compare(g, op, va, ta, vb, tb);
      }
    }
    cond_branch(g, fs, b, cond, ed);
    return 1;
  }
  case GJ_BC_ISTC: case GJ_BC_ISFC: case GJ_BC_IST: case GJ_BC_ISF: {
    LLVMValueRef cond = NULL;
    if (ed->live[0] && ed->live[1]) {   /* only a boolean is unknown */
      cond = gj_cg_load(g, in->d, PRE(in->d));
      if (in->op == GJ_BC_ISF || in->op == GJ_BC_ISFC) cond = LLVMBuildNot(B, cond, "");
    }
    cond_branch(g, fs, b, cond, ed);
    return 1;
  }
  case GJ_BC_MOV:
    gj_cg_store(g, in->a, POST(in->a), gj_cg_load(g, in->d, PRE(in->d)));
    return 0;
  case GJ_BC_NOT:
    if (!POST(in->a).hasc)
      gj_cg_store(g, in->a, POST(in->a), LLVMBuildNot(B, gj_cg_load(g, in->d, PRE(in->d)), ""));
    return 0;
  case GJ_BC_UNM:
    if (!POST(in->a).hasc)
      gj_cg_store(g, in->a, POST(in->a),
                  gj_cg_unm(g, gj_cg_load(g, in->d, PRE(in->d)), PRE(in->d), POST(in->a)));
    return 0;
  case GJ_BC_LEN:
    gj_cg_store(g, in->a, POST(in->a),
                LLVMBuildExtractValue(B, gj_cg_load(g, in->d, PRE(in->d)), 1, ""));
    return 0;
  case GJ_BC_ADDVN: case GJ_BC_SUBVN: case GJ_BC_MULVN: case GJ_BC_DIVVN:
  case GJ_BC_MODVN: case GJ_BC_ADDNV: case GJ_BC_SUBNV: case GJ_BC_MULNV:
  case GJ_BC_DIVNV: case GJ_BC_MODNV: case GJ_BC_ADDVV: case GJ_BC_SUBVV:
  case GJ_BC_MULVV: case GJ_BC_DIVVV: case GJ_BC_MODVV: case GJ_BC_POW: {
    gj_ty tb = PRE(in->b), tc;
    int vn = in->op >= GJ_BC_ADDVN && in->op <= GJ_BC_MODVN;
    int nv = in->op >= GJ_BC_ADDNV && in->op <= GJ_BC_MODNV;
    int op = in->op == GJ_BC_POW ? GJ_BC_POW
           : GJ_BC_ADDVV + (in->op - (vn ? GJ_BC_ADDVN : nv ? GJ_BC_ADDNV : GJ_BC_ADDVV));
    if (POST(in->a).hasc) return 0;   /* folded by the typer */
    vb = gj_cg_load(g, in->b, tb);
    if (vn || nv) {
      tc = gj_ty_const(p->knum[in->c]);
      vc = gj_cg_const(g, tc);
    } else {
      tc = PRE(in->c);
      vc = gj_cg_load(g, in->c, tc);
    }
    va = nv ? gj_cg_arith(g, op, vc, tc, vb, tb, POST(in->a))
            : gj_cg_arith(g, op, vb, tb, vc, tc, POST(in->a));
    gj_cg_store(g, in->a, POST(in->a), va);
    return 0;
  }
  case GJ_BC_TGETS: case GJ_BC_TSETS: {
    gj_ty tb = PRE(in->b);
    const gj_field *f;
    if (tb.k != GJ_T_SREF) return 0;   /* a field of a known table */
    f = gj_struct_field(cs->structs, tb.sid - 1, p->kstr[in->c]);
    vb = gj_cg_load(g, in->b, tb);
    if (in->op == GJ_BC_TSETS)
      gj_cg_field_set(g, vb, tb, f, gj_cg_load(g, in->a, PRE(in->a)), PRE(in->a));
    else
      gj_cg_store(g, in->a, POST(in->a),
                  gj_cg_convert(g, gj_cg_field_get(g, vb, tb, f), gj_ty_field(tb, f),
                                POST(in->a)));
    return 0;
  }
  case GJ_BC_KSHORT: case GJ_BC_KNUM: case GJ_BC_KPRI: case GJ_BC_KNIL:
  case GJ_BC_KSTR: case GJ_BC_UGET: case GJ_BC_GGET:
  case GJ_BC_UCLO: case GJ_BC_LOOP:
    return 0;   /* constants and known values: nothing at run time */
  case GJ_BC_TGETB: case GJ_BC_TGETV: case GJ_BC_TGETR: {
    gj_ty ta = PRE(in->b), ti;
    if (ta.k != GJ_T_ARR && ta.k != GJ_T_CROW && ta.k != GJ_T_KV) return 0;
    if (in->op == GJ_BC_TGETB) {
      ti = gj_ty_const(in->c);
      vc = gj_cg_const(g, ti);
    } else {
      ti = PRE(in->c);
      vc = gj_cg_load(g, in->c, ti);
    }
    if (ta.k == GJ_T_KV) {   /* a field (the typer's constant), or constant data */
      const gj_kv *k = &cs->kv[ta.aux];
      if (ti.k == GJ_T_WINT && ti.hasc && !k->ci64) return 0;
      return gj_cg_const_table(g, ta.aux, vc, ti, in->a, POST(in->a));
    }
    if (ta.k == GJ_T_CROW)   /* a table in constant data */
      return gj_cg_const_row(g, ta, gj_cg_load(g, in->b, ta), vc, ti, in->a, POST(in->a));
    if (emit_aload(g, i, gj_cg_load(g, in->b, ta), ta, vc, ti, &va)) return -1;
    gj_cg_store(g, in->a, POST(in->a), gj_cg_convert(g, va, gj_ty_elem(ta), POST(in->a)));
    return 0;
  }
  case GJ_BC_TSETB: case GJ_BC_TSETV: case GJ_BC_TSETR: {
    gj_ty ta = PRE(in->b), ti;
    if (in->op == GJ_BC_TSETB) {
      ti = gj_ty_const(in->c);
      vc = gj_cg_const(g, ti);
    } else {
      ti = PRE(in->c);
      vc = gj_cg_load(g, in->c, ti);
    }
    return emit_astore(g, i, gj_cg_load(g, in->b, ta), ta, vc, ti,
                       gj_cg_load(g, in->a, PRE(in->a)), PRE(in->a));
  }
  case GJ_BC_CALL: case GJ_BC_CALLM: case GJ_BC_CALLT: case GJ_BC_CALLMT: {
    LLVMValueRef res[GJ_MAXRET + 1];
    gj_ty rt[GJ_MAXRET + 1];
    int nout = 0, j, fslot, arg0, nargs, nres;
    if (emit_call(g, fs, i, res, rt, &nout)) return -1;
    if (ed->dead) {   /* error(msg): the rest of the block does not run */
      LLVMBuildUnreachable(g->B);
      return 1;
    }
    if (in->op == GJ_BC_CALLT || in->op == GJ_BC_CALLMT) {
      gj_cg_return(g, fn, nout, res, rt);
      return 1;
    }
    gj_call_shape(cs, in, &fs->pre, &fslot, &arg0, &nargs, &nres);
    if (nres < 0) nres = nout;
    for (j = 0; j < nres && j < nout; j++)
      gj_cg_store(g, fslot + j, POST(fslot + j), gj_cg_convert(g, res[j], rt[j], POST(fslot + j)));
    return 0;
  }
  case GJ_BC_RET0: case GJ_BC_RET1: case GJ_BC_RET: case GJ_BC_RETM: {
    LLVMValueRef v[GJ_MAXRET];
    gj_ty t[GJ_MAXRET];
    int n = fn->nret;
    load_range(g, fs, in->a, n, v, t);
    gj_cg_return(g, fn, n, v, t);
    return 1;
  }
  case GJ_BC_FORI: case GJ_BC_FORL: {
    gj_ty t = POST(in->a);
    LLVMValueRef idx, stop, step, cond;
    if (in->op == GJ_BC_FORI) {
      gj_ty t0 = PRE(in->a), t1 = PRE(in->a + 1), t2 = PRE(in->a + 2);
      step = gj_cg_convert(g, gj_cg_load(g, in->a + 2, t2), t2, t);
      idx = gj_cg_convert(g, gj_cg_load(g, in->a, t0), t0, t);
      stop = gj_cg_int_limit(g, gj_cg_load(g, in->a + 1, t1), t1, step, t);
    } else {
      idx = gj_cg_load(g, in->a, t);
      stop = gj_cg_load(g, in->a + 1, t);
      step = gj_cg_load(g, in->a + 2, t);
      idx = gj_scalar_isfloat(gj_ty_scalar(cs, t)) ? LLVMBuildFAdd(B, idx, step, "")
                                                  : LLVMBuildAdd(B, idx, step, "");
    }
    gj_cg_store(g, in->a, t, idx);
    gj_cg_store(g, in->a + 1, t, stop);
    gj_cg_store(g, in->a + 2, t, step);
    gj_cg_store(g, in->a + 3, t, idx);
    cond = gj_cg_for_cond(g, idx, stop, step, t);
    {
      /* FORI: succ[0] exit, succ[1] body; FORL: succ[0] exit, succ[1] loop */
      const gj_block *blk = &fn->blocks[b];
      LLVMBasicBlockRef go = edge(g, fs, fs->st.slot, blk->succ[1], -1, 0);
      LLVMBasicBlockRef out = edge(g, fs, fs->st.slot, blk->succ[0], -1, 0);
      tag_line(g, LLVMBuildCondBr(B, cond, go, out), in->line);
    }
    return 1;
  }
  case GJ_BC_JMP: {
    const gj_block *blk = &fn->blocks[b];
    LLVMBuildBr(B, edge(g, fs, fs->st.slot, blk->succ[0], -1, 0));
    return 1;
  }
  default:
    return gj_typer_error(cs, fn, i, "internal error: no codegen for %s",
                          gj_bc_names[in->op]);
  }
}

/* --- Functions ----------------------------------------------------------- */

int gj_cg_emit_fn(gj_cg *g, gj_fn *fn)
{
  gj_proto *p = fn->proto;
  fnstate fs;
  int b, j, k, rc = -1;
  size_t nslots = (size_t)p->framesize * LT__MAX;
  memset(&fs, 0, sizeof(fs));
  fs.cur = -1;
  g->fn = fn;
  g->llfn = (LLVMValueRef)fn->llfn;
  g->slots = calloc(nslots + 1, sizeof(LLVMValueRef));
  fs.bb = calloc((size_t)fn->nblocks, sizeof(LLVMBasicBlockRef));
  fs.st.slot = calloc((size_t)p->framesize + 1, sizeof(gj_ty));
  fs.pre.slot = calloc((size_t)p->framesize + 1, sizeof(gj_ty));
  if (!g->slots || !fs.bb || !fs.st.slot || !fs.pre.slot) {
    gj_err_set(g->cs->err, "out of memory");
    goto done;
  }
  g->allocas = LLVMAppendBasicBlockInContext(g->C, g->llfn, "entry");
  for (b = 0; b < fn->nblocks; b++)
    if (fn->reached[b])
      fs.bb[b] = LLVMAppendBasicBlockInContext(g->C, g->llfn, "");
  /* parameters into their slots */
  LLVMPositionBuilderAtEnd(g->B, g->allocas);
  g->wi = LLVMGetParam(g->llfn, 0);
  k = 1;
  g->resumable = gj_cg_is_resumable(g, fn);
  if (g->resumable) {
    if (fn->kv < 0) {
      LLVMTypeRef ptr = g->ptr_wi;
      g->frame = gj_cg_call(g, "gj.frame", ptr, &ptr, 1, &g->wi);
    } else {
      g->frame = LLVMGetParam(g->llfn, (unsigned)k++);
    }
    gj_cg_resume_begin(g);
  }
  gj_cg_params_in(g, fn, k);
  /* block 0 may be a loop header whose entry types are wider than the
  ** parameters': enter it through the edge conversions like any edge */
  {
    gj_ty *in = calloc((size_t)p->framesize + 1, sizeof(gj_ty));
    if (!in) {
      gj_err_set(g->cs->err, "out of memory");
      goto done;
    }
    for (j = 0; j < fn->nparams && j < p->framesize; j++) in[j] = fn->params[j];
    LLVMBuildBr(g->B, edge(g, &fs, in, 0, -1, 0));
    free(in);
  }
  for (b = 0; b < fn->nblocks; b++) {
    const gj_block *blk = &fn->blocks[b];
    gj_edges ed;
    int i, term = 0;
    if (!fs.bb[b]) continue;
    fs.cur = b;
    LLVMPositionBuilderAtEnd(g->B, fs.bb[b]);
    memcpy(fs.st.slot, gj_fn_entry(fn, b), sizeof(gj_ty) * (size_t)p->framesize);
    fs.st.mr_base = -1;
    fs.st.mr_n = 0;
    if (blk->join_barrier && g->job->join_barriers && !g->resumable)
      gj_cg_barrier(g);   /* a PoCL workaround (gj_job.h) */
    for (i = blk->start; i < blk->end; i++) {
      LLVMBasicBlockRef bb = LLVMGetInsertBlock(g->B);
      LLVMValueRef last = LLVMGetLastInstruction(bb);
      term = emit_ins(g, &fs, b, i, &ed);
      if (term < 0) goto done;
      if (g->opts->ad) tag_lines(g, bb, last, i);
      if (ed.dead) break;
    }
    if (!term) {
      if (blk->nsucc == 1)
        LLVMBuildBr(g->B, edge(g, &fs, fs.st.slot, blk->succ[0], -1, 0));
      else
        LLVMBuildUnreachable(g->B);
    }
  }
  if (g->resumable) fn->frame_bytes = g->frame_size;
  rc = 0;
done:
  free(g->slots);
  g->slots = NULL;
  free(fs.bb);
  free(fs.st.slot);
  free(fs.pre.slot);
  return rc;
}
