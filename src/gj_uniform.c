/*
** Uniformity check: every work item of a group must reach the same
** gpu.barrier() calls (docs/kernels.md, "Barriers and uniform control
** flow").  A barrier in control flow that depends on the work item is a
** compile error; what this cannot see is undefined (documented there).
**
** The analysis runs on a function's typed CFG, after its fixed point:
**  1. Varying values: a forward dataflow with one bit per slot, "may differ
**     between the work items of a group", joined by OR at block entries.
**     Sources: gpu.global_id, gpu.local_id, atomics, and results of device
**     functions that return such values (analysed for the varying-ness of
**     their arguments).  Other instructions OR their operands, so a load
**     a[i] is varying when i (or the array value) is, and uniform otherwise.
**  2. Varying branches: two-way blocks whose condition is varying.
**  3. Each varying branch's influence region: the blocks on paths from it
**     to its immediate post-dominator (a virtual exit joins the returns).
**     A slot written in a region differs at the join (items took different
**     paths), so writes there are varying, and 1-3 repeat until no region
**     grows.  A barrier, or a call of a function that reaches one, inside a
**     region is the error.
** Conservative against false errors: memory is not tracked (a load with a
** uniform index is uniform), and only what the typer proved reachable, over
** the edges it proved live, counts.
*/
#include <stdlib.h>
#include <string.h>

#include "gj_intr.h"
#include "gj_typer.h"
#include "gj_typer_int.h"

enum { BAD_NONE, BAD_BARRIER, BAD_CALL, BAD_ARGS };

/* What the analysis of one function, with a given set of varying
** parameters, found. */
typedef struct usum {
  const gj_fn *fn;
  uint64_t vparams;      /* bit j: parameter j is varying */
  int ret_varying;       /* some returned value may be varying */
  int bad;               /* BAD_*: the first barrier under varying control */
  int bad_ins;           /* its instruction (a CALL) */
  int cond_line;         /* the line of the varying condition */
  int inner_line;        /* BAD_ARGS: the callee's offending line */
  const gj_fn *callee;   /* BAD_CALL, BAD_ARGS */
} usum;

/* One check: summaries memoized per (function, varying parameters), so a
** device function called from many places is analysed once per context.
** Recursion is rejected by the typer, so the analysis terminates. */
typedef struct uctx {
  gj_cs *cs;
  int n, max;
  usum *memo;
} uctx;

/* The analysis of one function.  Blocks are fn's; index nb is the virtual
** exit of the post-dominator tree. */
typedef struct ufn {
  uctx *u;
  gj_fn *fn;
  int nb, fs, words; /* blocks, slots, 64-bit words of a block set */
  uint8_t *live;     /* 2 per block: ed.live of its last instruction */
  int *copy;         /* 2 per block: ISTC/ISFC copy_a, copy_d (-1: none) */
  int *succ;         /* 3 per block: successors incl. the exit, -1 ends */
  uint64_t *pd;      /* (nb + 1) * words: post-dominator sets */
  uint8_t *in;       /* nb * fs: varying bits at block entries */
  uint8_t *cur;      /* fs: the bits while a block is replayed */
  uint8_t *vbr;      /* per block: ends in a live two-way varying branch */
  uint8_t *div;      /* per block: inside some varying branch's region */
  uint8_t *hasbar;   /* per block: calls gpu.barrier or a function that does */
  int *cause;        /* per block: the branch block whose region holds it */
  int *stack;        /* nb + 1: the worklist, and the region walks */
  gj_ty *ty;         /* the replayed types */
  usum sum;
} ufn;

static int analyze(uctx *u, gj_fn *fn, uint64_t vparams, usum *out);

static int cond_line(const ufn *a, int b)
{
  return a->fn->proto->ins[a->fn->blocks[a->cause[b]].end - 1].line;
}

static void set_bad(ufn *a, int kind, int i, int cline, int inner,
                    const gj_fn *callee)
{
  if (a->sum.bad != BAD_NONE) return;
  a->sum.bad = kind;
  a->sum.bad_ins = i;
  a->sum.cond_line = cline;
  a->sum.inner_line = inner;
  a->sum.callee = callee;
}

/* OR of the bits of slots [s, s + n). */
static uint8_t vor(const ufn *a, int s, int n)
{
  uint8_t x = 0;
  int k;
  for (k = s; k < s + n && k < a->fs; k++) x |= a->cur[k];
  return x;
}

/* The varying-ness of a call's results (*x); in report mode, flags a
** barrier it reaches under varying control.  st: the state before it. */
static int call_bits(ufn *a, int b, int i, const gj_tstate *st, int report,
                     int *fslot, int *nres, uint8_t *x)
{
  gj_cs *cs = a->u->cs;
  const gj_ins *in = &a->fn->proto->ins[i];
  gj_ty f, args[GJ_MAXPARAMS];
  gj_fn *callee;
  usum s;
  uint64_t vp = 0;
  int arg0, nargs, j;
  gj_call_shape(cs, in, st, fslot, &arg0, &nargs, nres);
  f = st->slot[*fslot];
  /* the typer accepted the call: f is a struct's ctype (a constructor,
  ** which reaches no barrier: its result varies as its arguments do) or a
  ** known function */
  if (f.k != GJ_T_KV) {
    *x = vor(a, arg0, nargs);
    return 0;
  }
  if (cs->kv[f.aux].kind == GJ_KV_INTR) {
    int intr = cs->kv[f.aux].intr;
    *x = vor(a, arg0, nargs);
    if (intr == GJ_I_GLOBAL_ID || intr == GJ_I_LOCAL_ID ||
        (intr >= GJ_I_ATOMIC_ADD && intr <= GJ_I_ATOMIC_CAS) ||
        intr == GJ_I_DERIVATIVE || intr == GJ_I_GRADIENT)   /* f may read ids */
      *x = 1;
    if (intr == GJ_I_BARRIER) a->hasbar[b] = 1;
    if (report && intr == GJ_I_BARRIER && a->div[b])
      set_bad(a, BAD_BARRIER, i, cond_line(a, b), 0, NULL);
    return 0;
  }
  /* the specialization the typer chose: the same argument types as in
  ** type_call, where a slot with no value yet reads as nil */
  for (j = 0; j < nargs; j++) {
    args[j] = st->slot[arg0 + j];
    if (args[j].k == GJ_T_UNDEF) args[j].k = GJ_T_NIL;
    if (j < 64 && vor(a, arg0 + j, 1)) vp |= 1ull << j;
  }
  if (gj_typer_callee(cs, f.aux, nargs, args, in->line, a->fn, &callee))
    return -1;
  if (analyze(a->u, callee, vp, &s)) return -1;
  *x = (uint8_t)s.ret_varying;
  if (callee->uses_barrier) a->hasbar[b] = 1;
  if (report && callee->uses_barrier) {
    if (a->div[b])
      set_bad(a, BAD_CALL, i, cond_line(a, b), 0, callee);
    else if (s.bad != BAD_NONE)
      set_bad(a, BAD_ARGS, i, s.cond_line,
              callee->proto->ins[s.bad_ins].line, callee);
  }
  return 0;
}

/* Replay block b from its entry bits and types (types as gj_typer_block
** does, to know what each call calls), leaving its exit bits in a->cur.
** Writes in a region are varying: the items that took the other path hold
** another value at the join. */
static int pass_block(ufn *a, int b, int report)
{
  gj_cs *cs = a->u->cs;
  gj_fn *fn = a->fn;
  const gj_block *blk = &fn->blocks[b];
  uint8_t *v = a->cur, d = a->div[b], cond = 0;
  gj_tstate st;
  gj_edges ed;
  int i, k;
  st.slot = a->ty;
  st.mr_base = -1;
  st.mr_n = 0;
  memcpy(a->ty, gj_fn_entry(fn, b), sizeof(gj_ty) * (size_t)a->fs);
  memcpy(v, a->in + (size_t)b * (size_t)a->fs, (size_t)a->fs);
  for (i = blk->start; i < blk->end; i++) {
    const gj_ins *in = &fn->proto->ins[i];
    int dst = in->a, ndst = 0;
    uint8_t x = 0;
    switch (in->op) {
    case GJ_BC_ISLT: case GJ_BC_ISGE: case GJ_BC_ISLE: case GJ_BC_ISGT:
    case GJ_BC_ISEQV: case GJ_BC_ISNEV:
      cond = vor(a, in->a, 1) | vor(a, in->d, 1);
      break;
    case GJ_BC_ISEQN: case GJ_BC_ISNEN: case GJ_BC_ISEQP: case GJ_BC_ISNEP:
      cond = vor(a, in->a, 1);   /* d is a constant */
      break;
    case GJ_BC_ISTC: case GJ_BC_ISFC: case GJ_BC_IST: case GJ_BC_ISF:
      cond = vor(a, in->d, 1);
      break;
    case GJ_BC_MOV: case GJ_BC_NOT: case GJ_BC_UNM: case GJ_BC_LEN:
      x = vor(a, in->d, 1);
      ndst = 1;
      break;
    case GJ_BC_ADDVN: case GJ_BC_SUBVN: case GJ_BC_MULVN: case GJ_BC_DIVVN:
    case GJ_BC_MODVN: case GJ_BC_ADDNV: case GJ_BC_SUBNV: case GJ_BC_MULNV:
    case GJ_BC_DIVNV: case GJ_BC_MODNV: case GJ_BC_TGETS: case GJ_BC_TGETB:
      x = vor(a, in->b, 1);
      ndst = 1;
      break;
    case GJ_BC_ADDVV: case GJ_BC_SUBVV: case GJ_BC_MULVV: case GJ_BC_DIVVV:
    case GJ_BC_MODVV: case GJ_BC_POW: case GJ_BC_TGETV: case GJ_BC_TGETR:
      x = vor(a, in->b, 1) | vor(a, in->c, 1);
      ndst = 1;
      break;
    case GJ_BC_KSTR: case GJ_BC_KSHORT: case GJ_BC_KNUM: case GJ_BC_KPRI:
    case GJ_BC_UGET: case GJ_BC_GGET:
      ndst = 1;
      break;
    case GJ_BC_KNIL:
      ndst = (int)in->d - in->a + 1;
      break;
    case GJ_BC_CALL: case GJ_BC_CALLM:
      if (call_bits(a, b, i, &st, report, &dst, &ndst, &x)) return -1;
      break;   /* ndst < 0: as many as the callee returns (MULTRES) */
    case GJ_BC_CALLT: case GJ_BC_CALLMT: {
      int fslot, nres;
      if (call_bits(a, b, i, &st, report, &fslot, &nres, &x)) return -1;
      a->sum.ret_varying |= x | d;
      break;
    }
    case GJ_BC_RET: case GJ_BC_RET1: case GJ_BC_RETM:
      k = in->op == GJ_BC_RET1 ? 1
        : in->op == GJ_BC_RET  ? (int)in->d - 1
                               : (int)in->d + st.mr_n;
      a->sum.ret_varying |= vor(a, in->a, k) | d;
      break;
    case GJ_BC_RET0:
      a->sum.ret_varying |= d;
      break;
    case GJ_BC_FORI:   /* a: index, a+1: limit, a+2: step, a+3: the variable */
      x = cond = vor(a, in->a, 3);
      ndst = 4;
      break;
    case GJ_BC_FORL:
      cond = vor(a, in->a, 3);
      v[in->a] = v[in->a + 3] = cond | d;
      break;
    default:   /* stores, jumps: no slot written */
      break;
    }
    ed.live[0] = ed.live[1] = 1;
    ed.copy_a = -1;
    if (gj_typer_step(cs, fn, i, &st, &ed)) return -1;
    if (ed.dead) break;   /* error(msg): the rest does not run */
    if (ndst < 0) ndst = st.mr_n;
    for (k = dst; k < dst + ndst && k < a->fs; k++) v[k] = x | d;
  }
  if (blk->nsucc == 2 && a->live[2 * b] && a->live[2 * b + 1] && cond)
    a->vbr[b] = 1;
  return 0;
}

/* OR block b's exit bits into its live successors' entries, the jump edge
** of ISTC/ISFC copying slot d into slot a; queue those that changed. */
static void propagate(ufn *a, int b, uint8_t *queued, int *nwork)
{
  const gj_block *blk = &a->fn->blocks[b];
  int s, k;
  for (s = 0; s < blk->nsucc; s++) {
    int t = blk->succ[s], changed = 0;
    uint8_t *e = a->in + (size_t)t * (size_t)a->fs;
    if (!a->live[2 * b + s]) continue;
    for (k = 0; k < a->fs; k++) {
      uint8_t x = a->cur[k];
      if (s == 1 && k == a->copy[2 * b]) x = a->cur[a->copy[2 * b + 1]] | a->div[b];
      if (x && !e[k]) e[k] = changed = 1;
    }
    if (changed && !queued[t]) {
      queued[t] = 1;
      a->stack[(*nwork)++] = t;
    }
  }
}

/* The varying bits at every block entry, to a fixed point (the bits only
** grow, so this terminates). */
static int flow(ufn *a, uint8_t *queued)
{
  int b, nwork = 0;
  for (b = a->nb - 1; b >= 0; b--)
    if (a->fn->reached[b]) {
      queued[b] = 1;
      a->stack[nwork++] = b;
    }
  while (nwork > 0) {
    b = a->stack[--nwork];
    queued[b] = 0;
    if (pass_block(a, b, 0)) return -1;
    propagate(a, b, queued, &nwork);
  }
  return 0;
}

/* --- Post-dominators --------------------------------------------------- */

#define PD(n) (a->pd + (size_t)(n) * (size_t)a->words)

static int pd_size(const ufn *a, int n)
{
  uint64_t w;
  int k, c = 0;
  for (k = 0; k < a->words; k++)
    for (w = PD(n)[k]; w; w &= w - 1) c++;
  return c;
}

/* The analysis graph: live edges, and an edge to the exit from each return
** and from each block that cannot reach one (an endless loop), so that
** every reached block has post-dominators.  Then the sets, iterated:
** pd(n) = {n} + the intersection of pd(s) over n's successors. */
static void postdom(ufn *a, uint8_t *mark)
{
  int nb = a->nb, b, s, k, changed;
  for (b = 0; b < nb; b++) {
    const gj_block *blk = &a->fn->blocks[b];
    int *o = a->succ + 3 * b, n = 0;
    if (!a->fn->reached[b]) continue;
    for (s = 0; s < blk->nsucc; s++)
      if (a->live[2 * b + s]) o[n++] = blk->succ[s];
    if (blk->nsucc == 0) o[n++] = nb;
  }
  /* mark: reaches the exit, found backwards from the returns */
  for (b = 0; b < nb; b++) mark[b] = 0;
  do {
    changed = 0;
    for (b = 0; b < nb; b++) {
      int *o = a->succ + 3 * b;
      if (mark[b] || !a->fn->reached[b]) continue;
      for (s = 0; s < 3 && o[s] >= 0; s++)
        if (o[s] == nb || mark[o[s]]) {
          mark[b] = changed = 1;
          break;
        }
    }
  } while (changed);
  for (b = 0; b < nb; b++)
    if (a->fn->reached[b] && !mark[b]) {
      int *o = a->succ + 3 * b;
      while (*o >= 0) o++;
      *o = nb;
    }
  for (b = 0; b < nb; b++) memset(PD(b), 0xff, sizeof(uint64_t) * (size_t)a->words);
  memset(PD(nb), 0, sizeof(uint64_t) * (size_t)a->words);
  PD(nb)[nb / 64] = 1ull << (nb % 64);
  do {
    changed = 0;
    for (b = nb - 1; b >= 0; b--) {
      int *o = a->succ + 3 * b;
      if (!a->fn->reached[b]) continue;
      for (k = 0; k < a->words; k++) {
        uint64_t w = ~0ull;
        for (s = 0; s < 3 && o[s] >= 0; s++) w &= PD(o[s])[k];
        if (k == b / 64) w |= 1ull << (b % 64);
        if (w != PD(b)[k]) {
          PD(b)[k] = w;
          changed = 1;
        }
      }
    }
  } while (changed);
}

/* Immediate post-dominator of b: its strict post-dominators form a chain;
** the nearest is the one with one set element fewer. */
static int ipdom(const ufn *a, int b)
{
  int want = pd_size(a, b) - 1, d;
  for (d = 0; d <= a->nb; d++)
    if (d != b && (PD(b)[d / 64] >> (d % 64) & 1) && pd_size(a, d) == want)
      return d;
  return a->nb;
}

/* Mark the region of each varying branch: the blocks reached from it
** before its immediate post-dominator (seen[n] == b + 1: n visited for b).
** 1 when a block was newly marked. */
static int regions(ufn *a, int *seen)
{
  int b, grew = 0;
  for (b = 0; b < a->nb; b++) {
    int stop, nwork = 0, s;
    if (!a->fn->reached[b] || !a->vbr[b]) continue;
    stop = ipdom(a, b);
    for (s = 0; s < 2; s++) {
      int t = a->fn->blocks[b].succ[s];
      if (t != stop && seen[t] != b + 1) {
        seen[t] = b + 1;
        a->stack[nwork++] = t;
      }
    }
    while (nwork > 0) {
      int n = a->stack[--nwork];
      const int *o = a->succ + 3 * n;
      if (!a->div[n]) {
        a->div[n] = 1;
        a->cause[n] = b;
        grew = 1;
      }
      for (s = 0; s < 3 && o[s] >= 0; s++)
        if (o[s] != stop && o[s] != a->nb && seen[o[s]] != b + 1) {
          seen[o[s]] = b + 1;
          a->stack[nwork++] = o[s];
        }
    }
  }
  return grew;
}

/* Mark the join (immediate post-dominator) of every live two-way branch
** whose paths reach a barrier before it (gj_block.join_barrier).  Such a
** branch is uniform (else the check refuses the kernel), so every work
** item of a group reaches its join together.  seen as in regions(), with
** tags of its own (-(b + 1)). */
static void joins(ufn *a, int *seen)
{
  int b;
  for (b = 0; b < a->nb; b++) {
    int stop, nwork = 0, s, bar = 0;
    if (!a->fn->reached[b] || a->fn->blocks[b].nsucc != 2 ||
        !a->live[2 * b] || !a->live[2 * b + 1])
      continue;
    stop = ipdom(a, b);
    if (stop == a->nb) continue;   /* the paths meet only at the returns */
    for (s = 0; s < 2; s++) {
      int t = a->fn->blocks[b].succ[s];
      if (t != stop && seen[t] != -(b + 1)) {
        seen[t] = -(b + 1);
        a->stack[nwork++] = t;
      }
    }
    while (nwork > 0) {
      int n = a->stack[--nwork];
      const int *o = a->succ + 3 * n;
      bar |= a->hasbar[n];
      for (s = 0; s < 3 && o[s] >= 0; s++)
        if (o[s] != stop && o[s] != a->nb && seen[o[s]] != -(b + 1)) {
          seen[o[s]] = -(b + 1);
          a->stack[nwork++] = o[s];
        }
    }
    if (bar) a->fn->blocks[stop].join_barrier = 1;
  }
}

/* --- One function, one context ----------------------------------------- */

static int analyze(uctx *u, gj_fn *fn, uint64_t vparams, usum *out)
{
  gj_cs *cs = u->cs;
  ufn a;
  gj_tstate st;
  gj_edges ed;
  uint8_t *flags = NULL;
  int *seen = NULL;
  int b, k, rc = -1;
  size_t nb, fs;
  for (k = 0; k < u->n; k++)
    if (u->memo[k].fn == fn && u->memo[k].vparams == vparams) {
      *out = u->memo[k];
      return 0;
    }
  memset(&a, 0, sizeof(a));
  a.u = u;
  a.fn = fn;
  a.nb = fn->nblocks;
  a.fs = fn->proto->framesize;
  a.words = (a.nb + 1 + 63) / 64;
  a.sum.fn = fn;
  a.sum.vparams = vparams;
  nb = (size_t)a.nb + 1;
  fs = (size_t)a.fs + 1;
  a.live = calloc(2 * nb, 1);
  a.copy = malloc(2 * nb * sizeof(int));
  a.succ = malloc(3 * nb * sizeof(int));
  a.pd = calloc(nb * (size_t)a.words, sizeof(uint64_t));
  a.in = calloc(nb * fs, 1);
  a.cur = calloc(fs, 1);
  a.vbr = calloc(nb, 1);
  a.div = calloc(nb, 1);
  a.hasbar = calloc(nb, 1);
  a.cause = malloc(nb * sizeof(int));
  a.stack = malloc(nb * sizeof(int));
  a.ty = calloc(fs, sizeof(gj_ty));
  flags = calloc(nb, 1);
  seen = calloc(nb, sizeof(int));
  if (!a.live || !a.copy || !a.succ || !a.pd || !a.in || !a.cur || !a.vbr ||
      !a.div || !a.hasbar || !a.cause || !a.stack || !a.ty || !flags || !seen) {
    gj_err_set(cs->err, "out of memory");
    goto done;
  }
  for (k = 0; k < 3 * a.nb; k++) a.succ[k] = -1;
  for (k = 0; k < a.nb; k++) a.cause[k] = -1;
  /* the edges the typer found live, and ISTC/ISFC copies, once */
  st.slot = a.ty;
  for (b = 0; b < a.nb; b++) {
    a.copy[2 * b] = a.copy[2 * b + 1] = -1;
    if (!fn->reached[b]) continue;
    if (gj_typer_block(cs, fn, b, &st, &ed)) goto done;
    a.live[2 * b] = (uint8_t)ed.live[0];
    a.live[2 * b + 1] = (uint8_t)ed.live[1];
    if (ed.copy_a >= 0) {
      a.copy[2 * b] = ed.copy_a;
      a.copy[2 * b + 1] = ed.copy_d;
    }
  }
  postdom(&a, flags);
  for (k = 0; k < fn->nparams && k < 64 && k < a.fs; k++)
    a.in[k] = (uint8_t)(vparams >> k & 1);
  /* values and regions feed each other: repeat until no region grows */
  do {
    memset(flags, 0, nb);
    if (flow(&a, flags)) goto done;
  } while (regions(&a, seen));
  if (fn->uses_barrier) {
    for (b = 0; b < a.nb && a.sum.bad == BAD_NONE; b++)
      if (fn->reached[b] && pass_block(&a, b, 1)) goto done;
    if (a.sum.bad == BAD_NONE) joins(&a, seen);
  }
  if (u->n == u->max) {
    int m = u->max ? 2 * u->max : 8;
    usum *n = realloc(u->memo, sizeof(usum) * (size_t)m);
    if (!n) {
      gj_err_set(cs->err, "out of memory");
      goto done;
    }
    u->memo = n;
    u->max = m;
  }
  u->memo[u->n++] = a.sum;
  *out = a.sum;
  rc = 0;
done:
  free(a.live);
  free(a.copy);
  free(a.succ);
  free(a.pd);
  free(a.in);
  free(a.cur);
  free(a.vbr);
  free(a.div);
  free(a.hasbar);
  free(a.cause);
  free(a.stack);
  free(a.ty);
  free(flags);
  free(seen);
  return rc;
}

int gj_uniform_check(gj_cs *cs, gj_fn *fn)
{
  static const char *const must =
      ": every work item of a group must reach the same barriers";
  uctx u;
  usum s;
  int rc;
  memset(&u, 0, sizeof(u));
  u.cs = cs;
  rc = analyze(&u, fn, 0, &s);
  free(u.memo);
  if (rc) return -1;
  switch (s.bad) {
  case BAD_BARRIER:
    return gj_typer_error(cs, fn, s.bad_ins, "gpu.barrier() in control flow "
                          "that depends on the work item (the condition at "
                          "line %d depends on gpu.global_id, gpu.local_id or "
                          "an atomic)%s", s.cond_line, must);
  case BAD_CALL:
    return gj_typer_error(cs, fn, s.bad_ins, "call to '%s', which calls "
                          "gpu.barrier(), in control flow that depends on the "
                          "work item (the condition at line %d depends on "
                          "gpu.global_id, gpu.local_id or an atomic)%s",
                          s.callee->proto->name, s.cond_line, must);
  case BAD_ARGS:
    return gj_typer_error(cs, fn, s.bad_ins, "call to '%s' with an argument "
                          "that depends on the work item: the gpu.barrier() "
                          "it reaches at line %d is then in control flow that "
                          "depends on the work item (the condition at line "
                          "%d)%s", s.callee->proto->name, s.inner_line,
                          s.cond_line, must);
  default:
    return 0;
  }
}
