/*
** The work-item vectorizer, part five: any reducible control flow, by
** linearization with masks (the way RV and whole-function vectorizers do,
** without keeping uniform branches; Moll & Hack, PLDI 2018).  Used when
** the shapes of native_vec_if.c and native_vec_loop.c do not cover a
** kernel: nested varying ifs, early returns, breaks out of loops, loops
** in varying ifs and in loops the lanes leave apart, stores and loads
** under any of these.
**
** The body's blocks are put in one order: a topological order of its
** edges without the inner loops' back edges, each inner loop's blocks
** together, its header first (a loop runs as one item of the order around
** it).  The vector code runs them in that order, each block under a mask:
**   - the header and blocks that every work item runs once (they
**     dominate the latch, in no inner loop): every lane (no mask);
**   - another block: the lanes of its incoming edges (an edge's lanes:
**     its block's and, for a conditional branch, the condition's or its
**     negation's), OR'ed; masks are combined by selects, never ANDs, so a
**     lane that is off is false even where its values are poison;
**   - an inner loop: its header's mask is a phi of the lanes that enter
**     and those that go round again; the loop runs again while any lane
**     does (the back edge of the vector code), until none is left.  Each
**     exit edge gathers the lanes that left through it (an OR over the
**     iterations) and, for each phi at its target, their values (a select
**     per iteration): after the loop those are the edge's lanes and the
**     phi's incoming value.  The loops are in LCSSA form (LLVM's pass,
**     before collect), so values leave a loop only through such phis.
** A phi of a block other than a loop header is a select per incoming edge
** on the edge's lanes; a loop header's phi blends its entry edges before
** the loop and its back edges at the loop's end.  Work done under a mask:
**   - loads and stores masked (native_vec_build.c's masked forms), an
**     atomic per lane that is on (emit_atomic);
**   - integer division and remainder divide the lanes that are off by 1;
**   - a call with effects is refused ("a call with effects under a mask");
**     calls without effects run in every lane, as in native_vec_loop.c.
** A lane's values in blocks where it is on are its work item's in the
** scalar code, and only those reach memory or a later block: results are
** bitwise the scalar code's.  A loop no lane enters runs once with every
** lane off (no effect), so a loop runs no longer than in the scalar code
** plus one iteration.
**
** Refused (the note says why): an irreducible cycle, a switch, a body
** with barriers (native_vec_frame.c keeps its own shapes).
*/
#include "native_vec_lin.h"

#include <stdlib.h>
#include <string.h>

static int is_back(const vctx *x, const vlin *L, int p, int s)
{
  if (x->bbs[p] == x->latch) return 1;
  return L->loop[s] >= 0 && L->loops[L->loop[s]].head == s && vl_in_loop(L, L->loop[s], p);
}

static int dominates(const vlin *L, int a, int b)
{
  while (b > a) b = L->idom[b];
  return a == b;
}

/* Dominators (Cooper, Harvey, Kennedy) over x->bbs in reverse postorder. */
static void doms(const vctx *x, vlin *L)
{
  size_t i;
  int changed = 1;
  for (i = 0; i < L->n; i++) L->idom[i] = -1;
  L->idom[0] = 0;
  while (changed) {
    changed = 0;
    for (i = 1; i < L->n; i++) {
      int nd = -1;
      size_t p;
      for (p = 0; p < L->n; p++) {
        int j, ns = vl_nsucc(x->bbs[p]);
        if (L->idom[p] < 0 || x->bbs[p] == x->latch) continue;
        for (j = 0; j < ns; j++)
          if (vl_succ(x->bbs[p], j) == x->bbs[i]) break;
        if (j == ns) continue;
        if (nd < 0) nd = (int)p;
        else {
          int a = nd, b = (int)p;
          while (a != b) {
            while (a > b) a = L->idom[a];
            while (b > a) b = L->idom[b];
          }
          nd = a;
        }
      }
      if (nd >= 0 && L->idom[i] != nd) {
        L->idom[i] = nd;
        changed = 1;
      }
    }
  }
}

/* The inner loops: for each header (in order, outer ones first) the blocks
** that reach a back edge's source without passing the header.  -1 with
** x->why for an irreducible cycle. */
static int loops(vctx *x, vlin *L)
{
  size_t h, i;
  int *stk = malloc(L->n * sizeof(int));
  if (!stk) return -1;
  for (i = 0; i < L->n; i++) L->loop[i] = -1;
  for (h = 1; h < L->n; h++) {
    int sp = 0, l = L->nloops, any = 0;
    for (i = h; i < L->n; i++) {
      int j, ns = x->bbs[i] == x->latch ? 0 : vl_nsucc(x->bbs[i]);
      for (j = 0; j < ns; j++)
        if (vl_succ(x->bbs[i], j) == x->bbs[h]) {
          if (!dominates(L, (int)h, (int)i)) {
            free(stk);
            return vx_refuse(x, "an irreducible cycle");
          }
          stk[sp++] = (int)i;
          any = 1;
          break;
        }
    }
    if (!any) continue;
    L->loops[l].head = (int)h;
    L->loops[l].parent = L->loop[h];
    L->nloops++;
    L->loop[h] = l;
    while (sp) {
      int b = stk[--sp];
      size_t p;
      if (b == (int)h || L->loop[b] == l) continue;
      L->loop[b] = l;
      for (p = 1; p < L->n; p++) {
        int j, ns = x->bbs[p] == x->latch ? 0 : vl_nsucc(x->bbs[p]);
        for (j = 0; j < ns; j++)
          if (vl_succ(x->bbs[p], j) == x->bbs[b] && L->loop[p] != l) {
            stk[sp++] = (int)p;
            break;
          }
      }
    }
  }
  /* any other edge to an earlier block: irreducible */
  for (i = 0; i < L->n; i++) {
    int j, ns = x->bbs[i] == x->latch ? 0 : vl_nsucc(x->bbs[i]);
    for (j = 0; j < ns; j++) {
      int s = vl_bidx(x, vl_succ(x->bbs[i], j));
      if (s < 0) {
        free(stk);
        return vx_refuse(x, "an unexpected loop shape");
      }
      if (s <= (int)i && !is_back(x, L, (int)i, s)) {
        free(stk);
        return vx_refuse(x, "an irreducible cycle");
      }
    }
  }
  free(stk);
  return 0;
}

/* The block or loop standing for block b in region r. */
static int rep(const vlin *L, int r, int b)
{
  int k = L->loop[b];
  if (k == r) return b;
  while (L->loops[k].parent != r) k = L->loops[k].parent;
  return L->loops[k].head;
}

/* Append region r's order (r: a loop, or -1 for the body). */
static int order(vctx *x, vlin *L, int r, int *deg)
{
  size_t i;
  int head = r < 0 ? 0 : L->loops[r].head, left = 0, latch = vl_bidx(x, x->latch);
  for (i = 0; i < L->n; i++) deg[i] = -1;
  for (i = 0; i < L->n; i++)
    if (vl_in_loop(L, r, (int)i) && rep(L, r, (int)i) == (int)i) {
      deg[i] = 0;
      left++;
    }
  for (i = 0; i < L->n; i++) {
    int j, ns = x->bbs[i] == x->latch ? 0 : vl_nsucc(x->bbs[i]);
    if (!vl_in_loop(L, r, (int)i)) continue;
    for (j = 0; j < ns; j++) {
      int s = vl_bidx(x, vl_succ(x->bbs[i], j));
      if (!vl_in_loop(L, r, s) || s == head || rep(L, r, s) == rep(L, r, (int)i)) continue;
      deg[rep(L, r, s)]++;
    }
  }
  while (left) {
    int pick = -1;
    for (i = 0; i < L->n && pick < 0; i++)
      if (deg[i] == 0 && (r >= 0 || (int)i != latch || left == 1)) pick = (int)i;
    if (pick < 0) return vx_refuse(x, "an irreducible cycle");
    deg[pick] = -1;
    left--;
    if (L->loop[pick] != r) {
      int l = L->loop[pick], *sub = malloc(L->n * sizeof(int)), e;
      while (L->loops[l].parent != r) l = L->loops[l].parent;
      if (!sub) return -1;
      L->ord[L->nord++] = -2 - l;
      e = order(x, L, l, sub);
      free(sub);
      if (e) return e;
      L->ord[L->nord++] = -2 - L->nloops - l;
    } else {
      L->ord[L->nord++] = pick;
    }
    for (i = 0; i < L->n; i++) {
      int j, ns = x->bbs[i] == x->latch ? 0 : vl_nsucc(x->bbs[i]);
      if (!vl_in_loop(L, r, (int)i) || rep(L, r, (int)i) != pick) continue;
      for (j = 0; j < ns; j++) {
        int s = vl_bidx(x, vl_succ(x->bbs[i], j));
        if (!vl_in_loop(L, r, s) || s == head || rep(L, r, s) == pick) continue;
        deg[rep(L, r, s)]--;
      }
    }
  }
  return 0;
}

int vx_lin_plan(vctx *x)
{
  vlin *L = calloc(1, sizeof(vlin));
  size_t i;
  int *deg, latch, unreach = 0;
  if (!L) return -1;
  x->lin = L;
  L->n = x->nbbs;
  for (i = 0; i < L->n; i++) vx_get(x, LLVMBasicBlockAsValue(x->bbs[i]))->stride = (int64_t)i;
  L->idom = malloc(L->n * sizeof(int));
  L->loop = malloc(L->n * sizeof(int));
  L->loops = calloc(L->n, sizeof(lloop));
  L->ord = malloc(3 * L->n * sizeof(int));
  L->mask = calloc(L->n, sizeof(LLVMValueRef));
  L->em = calloc(2 * L->n, sizeof(LLVMValueRef));
  L->full = calloc(L->n, 1);
  deg = malloc(L->n * sizeof(int));
  if (!L->idom || !L->loop || !L->loops || !L->ord || !L->mask || !L->em || !L->full ||
      !deg) {
    free(deg);
    return -1;
  }
  doms(x, L);
  for (i = 0; i < L->n; i++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(x->bbs[i]);
    if (t && (LLVMIsASwitchInst(t) || (!LLVMIsABranchInst(t) && !LLVMIsAUnreachableInst(t)))) {
      free(deg);
      return vx_refuse_at(x, t, "a switch or other branch under a mask");
    }
  }
  if (loops(x, L) || order(x, L, -1, deg)) {
    free(deg);
    return -1;
  }
  free(deg);
  latch = vl_bidx(x, x->latch);
  if (L->nord == 0 || L->ord[0] != 0 || L->ord[L->nord - 1] != latch)
    return vx_refuse(x, "an unexpected loop shape");
  /* every lane runs these (none where a block ends in unreachable: its
  ** lanes would go on) */
  for (i = 0; i < L->n; i++)
    if (LLVMIsAUnreachableInst(LLVMGetBasicBlockTerminator(x->bbs[i]))) unreach = 1;
  for (i = 0; i < L->n && !unreach; i++)
    L->full[i] = L->loop[i] < 0 && dominates(L, (int)i, latch);
  x->lin_loops = L->nloops;
  return 0;
}

int vx_lin_masked(const vctx *x, LLVMBasicBlockRef bb)
{
  int b;
  if (!x->lin) return 0;
  b = vl_bidx(x, bb);
  return b >= 0 && !x->lin->full[b];
}

int vx_lin_in_loop(const vctx *x, LLVMBasicBlockRef bb)
{
  int b;
  if (!x->lin) return 0;
  b = vl_bidx(x, bb);
  return b >= 0 && x->lin->loop[b] >= 0;
}

int vx_lin_phi_varying(vctx *x, LLVMValueRef phi)
{
  vlin *L = x->lin;
  int b = vl_bidx(x, LLVMGetInstructionParent(phi)), l = L->loop[b];
  unsigned i, n = LLVMCountIncoming(phi), nent = 0, nback = 0;
  if (l >= 0 && L->loops[l].head == b) {
    for (i = 0; i < n; i++) {
      int p = vl_bidx(x, LLVMGetIncomingBlock(phi, i));
      if (!vl_in_loop(L, l, p)) nent++;
      else {
        nback++;
        if (L->loop[p] != l) return 1;
      }
    }
    return nent != 1 || nback != 1;
  }
  if (n != 1) return 1;
  return vl_is_exit(L, vl_bidx(x, LLVMGetIncomingBlock(phi, 0)), b);
}

int vx_lin_line(const vctx *x, LLVMBasicBlockRef bb)
{
  unsigned kind = LLVMGetMDKindIDInContext(x->c, "gj.line", 7);
  int b = x->lin ? vl_bidx(x, bb) : -1;
  while (b > 0) {
    LLVMValueRef md;
    b = x->lin->idom[b];
    md = LLVMGetMetadata(LLVMGetBasicBlockTerminator(x->bbs[b]), kind);
    if (md && LLVMGetMDNodeNumOperands(md) == 1) {
      LLVMValueRef v;
      LLVMGetMDNodeOperands(md, &v);
      if (v && LLVMIsAConstantInt(v)) return (int)LLVMConstIntGetZExtValue(v);
    }
  }
  return 0;
}

void vx_lin_free(vctx *x)
{
  vlin *L = x->lin;
  int l;
  if (!L) return;
  for (l = 0; l < L->nloops; l++) {
    free(L->loops[l].entry);
    free(L->loops[l].acc);
    free(L->loops[l].accphi);
    free(L->loops[l].ex);
  }
  free(L->idom);
  free(L->loop);
  free(L->loops);
  free(L->ord);
  free(L->mask);
  free(L->em);
  free(L->full);
  free(L->uni);
  free(L->stub);
  free(L->kv);
  free(L);
  x->lin = NULL;
}
