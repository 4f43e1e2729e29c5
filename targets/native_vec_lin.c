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
#include "native_vec.h"

#include <stdlib.h>
#include <string.h>

typedef struct lloop {
  int head, parent;
  LLVMBasicBlockRef post;       /* building: after the loop */
  LLVMValueRef mphi, *entry;    /* the mask's phi; header phis' entry values */
  LLVMValueRef *acc, *accphi;   /* per exit edge (ex[]): its lanes so far */
  size_t nex;
  int *ex;                      /* exit edges: block * 2 + successor */
} lloop;

typedef struct kept {            /* a phi's incoming value on an exit edge */
  int edge;
  LLVMValueRef phi;
  LLVMValueRef v;                /* loop < 0: its value now (after loops) */
  LLVMValueRef kphi;             /* loop >= 0: the loop's phi of it */
  int loop;
} kept;

typedef struct vlin vlin;
struct vlin {
  size_t n;
  int *idom, *loop;             /* per block (x->bbs index); loop: innermost, -1 */
  lloop *loops;
  int nloops;
  int *ord;                     /* the order: block i >= 0; loop start -2 - l;
                                ** loop end -2 - nloops - l */
  size_t nord;
  LLVMValueRef *mask, *em;      /* per block; per edge (block * 2 + j) */
  char *full;
  kept *kv;
  size_t nkv, capkv;
};

static int bidx(const vctx *x, LLVMBasicBlockRef bb)
{
  vent *e = vx_get(x, LLVMBasicBlockAsValue(bb));
  return e ? (int)e->stride : -1;
}

static int nsucc(LLVMBasicBlockRef bb)
{
  LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
  return t ? (int)LLVMGetNumSuccessors(t) : 0;
}

static LLVMBasicBlockRef succ(LLVMBasicBlockRef bb, int j)
{
  return LLVMGetSuccessor(LLVMGetBasicBlockTerminator(bb), (unsigned)j);
}

/* Does loop l contain block b (l == -1: the body)? */
static int in_loop(const vlin *L, int l, int b)
{
  int k;
  if (l < 0) return 1;
  for (k = L->loop[b]; k >= 0; k = L->loops[k].parent)
    if (k == l) return 1;
  return 0;
}

static int is_back(const vctx *x, const vlin *L, int p, int s)
{
  if (x->bbs[p] == x->latch) return 1;
  return L->loop[s] >= 0 && L->loops[L->loop[s]].head == s && in_loop(L, L->loop[s], p);
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
        int j, ns = nsucc(x->bbs[p]);
        if (L->idom[p] < 0 || x->bbs[p] == x->latch) continue;
        for (j = 0; j < ns; j++)
          if (succ(x->bbs[p], j) == x->bbs[i]) break;
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
      int j, ns = x->bbs[i] == x->latch ? 0 : nsucc(x->bbs[i]);
      for (j = 0; j < ns; j++)
        if (succ(x->bbs[i], j) == x->bbs[h]) {
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
        int j, ns = x->bbs[p] == x->latch ? 0 : nsucc(x->bbs[p]);
        for (j = 0; j < ns; j++)
          if (succ(x->bbs[p], j) == x->bbs[b] && L->loop[p] != l) {
            stk[sp++] = (int)p;
            break;
          }
      }
    }
  }
  /* any other edge to an earlier block: irreducible */
  for (i = 0; i < L->n; i++) {
    int j, ns = x->bbs[i] == x->latch ? 0 : nsucc(x->bbs[i]);
    for (j = 0; j < ns; j++) {
      int s = bidx(x, succ(x->bbs[i], j));
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
  int head = r < 0 ? 0 : L->loops[r].head, left = 0, latch = bidx(x, x->latch);
  for (i = 0; i < L->n; i++) deg[i] = -1;
  for (i = 0; i < L->n; i++)
    if (in_loop(L, r, (int)i) && rep(L, r, (int)i) == (int)i) {
      deg[i] = 0;
      left++;
    }
  for (i = 0; i < L->n; i++) {
    int j, ns = x->bbs[i] == x->latch ? 0 : nsucc(x->bbs[i]);
    if (!in_loop(L, r, (int)i)) continue;
    for (j = 0; j < ns; j++) {
      int s = bidx(x, succ(x->bbs[i], j));
      if (!in_loop(L, r, s) || s == head || rep(L, r, s) == rep(L, r, (int)i)) continue;
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
      int j, ns = x->bbs[i] == x->latch ? 0 : nsucc(x->bbs[i]);
      if (!in_loop(L, r, (int)i) || rep(L, r, (int)i) != pick) continue;
      for (j = 0; j < ns; j++) {
        int s = bidx(x, succ(x->bbs[i], j));
        if (!in_loop(L, r, s) || s == head || rep(L, r, s) == pick) continue;
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
  int *deg, latch;
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
  for (i = 0; i < L->n; i++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(x->bbs[i]);
    if (t && (LLVMIsASwitchInst(t) || (!LLVMIsABranchInst(t) && !LLVMIsAUnreachableInst(t)))) {
      free(deg);
      return vx_refuse_at(x, t, "a switch or other branch under a mask");
    }
  }
  doms(x, L);
  if (loops(x, L) || order(x, L, -1, deg)) {
    free(deg);
    return -1;
  }
  free(deg);
  latch = bidx(x, x->latch);
  if (L->nord == 0 || L->ord[0] != 0 || L->ord[L->nord - 1] != latch)
    return vx_refuse(x, "an unexpected loop shape");
  for (i = 0; i < L->n; i++)
    L->full[i] = L->loop[i] < 0 && dominates(L, (int)i, latch);
  x->lin_loops = L->nloops;
  return 0;
}

int vx_lin_masked(const vctx *x, LLVMBasicBlockRef bb)
{
  int b;
  if (!x->lin) return 0;
  b = bidx(x, bb);
  return b >= 0 && !x->lin->full[b];
}

/* Is the edge p -> s (s: p's successor j) an exit of an inner loop? */
static int is_exit(const vlin *L, int p, int s)
{
  return L->loop[p] >= 0 && !in_loop(L, L->loop[p], s);
}

int vx_lin_phi_varying(vctx *x, LLVMValueRef phi)
{
  vlin *L = x->lin;
  int b = bidx(x, LLVMGetInstructionParent(phi)), l = L->loop[b];
  unsigned i, n = LLVMCountIncoming(phi), nent = 0, nback = 0;
  if (l >= 0 && L->loops[l].head == b) {
    for (i = 0; i < n; i++) {
      int p = bidx(x, LLVMGetIncomingBlock(phi, i));
      if (!in_loop(L, l, p)) nent++;
      else {
        nback++;
        if (L->loop[p] != l) return 1;
      }
    }
    return nent != 1 || nback != 1;
  }
  if (n != 1) return 1;
  return is_exit(L, bidx(x, LLVMGetIncomingBlock(phi, 0)), b);
}

/* -- building ------------------------------------------------------------ */

static LLVMValueRef land(vctx *x, LLVMValueRef m, LLVMValueRef c)
{
  return m ? LLVMBuildSelect(x->b, m, c, LLVMConstNull(LLVMTypeOf(c)), "") : c;
}

static LLVMValueRef lor(vctx *x, LLVMValueRef a, LLVMValueRef b)
{
  return LLVMBuildOr(x->b, a, b, "");
}

static LLVMValueRef mty_null(vctx *x)
{
  return LLVMConstNull(vx_vty(x, LLVMInt1TypeInContext(x->c)));
}

static LLVMValueRef mty_ones(vctx *x)
{
  return LLVMConstAllOnes(vx_vty(x, LLVMInt1TypeInContext(x->c)));
}

/* The lanes of edge p -> succ j (NULL: all). */
static LLVMValueRef edge_mask(const vlin *L, int p, int j)
{
  return L->em[2 * p + j];
}

static kept *find_kept(vlin *L, int edge, LLVMValueRef phi, int loop)
{
  size_t i;
  for (i = 0; i < L->nkv; i++)
    if (L->kv[i].edge == edge && L->kv[i].phi == phi && L->kv[i].loop == loop)
      return &L->kv[i];
  return NULL;
}

/* phi's incoming value on edge p -> succ j, as a vector. */
static LLVMValueRef in_value(vctx *x, LLVMValueRef phi, int p, int j)
{
  kept *k = find_kept(x->lin, 2 * p + j, phi, -1);
  unsigned i;
  if (k) return k->v;
  for (i = 0; i < LLVMCountIncoming(phi); i++)
    if (LLVMGetIncomingBlock(phi, i) == x->bbs[p]) return vx_vec(x, LLVMGetIncomingValue(phi, i));
  return LLVMGetPoison(vx_vty(x, LLVMTypeOf(phi)));
}

/* The incoming edges of block b from blocks of loop l (inside: 1) or not
** (0), as block * 2 + j; n of them. */
static int edges_in(const vctx *x, int b, int l, int inside, int *out)
{
  const vlin *L = x->lin;
  size_t p;
  int n = 0;
  for (p = 0; p < L->n; p++) {
    int j, ns = x->bbs[p] == x->latch ? 0 : nsucc(x->bbs[p]);
    if ((l >= 0 && in_loop(L, l, (int)p)) != inside) continue;
    for (j = 0; j < ns; j++)
      if (succ(x->bbs[p], j) == x->bbs[b]) out[n++] = 2 * (int)p + j;
  }
  return n;
}

/* The blend of phi's values on the edges e[0..n) (the first edge's value
** where no edge's lanes are on). */
static LLVMValueRef blend(vctx *x, LLVMValueRef phi, const int *e, int n)
{
  LLVMValueRef v;
  int i;
  if (!n) return LLVMGetPoison(vx_vty(x, LLVMTypeOf(phi)));
  v = in_value(x, phi, e[0] / 2, e[0] % 2);
  for (i = 1; i < n; i++) {
    LLVMValueRef m = edge_mask(x->lin, e[i] / 2, e[i] % 2);
    LLVMValueRef w = in_value(x, phi, e[i] / 2, e[i] % 2);
    v = m ? LLVMBuildSelect(x->b, m, w, v, "") : w;
  }
  return v;
}

static LLVMValueRef mask_of_edges(vctx *x, const int *e, int n)
{
  LLVMValueRef m = NULL;
  int i;
  if (!n) return mty_null(x);
  for (i = 0; i < n; i++) {
    LLVMValueRef em = edge_mask(x->lin, e[i] / 2, e[i] % 2);
    if (!em) return NULL;
    m = m ? lor(x, m, em) : em;
  }
  return m;
}

/* Block b's mask, at the start of its vector block (before its phis'
** selects; a loop header's: the phi made at the loop's start). */
static void enter_block(vctx *x, int b)
{
  vlin *L = x->lin;
  int l = L->loop[b], *e, n;
  LLVMPositionBuilderAtEnd(x->b, vx_vblock(x, x->bbs[b]));
  if (b == 0 || L->full[b]) {
    L->mask[b] = NULL;
    return;
  }
  if (l >= 0 && L->loops[l].head == b) {
    L->mask[b] = L->loops[l].mphi;
    return;
  }
  e = malloc(2 * L->n * sizeof(int));
  if (!e) return;
  n = edges_in(x, b, -1, 0, e);
  L->mask[b] = mask_of_edges(x, e, n);
  free(e);
}

LLVMValueRef vx_lin_mask(const vctx *x, LLVMBasicBlockRef bb)
{
  int b = bidx(x, bb);
  return b >= 0 ? x->lin->mask[b] : NULL;
}

LLVMValueRef vx_lin_phi(vctx *x, LLVMValueRef phi)
{
  vlin *L = x->lin;
  int b = bidx(x, LLVMGetInstructionParent(phi)), l = L->loop[b], *e, n;
  vent *ent = vx_get(x, phi);
  LLVMValueRef r;
  if (l >= 0 && L->loops[l].head == b) {
    /* entry values were made before the loop (in the loop's order of phis) */
    LLVMBasicBlockRef pre;
    LLVMValueRef in, v;
    unsigned k = 0;
    for (in = LLVMGetFirstInstruction(x->bbs[b]); in != phi; in = LLVMGetNextInstruction(in))
      k++;
    v = L->loops[l].entry[k];
    r = LLVMBuildPhi(x->b, ent->kind == V_VEC ? vx_vty(x, LLVMTypeOf(phi)) : LLVMTypeOf(phi), "");
    pre = L->loops[l].post;             /* the loop's pre block until its end */
    LLVMAddIncoming(r, &v, &pre, 1);
    return r;
  }
  if (ent->kind != V_VEC) {
    unsigned i;
    for (i = 0; i < LLVMCountIncoming(phi); i++)
      return vx_scal(x, LLVMGetIncomingValue(phi, i));
  }
  e = malloc(2 * L->n * sizeof(int));
  if (!e) return LLVMGetPoison(vx_vty(x, LLVMTypeOf(phi)));
  n = edges_in(x, b, -1, 0, e);
  r = blend(x, phi, e, n);
  free(e);
  return r;
}

/* Block b's edges' masks, at its end (its terminator t). */
void vx_lin_term(vctx *x, LLVMBasicBlockRef bb, LLVMValueRef t)
{
  vlin *L = x->lin;
  int b = bidx(x, bb);
  LLVMValueRef m = L->mask[b];
  if (LLVMIsAUnreachableInst(t)) return;
  if (!LLVMIsConditional(t)) {
    L->em[2 * b] = m;
    return;
  }
  if (LLVMGetSuccessor(t, 0) == LLVMGetSuccessor(t, 1)) {
    L->em[2 * b] = L->em[2 * b + 1] = m;
  } else {
    LLVMValueRef c = LLVMGetCondition(t), cv;
    int64_t st;
    cv = vx_kind_of(x, c, &st) == V_UNI ? vx_splat(x, vx_scal(x, c)) : vx_vec(x, c);
    L->em[2 * b] = land(x, m, cv);
    L->em[2 * b + 1] = land(x, m, LLVMBuildNot(x->b, cv, ""));
  }
}

static int add_kept(vlin *L, int edge, LLVMValueRef phi, int loop)
{
  if (L->nkv == L->capkv) {
    size_t c = L->capkv ? 2 * L->capkv : 16;
    kept *q = realloc(L->kv, c * sizeof(*q));
    if (!q) return -1;
    L->kv = q;
    L->capkv = c;
  }
  memset(&L->kv[L->nkv], 0, sizeof(kept));
  L->kv[L->nkv].edge = edge;
  L->kv[L->nkv].phi = phi;
  L->kv[L->nkv].loop = loop;
  L->nkv++;
  return 0;
}

/* Loop l starts: its pre block (entry mask and entry values), then its
** header's phis of the mask, the exits' lanes and kept values. */
static int loop_start(vctx *x, int l)
{
  vlin *L = x->lin;
  lloop *lp = &L->loops[l];
  int h = lp->head, *e, n, k;
  size_t i, np = 0;
  LLVMBasicBlockRef pre = LLVMInsertBasicBlockInContext(x->c, x->spre, "vec.lpre");
  LLVMValueRef in, em;
  e = malloc(2 * L->n * sizeof(int));
  lp->ex = malloc(2 * L->n * sizeof(int));
  if (!e || !lp->ex) {
    free(e);
    return -1;
  }
  LLVMBuildBr(x->b, pre);
  LLVMPositionBuilderAtEnd(x->b, pre);
  n = edges_in(x, h, l, 0, e);
  em = mask_of_edges(x, e, n);
  if (!em) em = mty_ones(x);
  for (in = LLVMGetFirstInstruction(x->bbs[h]); in && LLVMIsAPHINode(in);
       in = LLVMGetNextInstruction(in))
    np++;
  lp->entry = calloc(np ? np : 1, sizeof(LLVMValueRef));
  if (!lp->entry) {
    free(e);
    return -1;
  }
  for (in = LLVMGetFirstInstruction(x->bbs[h]), i = 0; i < np; in = LLVMGetNextInstruction(in), i++) {
    if (vx_get(x, in)->kind == V_VEC) {
      lp->entry[i] = blend(x, in, e, n);
    } else {
      unsigned j;
      for (j = 0; j < LLVMCountIncoming(in); j++)
        if (!in_loop(L, l, bidx(x, LLVMGetIncomingBlock(in, j))))
          lp->entry[i] = vx_scal(x, LLVMGetIncomingValue(in, j));
    }
  }
  free(e);
  /* the exit edges, and the phis at their targets */
  lp->nex = 0;
  for (i = 0; i < L->n; i++) {
    int j, ns = x->bbs[i] == x->latch ? 0 : nsucc(x->bbs[i]);
    if (!in_loop(L, l, (int)i)) continue;
    for (j = 0; j < ns; j++) {
      int s = bidx(x, succ(x->bbs[i], j));
      if (!in_loop(L, l, s)) lp->ex[lp->nex++] = 2 * (int)i + j;
    }
  }
  lp->acc = calloc(lp->nex ? lp->nex : 1, sizeof(LLVMValueRef));
  lp->accphi = calloc(lp->nex ? lp->nex : 1, sizeof(LLVMValueRef));
  if (!lp->acc || !lp->accphi) return -1;
  LLVMPositionBuilderAtEnd(x->b, vx_vblock(x, x->bbs[h]));
  lp->mphi = LLVMBuildPhi(x->b, vx_vty(x, LLVMInt1TypeInContext(x->c)), "lanes");
  LLVMAddIncoming(lp->mphi, &em, &pre, 1);
  for (k = 0; k < (int)lp->nex; k++) {
    int b = lp->ex[k] / 2, s = bidx(x, succ(x->bbs[b], lp->ex[k] % 2));
    LLVMValueRef z = mty_null(x);
    lp->accphi[k] = LLVMBuildPhi(x->b, LLVMTypeOf(z), "left");
    LLVMAddIncoming(lp->accphi[k], &z, &pre, 1);
    lp->acc[k] = lp->accphi[k];
    for (in = LLVMGetFirstInstruction(x->bbs[s]); in && LLVMIsAPHINode(in);
         in = LLVMGetNextInstruction(in)) {
      kept *kv;
      LLVMTypeRef vt = vx_vty(x, LLVMTypeOf(in));
      LLVMValueRef p = LLVMGetPoison(vt);
      if (vx_get(x, in)->kind != V_VEC) continue;
      if (add_kept(L, lp->ex[k], in, l)) return -1;
      kv = &L->kv[L->nkv - 1];
      kv->kphi = LLVMBuildPhi(x->b, vt, "");
      LLVMAddIncoming(kv->kphi, &p, &pre, 1);
    }
  }
  /* the entry values' incoming block: pre, which branches to the header
  ** (vx_lin_emit) */
  lp->post = pre;
  LLVMPositionBuilderAtEnd(x->b, pre);
  return 0;
}

/* Loop l ends: the exits' lanes and values gathered, the back edge taken
** while any lane goes round again; then its post block. */
static int loop_end(vctx *x, int l)
{
  vlin *L = x->lin;
  lloop *lp = &L->loops[l];
  int h = lp->head, *e, n, k;
  LLVMBasicBlockRef cur, post, pre = lp->post;
  LLVMValueRef cont, any, in, *back;
  size_t i, np = 0;
  e = malloc(2 * L->n * sizeof(int));
  if (!e) return -1;
  n = edges_in(x, h, l, 1, e);
  cont = mask_of_edges(x, e, n);
  if (!cont) cont = lp->mphi;
  for (k = 0; k < (int)lp->nex; k++) {
    int b = lp->ex[k] / 2, j = lp->ex[k] % 2;
    LLVMValueRef m = edge_mask(L, b, j);
    size_t q;
    if (!m) m = lp->mphi;
    for (q = 0; q < L->nkv; q++) {
      kept *kv = &L->kv[q];
      if (kv->edge != lp->ex[k] || kv->loop != l) continue;
      kv->v = LLVMBuildSelect(x->b, m, in_value(x, kv->phi, b, j), kv->kphi, "");
    }
    lp->acc[k] = lor(x, lp->accphi[k], m);
  }
  for (in = LLVMGetFirstInstruction(x->bbs[h]); in && LLVMIsAPHINode(in);
       in = LLVMGetNextInstruction(in))
    np++;
  back = calloc(np ? np : 1, sizeof(LLVMValueRef));
  if (!back) {
    free(e);
    return -1;
  }
  for (in = LLVMGetFirstInstruction(x->bbs[h]), i = 0; i < np; in = LLVMGetNextInstruction(in), i++) {
    if (vx_get(x, in)->kind == V_VEC) {
      back[i] = blend(x, in, e, n);
    } else {
      unsigned j;
      for (j = 0; j < LLVMCountIncoming(in); j++)
        if (in_loop(L, l, bidx(x, LLVMGetIncomingBlock(in, j))))
          back[i] = vx_scal(x, LLVMGetIncomingValue(in, j));
    }
  }
  free(e);
  any = LLVMBuildBitCast(x->b, cont, LLVMIntTypeInContext(x->c, x->W), "");
  any = LLVMBuildICmp(x->b, LLVMIntNE, any, LLVMConstNull(LLVMTypeOf(any)), "");
  cur = LLVMGetInsertBlock(x->b);
  post = LLVMInsertBasicBlockInContext(x->c, x->spre, "vec.lpost");
  LLVMBuildCondBr(x->b, any, vx_vblock(x, x->bbs[h]), post);
  LLVMAddIncoming(lp->mphi, &cont, &cur, 1);
  for (k = 0; k < (int)lp->nex; k++) LLVMAddIncoming(lp->accphi[k], &lp->acc[k], &cur, 1);
  for (i = 0; i < L->nkv; i++)
    if (L->kv[i].loop == l) LLVMAddIncoming(L->kv[i].kphi, &L->kv[i].v, &cur, 1);
  for (in = LLVMGetFirstInstruction(x->bbs[h]), i = 0; i < np; in = LLVMGetNextInstruction(in), i++)
    LLVMAddIncoming(vx_get(x, in)->v, &back[i], &cur, 1);
  free(back);
  (void)pre;
  /* after the loop: the exits' lanes and values are what was gathered */
  LLVMPositionBuilderAtEnd(x->b, post);
  for (k = 0; k < (int)lp->nex; k++) L->em[lp->ex[k]] = lp->acc[k];
  for (i = 0; i < L->nkv; i++) {
    kept *kv = &L->kv[i], *now;
    if (kv->loop != l) continue;
    kv->loop = -2;                        /* done */
    now = find_kept(L, kv->edge, kv->phi, -1);
    if (!now) {
      if (add_kept(L, kv->edge, kv->phi, -1)) return -1;
      kv = &L->kv[i];
      now = &L->kv[L->nkv - 1];
    }
    now->v = kv->v;
  }
  return 0;
}

int vx_lin_emit(vctx *x, void (*emit_block)(vctx *, LLVMBasicBlockRef))
{
  vlin *L = x->lin;
  size_t i;
  for (i = 0; i < L->nord; i++) {
    int o = L->ord[i];
    if (o >= 0) {
      if (i > 0) LLVMBuildBr(x->b, vx_vblock(x, x->bbs[o]));
      enter_block(x, o);
      emit_block(x, x->bbs[o]);
    } else if (o >= -1 - L->nloops) {
      if (loop_start(x, -2 - o)) return -1;
    } else {
      if (loop_end(x, -2 - L->nloops - o)) return -1;
    }
  }
  return 0;
}

int vx_lin_line(const vctx *x, LLVMBasicBlockRef bb)
{
  unsigned kind = LLVMGetMDKindIDInContext(x->c, "gj.line", 7);
  int b = x->lin ? bidx(x, bb) : -1;
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
  free(L->kv);
  free(L);
  x->lin = NULL;
}
