/*
** The work-item vectorizer, linearization (native_vec_lin.c): building the
** vector code of the order, with the blocks' and edges' masks, the loops'
** masks, exits and kept values (see there).
*/
#include "native_vec_lin.h"

#include <stdlib.h>
#include <string.h>

static void uni_term(vctx *x, int b, LLVMValueRef t);

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
    int j, ns = x->bbs[p] == x->latch ? 0 : vl_nsucc(x->bbs[p]);
    if ((l >= 0 && vl_in_loop(L, l, (int)p)) != inside) continue;
    for (j = 0; j < ns; j++)
      if (vl_succ(x->bbs[p], j) == x->bbs[b]) out[n++] = 2 * (int)p + j;
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
  if (L->ucur >= 0) {                   /* a uniform loop: its lanes */
    L->mask[b] = L->umask;
    return;
  }
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
  int b = vl_bidx(x, bb);
  return b >= 0 ? x->lin->mask[b] : NULL;
}

LLVMValueRef vx_lin_phi(vctx *x, LLVMValueRef phi)
{
  vlin *L = x->lin;
  int b = vl_bidx(x, LLVMGetInstructionParent(phi)), l = L->loop[b], *e, n;
  vent *ent = vx_get(x, phi);
  LLVMValueRef r;
  if (L->ucur >= 0 && (L->loops[L->ucur].head != b || l != L->ucur))
    /* in a uniform loop: a phi, filled at the loop's end */
    return LLVMBuildPhi(x->b, ent->kind == V_VEC ? vx_vty(x, LLVMTypeOf(phi)) : LLVMTypeOf(phi), "");
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
  int b = vl_bidx(x, bb);
  LLVMValueRef m = L->mask[b];
  if (L->ucur >= 0) {
    uni_term(x, b, t);
    return;
  }
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

/* Loop l's entry values, one per phi of its header (lp->entry): a varying
** phi's blend over the entry edges e[0..n), a uniform one's value from
** outside the loop.  0, or -1 when out of memory. */
static int entry_values(vctx *x, int l, const int *e, int n)
{
  vlin *L = x->lin;
  lloop *lp = &L->loops[l];
  LLVMBasicBlockRef hb = x->bbs[lp->head];
  LLVMValueRef in;
  size_t i, np = 0;
  for (in = LLVMGetFirstInstruction(hb); in && LLVMIsAPHINode(in);
       in = LLVMGetNextInstruction(in))
    np++;
  lp->entry = calloc(np ? np : 1, sizeof(LLVMValueRef));
  if (!lp->entry) return -1;
  for (in = LLVMGetFirstInstruction(hb), i = 0; i < np; in = LLVMGetNextInstruction(in), i++) {
    if (vx_get(x, in)->kind == V_VEC) {
      lp->entry[i] = blend(x, in, e, n);
    } else {
      unsigned j;
      for (j = 0; j < LLVMCountIncoming(in); j++)
        if (!vl_in_loop(L, l, vl_bidx(x, LLVMGetIncomingBlock(in, j))))
          lp->entry[i] = vx_scal(x, LLVMGetIncomingValue(in, j));
    }
  }
  return 0;
}

/* Loop l starts: its pre block (entry mask and entry values), then its
** header's phis of the mask, the exits' lanes and kept values. */
static int loop_start(vctx *x, int l)
{
  vlin *L = x->lin;
  lloop *lp = &L->loops[l];
  int h = lp->head, *e, n, k;
  size_t i;
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
  if (entry_values(x, l, e, n) != 0) {
    free(e);
    return -1;
  }
  free(e);
  /* the exit edges, and the phis at their targets */
  lp->nex = 0;
  for (i = 0; i < L->n; i++) {
    int j, ns = x->bbs[i] == x->latch ? 0 : vl_nsucc(x->bbs[i]);
    if (!vl_in_loop(L, l, (int)i)) continue;
    for (j = 0; j < ns; j++) {
      int s = vl_bidx(x, vl_succ(x->bbs[i], j));
      if (!vl_in_loop(L, l, s)) lp->ex[lp->nex++] = 2 * (int)i + j;
    }
  }
  lp->acc = calloc(lp->nex ? lp->nex : 1, sizeof(LLVMValueRef));
  lp->accphi = calloc(lp->nex ? lp->nex : 1, sizeof(LLVMValueRef));
  if (!lp->acc || !lp->accphi) return -1;
  LLVMPositionBuilderAtEnd(x->b, vx_vblock(x, x->bbs[h]));
  lp->mphi = LLVMBuildPhi(x->b, vx_vty(x, LLVMInt1TypeInContext(x->c)), "lanes");
  LLVMAddIncoming(lp->mphi, &em, &pre, 1);
  for (k = 0; k < (int)lp->nex; k++) {
    int b = lp->ex[k] / 2, s = vl_bidx(x, vl_succ(x->bbs[b], lp->ex[k] % 2));
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
        if (vl_in_loop(L, l, vl_bidx(x, LLVMGetIncomingBlock(in, j))))
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

/* -- uniform loops ----------------------------------------------------------
** A loop with no varying branch in it (nor in its inner loops) runs the
** same iterations in every lane: its vector code keeps its branches (on
** the scalar conditions) and phis, every block under the lanes that enter
** it (no mask where all do), entered only when any lane does.  Each exit
** edge has a stub block; after the loop, a phi per exit edge gives its
** lanes (the entering lanes from its stub, none from the others) and
** the values of the phis at its target. */

static int uniform_loop(const vctx *x, int l)
{
  const vlin *L = x->lin;
  size_t b;
  for (b = 0; b < L->n; b++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(x->bbs[b]);
    int64_t st;
    if (vl_in_loop(L, l, (int)b) && LLVMIsConditional(t) &&
        vx_kind_of(x, LLVMGetCondition(t), &st) != V_UNI)
      return 0;
  }
  return 1;
}

static LLVMBasicBlockRef uni_target(vctx *x, int b, int j)
{
  vlin *L = x->lin;
  LLVMBasicBlockRef s = vl_succ(x->bbs[b], j);
  return vl_in_loop(L, L->ucur, vl_bidx(x, s)) ? vx_vblock(x, s) : L->stub[2 * b + j];
}

static void uni_term(vctx *x, int b, LLVMValueRef t)
{
  if (LLVMIsAUnreachableInst(t)) LLVMBuildUnreachable(x->b);
  else if (!LLVMIsConditional(t)) LLVMBuildBr(x->b, uni_target(x, b, 0));
  else LLVMBuildCondBr(x->b, vx_scal(x, LLVMGetCondition(t)), uni_target(x, b, 0),
                       uni_target(x, b, 1));
}

static int uni_start(vctx *x, int l)
{
  vlin *L = x->lin;
  lloop *lp = &L->loops[l];
  int h = lp->head, *e, n, k;
  size_t i;
  LLVMBasicBlockRef pre = LLVMInsertBasicBlockInContext(x->c, x->spre, "vec.upre");
  e = malloc(2 * L->n * sizeof(int));
  lp->ex = malloc(2 * L->n * sizeof(int));
  if (!e || !lp->ex) {
    free(e);
    return -1;
  }
  LLVMBuildBr(x->b, pre);
  LLVMPositionBuilderAtEnd(x->b, pre);
  n = edges_in(x, h, l, 0, e);
  L->umask = mask_of_edges(x, e, n);
  if (entry_values(x, l, e, n) != 0) {
    free(e);
    return -1;
  }
  free(e);
  lp->nex = 0;
  L->upost = LLVMInsertBasicBlockInContext(x->c, x->spre, "vec.upost");
  for (i = 0; i < L->n; i++) {
    int j, ns = x->bbs[i] == x->latch ? 0 : vl_nsucc(x->bbs[i]);
    if (!vl_in_loop(L, l, (int)i)) continue;
    for (j = 0; j < ns; j++) {
      LLVMBuilderRef b;
      if (vl_in_loop(L, l, vl_bidx(x, vl_succ(x->bbs[i], j)))) continue;
      k = 2 * (int)i + j;
      lp->ex[lp->nex++] = k;
      L->stub[k] = LLVMInsertBasicBlockInContext(x->c, L->upost, "vec.uexit");
      b = LLVMCreateBuilderInContext(x->c);
      LLVMPositionBuilderAtEnd(b, L->stub[k]);
      LLVMBuildBr(b, L->upost);
      LLVMDisposeBuilder(b);
    }
  }
  if (L->umask) {
    LLVMValueRef any = LLVMBuildBitCast(x->b, L->umask, LLVMIntTypeInContext(x->c, x->W), "");
    any = LLVMBuildICmp(x->b, LLVMIntNE, any, LLVMConstNull(LLVMTypeOf(any)), "");
    LLVMBuildCondBr(x->b, any, vx_vblock(x, x->bbs[h]), L->upost);
  } else {
    LLVMBuildBr(x->b, vx_vblock(x, x->bbs[h]));
  }
  lp->post = L->upre = pre;
  L->ucur = l;
  return 0;
}

/* The loop's phis' incoming values from its blocks, at their ends; the
** post block's phis. */
static int uni_end(vctx *x, int l)
{
  vlin *L = x->lin;
  lloop *lp = &L->loops[l];
  size_t b, k, q;
  LLVMTypeRef mt = vx_vty(x, LLVMInt1TypeInContext(x->c));
  for (b = 0; b < L->n; b++) {
    LLVMValueRef in;
    if (!vl_in_loop(L, l, (int)b)) continue;
    for (in = LLVMGetFirstInstruction(x->bbs[b]); in && LLVMIsAPHINode(in);
         in = LLVMGetNextInstruction(in)) {
      vent *e = vx_get(x, in);
      unsigned j;
      for (j = 0; j < LLVMCountIncoming(in); j++) {
        LLVMBasicBlockRef from = LLVMGetIncomingBlock(in, j);
        LLVMValueRef v = LLVMGetIncomingValue(in, j);
        if (!vl_in_loop(L, l, vl_bidx(x, from))) continue;
        from = vx_vblock(x, from);
        LLVMPositionBuilderBefore(x->b, LLVMGetBasicBlockTerminator(from));
        v = e->kind == V_VEC ? vx_vec(x, v) : vx_scal(x, v);
        LLVMAddIncoming(e->v, &v, &from, 1);
      }
    }
  }
  LLVMPositionBuilderAtEnd(x->b, L->upost);
  for (k = 0; k < lp->nex; k++) {         /* each exit edge's lanes */
    LLVMValueRef phi = LLVMBuildPhi(x->b, mt, "uleft"), v;
    size_t k2;
    for (k2 = 0; k2 < lp->nex; k2++) {
      LLVMBasicBlockRef from = L->stub[lp->ex[k2]];
      v = k2 != k ? LLVMConstNull(mt) : L->umask ? L->umask : LLVMConstAllOnes(mt);
      LLVMAddIncoming(phi, &v, &from, 1);
    }
    if (L->umask) {
      v = LLVMConstNull(mt);
      LLVMAddIncoming(phi, &v, &L->upre, 1);
    }
    L->em[lp->ex[k]] = phi;
  }
  for (k = 0; k < lp->nex; k++) {         /* the values of the phis at its target */
    int src = lp->ex[k] / 2, j = lp->ex[k] % 2;
    LLVMValueRef in;
    for (in = LLVMGetFirstInstruction(vl_succ(x->bbs[src], j)); in && LLVMIsAPHINode(in);
         in = LLVMGetNextInstruction(in)) {
      LLVMTypeRef vt = vx_vty(x, LLVMTypeOf(in));
      LLVMValueRef phi, v;
      kept *now;
      if (vx_get(x, in)->kind != V_VEC) continue;
      LLVMPositionBuilderAtEnd(x->b, L->upost);
      phi = LLVMBuildPhi(x->b, vt, "");
      for (q = 0; q < lp->nex; q++) {
        LLVMBasicBlockRef from = L->stub[lp->ex[q]];
        if (q == k) {
          LLVMPositionBuilderBefore(x->b, LLVMGetBasicBlockTerminator(from));
          v = in_value(x, in, src, j);
        } else {
          v = LLVMGetPoison(vt);
        }
        LLVMAddIncoming(phi, &v, &from, 1);
      }
      if (L->umask) {
        v = LLVMGetPoison(vt);
        LLVMAddIncoming(phi, &v, &L->upre, 1);
      }
      now = find_kept(L, lp->ex[k], in, -1);
      if (!now) {
        if (add_kept(L, lp->ex[k], in, -1)) return -1;
        now = &L->kv[L->nkv - 1];
      }
      now->v = phi;
    }
  }
  LLVMPositionBuilderAtEnd(x->b, L->upost);
  L->ucur = -1;
  return 0;
}

int vx_lin_emit(vctx *x, void (*emit_block)(vctx *, LLVMBasicBlockRef))
{
  vlin *L = x->lin;
  size_t i;
  int l;
  L->ucur = -1;
  L->uni = calloc((size_t)L->nloops + 1, 1);
  L->stub = calloc(2 * L->n, sizeof(LLVMBasicBlockRef));
  if (!L->uni || !L->stub) return -1;
  for (l = 0; l < L->nloops; l++) L->uni[l] = uniform_loop(x, l);
  for (i = 0; i < L->nord; i++) {
    int o = L->ord[i];
    if (o >= 0) {
      if (i > 0 && L->ucur < 0) LLVMBuildBr(x->b, vx_vblock(x, x->bbs[o]));
      enter_block(x, o);
      emit_block(x, x->bbs[o]);
    } else if (o >= -1 - L->nloops) {
      l = -2 - o;
      if (L->ucur >= 0) continue;               /* inside a uniform loop */
      if (L->uni[l] ? uni_start(x, l) : loop_start(x, l)) return -1;
    } else {
      l = -2 - L->nloops - o;
      if (L->ucur >= 0 && l != L->ucur) continue;
      if (L->uni[l] ? uni_end(x, l) : loop_end(x, l)) return -1;
    }
  }
  return 0;
}

