/*
** Typer: control-flow graph, fixed point, and the session's functions.
** The per-instruction rules are in gj_typer_step.c (calls and returns:
** gj_typer_call.c).
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gj_typer.h"
#include "gj_typer_int.h"

void gj_cs_init(gj_cs *cs, gj_kvsrc *src, const gj_bcmap *map, int single,
                const char *kname, gj_err *err)
{
  memset(cs, 0, sizeof(*cs));
  cs->src = src;
  cs->map = map;
  cs->single = single;
  cs->kname = kname;
  cs->err = err;
}

static void fn_free(gj_fn *fn)
{
  free(fn->blocks);
  free(fn->blockof);
  free(fn->entry);
  free(fn->reached);
  free(fn);
}

/* A proto read through the source, and its memory. */
static void proto_free(gj_cs *cs, gj_proto *p)
{
  cs->src->ops->unread(cs->src, p);
  free(p);
}

int gj_cs_struct(gj_cs *cs, const char *text, int *sid)
{
  const char *q = text;
  char msg[200];
  if (!cs->structs && !(cs->structs = calloc(1, sizeof(gj_structs))))
    return gj_err_set(cs->err, "out of memory");
  msg[0] = '\0';
  if (gj_struct_parse(cs->structs, &q, sid, msg, sizeof(msg)))
    return gj_err_set(cs->err, "%s", msg[0] ? msg : "bad struct layout text");
  if (*q) return gj_err_set(cs->err, "bad struct layout text");
  return 0;
}

int gj_cs_shape(gj_cs *cs, const int64_t *dims, int n, int *shp)
{
  int e, k;
  if (n < 1 || n > GJ_MAXDIMS)
    return gj_err_set(cs->err, "an array of %d dimensions (at most %d)", n + 1,
                      GJ_MAXDIMS + 1);
  for (e = 0; e < cs->nshapes; e++) {   /* the same dimensions: one entry */
    const gj_shape *sh = &cs->shapes[e];
    if (sh->level == 0 && sh->n == n &&
        memcmp(sh->dims, dims, sizeof(int64_t) * (size_t)n) == 0) {
      *shp = e + 1;
      return 0;
    }
  }
  if (cs->nshapes + n + 1 > GJ_MAXSHAPES)
    return gj_err_set(cs->err, "too many shapes of multi-dimensional arrays "
                      "in one kernel (at most %d levels)", GJ_MAXSHAPES);
  *shp = cs->nshapes + 1;
  for (k = 0; k <= n; k++) {   /* the root, then each row level */
    gj_shape *sh = &cs->shapes[cs->nshapes++];
    memset(sh, 0, sizeof(*sh));
    sh->level = k;
    sh->n = n - k;
    memcpy(sh->dims, dims + k, sizeof(int64_t) * (size_t)(n - k));
  }
  return 0;
}

void gj_cs_free(gj_cs *cs)
{
  int i;
  for (i = 0; i < cs->nfns; i++) {
    gj_fn *fn = cs->fns[i];
    if (fn->kv < 0 && fn->proto) proto_free(cs, fn->proto);  /* the kernel's */
    fn_free(fn);
  }
  for (i = 0; i < cs->nkv; i++) {
    if (cs->kv[i].proto) proto_free(cs, cs->kv[i].proto);
    free(cs->kv[i].cdata);
    free(cs->kv[i].cdir);
    free(cs->kv[i].cidata);
  }
  if (cs->src) cs->src->ops->close(cs->src);   /* and the kvs' handles */
  free(cs->kv);
  free(cs->fns);
  if (cs->structs) gj_structs_free(cs->structs);
  free(cs->structs);
  memset(cs, 0, sizeof(*cs));
}

int gj_typer_error(gj_cs *cs, gj_fn *fn, int i, const char *fmt, ...)
{
  char what[1024];
  va_list ap;
  int line = fn->proto->linedefined;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  if (i >= 0 && i < fn->proto->nins) line = fn->proto->ins[i].line;
  return gj_err_set(cs->err, "%s:%d: %s (in kernel %s)", fn->proto->chunk,
                    line, what, cs->kname);
}

/* Name the kernel after a message from the frontend. */
static int in_kernel(gj_cs *cs)
{
  size_t n = strlen(cs->err->msg);
  snprintf(cs->err->msg + n, sizeof(cs->err->msg) - n, " (in kernel %s)",
           cs->kname);
  return -1;
}

/* --- Control-flow graph ------------------------------------------------ */

int gj_ins_isbranch(int op)
{
  return (op >= GJ_BC_ISLT && op <= GJ_BC_ISF);
}

int gj_ins_isret(int op)
{
  return op == GJ_BC_RET || op == GJ_BC_RET0 || op == GJ_BC_RET1 ||
         op == GJ_BC_RETM || op == GJ_BC_CALLT || op == GJ_BC_CALLMT;
}

/* Blocks end after a conditional test (its successors are the JMP that
** follows it, taken when the test holds, and the instruction after that),
** after a jump, a loop instruction and a return. */
static int cfg_build(gj_cs *cs, gj_fn *fn)
{
  const gj_proto *p = fn->proto;
  int n = p->nins, i, nb = 0;
  uint8_t *leader = calloc((size_t)n + 2, 1);
  if (!leader) return gj_err_set(cs->err, "out of memory");
  leader[0] = 1;
  for (i = 0; i < n; i++) {
    const gj_ins *in = &p->ins[i];
    int t = in->target;
    if (gj_ins_isbranch(in->op)) {
      leader[i + 1] = 1;
      if (i + 2 <= n) leader[i + 2] = 1;
    } else if (in->op == GJ_BC_JMP || in->op == GJ_BC_UCLO ||
               in->op == GJ_BC_FORI || in->op == GJ_BC_FORL ||
               gj_ins_isret(in->op)) {
      leader[i + 1] = 1;
    }
    if ((in->op == GJ_BC_JMP || in->op == GJ_BC_UCLO || in->op == GJ_BC_FORI ||
         in->op == GJ_BC_FORL) && t >= 0 && t <= n)
      leader[t] = 1;
  }
  for (i = 0; i < n; i++) nb += leader[i];
  fn->nblocks = nb;
  fn->blocks = calloc((size_t)nb, sizeof(gj_block));
  fn->blockof = calloc((size_t)n + 1, sizeof(int));
  fn->reached = calloc((size_t)nb, 1);
  fn->entry = calloc((size_t)nb * (size_t)(p->framesize + 1), sizeof(gj_ty));
  if (!fn->blocks || !fn->blockof || !fn->reached || !fn->entry) {
    free(leader);
    return gj_err_set(cs->err, "out of memory");
  }
  nb = -1;
  for (i = 0; i < n; i++) {
    if (leader[i]) {
      nb++;
      fn->blocks[nb].start = i;
    }
    fn->blocks[nb].end = i + 1;
    fn->blockof[i] = nb;
  }
  fn->blockof[n] = -1;
  free(leader);
  for (i = 0; i < fn->nblocks; i++) {
    gj_block *b = &fn->blocks[i];
    const gj_ins *last = &p->ins[b->end - 1];
    int next = b->end < n ? fn->blockof[b->end] : -1;
    int tgt = (last->target >= 0 && last->target < n) ? fn->blockof[last->target]
                                                      : -1;
    b->nsucc = 0;
    if (gj_ins_isbranch(last->op)) {
      /* succ[0]: test fails (skip the JMP); succ[1]: test holds (the JMP) */
      b->succ[0] = b->end + 1 < n ? fn->blockof[b->end + 1] : -1;
      b->succ[1] = next;
      b->nsucc = 2;
    } else if (last->op == GJ_BC_JMP || last->op == GJ_BC_UCLO) {
      b->succ[0] = tgt;
      b->nsucc = 1;
    } else if (last->op == GJ_BC_FORI) {
      b->succ[0] = tgt;    /* loop not entered */
      b->succ[1] = next;   /* body */
      b->nsucc = 2;
    } else if (last->op == GJ_BC_FORL) {
      b->succ[0] = next;   /* loop done */
      b->succ[1] = tgt;    /* next iteration */
      b->nsucc = 2;
    } else if (!gj_ins_isret(last->op)) {
      b->succ[0] = next;
      b->nsucc = 1;
    }
    if ((b->nsucc >= 1 && b->succ[0] < 0) || (b->nsucc == 2 && b->succ[1] < 0))
      return gj_typer_error(cs, fn, b->end - 1,
                            "control flow leaves the function's bytecode");
  }
  return 0;
}

/* --- Fixed point ------------------------------------------------------- */

gj_ty *gj_fn_entry(gj_fn *fn, int b)
{
  return fn->entry + (size_t)b * (size_t)(fn->proto->framesize + 1);
}

/* Widening bounds: a range that grows at a loop header jumps to the next
** of these (each side on its own), so that a value kept in bounds inside
** the loop (`k = (k + w) % 2^32`, `bit.band(h * 31, 0xFFFF)`) keeps a range
** while one that grows without bound passes them all in a few turns. */
static const double widen_hi[] = { 0, 255, 65535, 2147483647.0, 4294967295.0,
                                   4503599627370495.0 /* 2^52 - 1 */ };
static const double widen_lo[] = { 0, -256, -65536, -2147483648.0, -4294967296.0,
                                   -4503599627370496.0 /* -2^52 */ };
#define GJ_NWIDEN (sizeof(widen_hi) / sizeof(widen_hi[0]))

static int widen(gj_ty *j, const gj_ty *e)
{
  size_t k;
  if (j->hi > e->hi) {
    for (k = 0; k < GJ_NWIDEN && widen_hi[k] < j->hi; k++) {}
    if (k == GJ_NWIDEN) return 0;
    j->hi = widen_hi[k];
  }
  if (j->lo < e->lo) {
    for (k = 0; k < GJ_NWIDEN && widen_lo[k] > j->lo; k++) {}
    if (k == GJ_NWIDEN) return 0;
    j->lo = widen_lo[k];
  }
  return 1;
}

/* Join st into block b's entry state; 1 when it changed.  back: the edge
** goes back to a loop header.  There a range that grows is widened to the
** next bounds above (widen), and past the last an lnum becomes the double
** it stands for and other integers lose their range, so that the
** iteration settles. */
static int merge(gj_cs *cs, gj_fn *fn, int b, const gj_ty *st, int back)
{
  gj_ty *e = gj_fn_entry(fn, b);
  int i, n = fn->proto->framesize, changed = !fn->reached[b];
  int wide = back && fn->reached[b];
  fn->reached[b] = 1;
  for (i = 0; i < n; i++) {
    gj_ty j = back ? gj_ty_join_loop(cs, e[i], st[i]) : gj_ty_join(cs, e[i], st[i]);
    gj_ty eb = e[i];
    /* the bounds the header had: a range, or a weak int constant's value */
    int had = (eb.k == GJ_T_NUM && eb.rng) ||
              (eb.k == GJ_T_WINT && gj_ty_bounds(eb, &eb.lo, &eb.hi));
    if (wide && j.k == GJ_T_NUM && j.rng &&
        !(had && eb.lo == j.lo && eb.hi == j.hi) && !(had && widen(&j, &eb))) {
      if (j.lnum) j = gj_ty_num(gj_ty_deffloat(cs));
      else j.rng = 0;
    }
    if (!gj_ty_eq(j, e[i]) || j.hasc != e[i].hasc ||
        (j.hasc && j.u.c != e[i].u.c) ||
        ((j.k == GJ_T_ARR || j.k == GJ_T_SREF) && j.u.origin != e[i].u.origin) ||
        (j.k == GJ_T_SREF && j.aux != e[i].aux)) {
      e[i] = j;
      changed = 1;
    }
  }
  return changed;
}

int gj_typer_block(gj_cs *cs, gj_fn *fn, int b, gj_tstate *st, gj_edges *ed)
{
  const gj_block *blk = &fn->blocks[b];
  int i;
  memcpy(st->slot, gj_fn_entry(fn, b), sizeof(gj_ty) * (size_t)fn->proto->framesize);
  st->mr_base = -1;
  st->mr_n = 0;
  ed->dead = 0;
  for (i = blk->start; i < blk->end; i++) {
    ed->live[0] = ed->live[1] = 1;
    ed->copy_a = -1;
    if (gj_typer_step(cs, fn, i, st, ed)) return -1;
    if (ed->dead) {
      ed->live[0] = ed->live[1] = 0;
      return 0;
    }
  }
  return 0;
}

/* The state on edge s of block blk when its last instruction compares two
** numbers: st with the operands' ranges cut by the comparison's outcome
** (gj_typer_refine), in out.  0: the edge takes st as it is.  Codegen reads
** the result only through the successors' entry states: where a narrowed
** range changes how a value is held (narrow_ints: int32_t), its edge
** converts the slot as any edge does. */
static int guard(gj_fn *fn, const gj_block *blk, int s, const gj_ty *st,
                 gj_ty *out)
{
  const gj_ins *in = &fn->proto->ins[blk->end - 1];
  size_t n = (size_t)fn->proto->framesize;
  if ((in->op != GJ_BC_ISLT && in->op != GJ_BC_ISGE && in->op != GJ_BC_ISLE &&
       in->op != GJ_BC_ISGT) || in->a >= n || in->d >= n)
    return 0;
  memcpy(out, st, sizeof(gj_ty) * n);
  gj_typer_refine(in->op, s == 1, &out[in->a], &out[in->d]);
  return 1;
}

static int fixpoint(gj_cs *cs, gj_fn *fn)
{
  int fs = fn->proto->framesize, nb = fn->nblocks;
  int *work = malloc(sizeof(int) * (size_t)(nb + 1));
  uint8_t *queued = calloc((size_t)nb, 1);
  gj_ty *slots = calloc((size_t)fs + 1, sizeof(gj_ty));
  gj_ty *taken = calloc((size_t)fs + 1, sizeof(gj_ty));
  gj_tstate st;
  int nwork = 0, rounds = 0, rc = 0;
  if (!work || !queued || !slots || !taken) {
    rc = gj_err_set(cs->err, "out of memory");
    goto done;
  }
  st.slot = slots;
  work[nwork++] = 0;
  queued[0] = 1;
  fn->reached[0] = 1;
  while (nwork > 0) {
    int b = work[--nwork], s;
    const gj_block *blk;
    gj_edges ed;
    queued[b] = 0;
    if (++rounds > 200 * nb + 1000) {
      rc = gj_typer_error(cs, fn, -1, "types did not settle (internal error)");
      goto done;
    }
    if (gj_typer_block(cs, fn, b, &st, &ed)) { rc = -1; goto done; }
    blk = &fn->blocks[b];
    for (s = 0; s < blk->nsucc; s++) {
      const gj_ty *out = slots;
      if ((blk->nsucc == 2 || ed.dead) && !ed.live[s]) continue;
      if (s == 1 && ed.copy_a >= 0) {
        memcpy(taken, slots, sizeof(gj_ty) * (size_t)fs);
        taken[ed.copy_a] = taken[ed.copy_d];
        out = taken;
      } else if (blk->nsucc == 2 && guard(fn, blk, s, slots, taken)) {
        out = taken;
      }
      if (merge(cs, fn, blk->succ[s], out, blk->succ[s] <= b) &&
          !queued[blk->succ[s]]) {
        queued[blk->succ[s]] = 1;
        work[nwork++] = blk->succ[s];
      }
    }
  }
done:
  free(work);
  free(queued);
  free(slots);
  free(taken);
  return rc;
}

static gj_fn *fn_new(gj_cs *cs, int kv, gj_proto *p, int nparams,
                     const gj_ty *params)
{
  gj_fn *fn;
  int i;
  if (cs->nfns == cs->maxfns) {
    int m = cs->maxfns ? cs->maxfns * 2 : 8;
    gj_fn **f = realloc(cs->fns, sizeof(gj_fn *) * (size_t)m);
    if (!f) return NULL;
    cs->fns = f;
    cs->maxfns = m;
  }
  fn = calloc(1, sizeof(gj_fn));
  if (!fn) return NULL;
  fn->kv = kv;
  fn->proto = p;
  fn->nparams = nparams;
  fn->nret = -1;
  for (i = 0; i < nparams; i++) {
    fn->params[i] = params[i];
    fn->params[i].hasc = 0;
    if (params[i].k == GJ_T_ARR || params[i].k == GJ_T_SREF)
      fn->params[i].u.origin = 1ull << i;
    if (params[i].k == GJ_T_SREF) fn->params[i].aux = 0;   /* not made here */
  }
  cs->fns[cs->nfns++] = fn;
  return fn;
}

static int type_fn(gj_cs *cs, gj_fn *fn)
{
  gj_ty *e;
  int i, rc;
  if (fn->proto->framesize > 250 || fn->nparams > GJ_MAXPARAMS)
    return gj_typer_error(cs, fn, -1, "function too large");
  if (cfg_build(cs, fn)) return -1;
  e = gj_fn_entry(fn, 0);
  /* a kernel's float parameter is the double LuaJIT computes with (codegen
  ** converts it on the edge into block 0) */
  for (i = 0; i < fn->nparams && i < fn->proto->framesize; i++)
    e[i] = fn->kv < 0 ? gj_ty_read(cs, fn->params[i]) : fn->params[i];
  fn->busy = 1;
  rc = fixpoint(cs, fn);
  fn->busy = 0;
  if (rc == 0 && fn->nret < 0) fn->nret = 0;
  if (rc == 0 && fn->uses_barrier) rc = gj_uniform_check(cs, fn);
  return rc;
}

int gj_typer_kernel(gj_cs *cs, int nparams, const gj_ty *params, gj_fn **out)
{
  gj_proto *p = cs->src ? calloc(1, sizeof(gj_proto)) : NULL;
  gj_fn *fn;
  if (!p) return gj_err_set(cs->err, "out of memory");
  if (cs->src->ops->read(cs->src, cs->src->kernel, p, cs->err)) {
    free(p);
    return in_kernel(cs);
  }
  snprintf(p->name, sizeof(p->name), "%s", cs->kname);
  if (p->nparams != nparams) {
    int n = p->nparams;
    proto_free(cs, p);
    return gj_err_set(cs->err, "kernel %s takes %d argument%s, %d type%s given",
                      cs->kname, n, n == 1 ? "" : "s", nparams,
                      nparams == 1 ? "" : "s");
  }
  {
    int j;
    for (j = 0; j < nparams; j++)
      if (params[j].k == GJ_T_NUM && params[j].lnum) cs->id_ranges = 1;
  }
  fn = fn_new(cs, -1, p, nparams, params);
  if (!fn) {
    proto_free(cs, p);
    return gj_err_set(cs->err, "out of memory");
  }
  *out = fn;
  return type_fn(cs, fn);
}

int gj_typer_callee(gj_cs *cs, int kv, int nargs, const gj_ty *args,
                    int line, gj_fn *caller, gj_fn **out)
{
  gj_kv *k = &cs->kv[kv];
  gj_ty params[GJ_MAXPARAMS];
  int i, j;
  (void)line;
  if (!k->proto) {
    gj_proto *p = calloc(1, sizeof(gj_proto));
    if (!p) return gj_err_set(cs->err, "out of memory");
    if (cs->src->ops->read(cs->src, k->h, p, cs->err)) {
      free(p);
      return in_kernel(cs);
    }
    snprintf(p->name, sizeof(p->name), "%s", k->name);
    k->proto = p;
  }
  for (i = 0; i < k->proto->nparams; i++) {
    if (i < nargs) {
      params[i] = args[i];
      params[i].hasc = 0;
    } else {
      memset(&params[i], 0, sizeof(gj_ty));
      params[i].k = GJ_T_NIL;
    }
  }
  for (i = 0; i < cs->nfns; i++) {
    gj_fn *f = cs->fns[i];
    if (f->kv != kv) continue;
    for (j = 0; j < k->proto->nparams; j++)
      if (!gj_ty_eq(f->params[j], params[j])) break;
    if (j == k->proto->nparams) {
      if (f->busy) goto recursion;
      *out = f;
      return 0;
    }
  }
  for (i = 0; i < cs->nfns; i++)
    if (cs->fns[i]->kv == kv && cs->fns[i]->busy) goto recursion;
  {
    gj_fn *fn = fn_new(cs, kv, k->proto, k->proto->nparams, params);
    if (!fn) return gj_err_set(cs->err, "out of memory");
    *out = fn;
    return type_fn(cs, fn);
  }
recursion:
  (void)caller;
  return -2;
}
