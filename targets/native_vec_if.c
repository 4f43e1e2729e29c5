/*
** The work-item vectorizer, part three: ifs whose condition varies with
** the work item (if-conversion).
**
** Shape: a block A ending in the varying branch, one or two arms (each a
** path of blocks with one predecessor and one successor) and the join J
** both arms (or one arm and A) reach, J entered from nowhere else.  The
** lanes run A, the true arm, the false arm, then J, in that order; in an
** arm the lanes whose condition says otherwise are masked off:
**   - loads and stores are masked (llvm.masked.load/store where the address
**     is contiguous, else llvm.masked.gather/scatter, which write in lane
**     order): a load under a false mask touches no memory;
**   - arithmetic runs for every lane (its results in masked lanes are never
**     read), so an arm may not divide by a value (a masked lane could
**     divide by zero), nor call a function with effects;
**   - the phis of J become selects on the condition.
** Every lane thus computes and stores what its work item does in the
** scalar code, so results are bitwise the same.
*/
#include "native_vec.h"

#include <stdlib.h>
#include <string.h>

#define VEC_MAX_IFS 64
#define VEC_MAX_ARM 64          /* blocks of one arm */

static size_t npreds(const vctx *x, LLVMBasicBlockRef b)
{
  size_t i, n = 0;
  for (i = 0; i < x->nbbs; i++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(x->bbs[i]);
    unsigned j, ns = t ? LLVMGetNumSuccessors(t) : 0;
    for (j = 0; j < ns; j++) n += LLVMGetSuccessor(t, j) == b;
  }
  return n;
}

/* The arm from s: blocks with one predecessor ending in an unconditional
** branch, until the first block with more predecessors (the join, *end).
** Returns the number of blocks, or -1. */
static int arm(const vctx *x, LLVMBasicBlockRef s, LLVMBasicBlockRef *blocks,
               LLVMBasicBlockRef *end)
{
  int n = 0;
  while (vx_in_loop(x, s) && s != x->s->head && npreds(x, s) == 1) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(s);
    if (n == VEC_MAX_ARM || !t || !LLVMIsABranchInst(t) || LLVMIsConditional(t) ||
        LLVMIsAPHINode(LLVMGetFirstInstruction(s)))
      return -1;
    blocks[n++] = s;
    s = LLVMGetSuccessor(t, 0);
  }
  *end = s;
  return n;
}

/* A join of more edges than the if's two (the exit of a resumable body,
** where every return and barrier meets): a block of its own for the two,
** put before it (its phis would have to move: not done). */
static LLVMBasicBlockRef own_join(vctx *x, LLVMValueRef t, LLVMBasicBlockRef e0,
                                  LLVMBasicBlockRef e1, LLVMBasicBlockRef join)
{
  LLVMBasicBlockRef nb, ends[2];
  LLVMBuilderRef b;
  size_t i, at;
  int k;
  if (LLVMIsAPHINode(LLVMGetFirstInstruction(join))) return join;
  for (at = 0; at < x->nbbs && x->bbs[at] != join; at++) {}
  if (at == x->nbbs) return join;
  nb = LLVMInsertBasicBlockInContext(x->c, join, "vec.join");
  b = LLVMCreateBuilderInContext(x->c);
  LLVMPositionBuilderAtEnd(b, nb);
  LLVMBuildBr(b, join);
  LLVMDisposeBuilder(b);
  ends[0] = e0;
  ends[1] = e1;
  for (k = 0; k < 2; k++) {
    LLVMValueRef term = ends[k] ? LLVMGetBasicBlockTerminator(ends[k]) : t;
    for (i = 0; i < LLVMGetNumSuccessors(term); i++)
      if (LLVMGetSuccessor(term, (unsigned)i) == join) LLVMSetSuccessor(term, (unsigned)i, nb);
  }
  return vx_insert_bb(x, at, nb) ? NULL : nb;
}

int vx_find_ifs(vctx *x)
{
  size_t i;
  LLVMBasicBlockRef b0[VEC_MAX_ARM], b1[VEC_MAX_ARM];
  x->ifs = calloc(VEC_MAX_IFS, sizeof(vif));
  if (!x->ifs) return -1;
  for (i = 0; i < x->nbbs && x->nifs < VEC_MAX_IFS; i++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(x->bbs[i]);
    LLVMBasicBlockRef s0, s1, j0, j1, join;
    vif *f = &x->ifs[x->nifs];
    int n0, n1;
    if (!t || !LLVMIsABranchInst(t) || !LLVMIsConditional(t) || x->bbs[i] == x->latch)
      continue;
    s0 = LLVMGetSuccessor(t, 0);
    s1 = LLVMGetSuccessor(t, 1);
    if (s0 == s1 || (n0 = arm(x, s0, b0, &j0)) < 0 || (n1 = arm(x, s1, b1, &j1)) < 0)
      continue;
    if (n0 && n1 && j0 == j1) join = j0;            /* a diamond */
    else if (!n0 && n1 && j1 == s0) join = s0;      /* a triangle */
    else if (n0 && !n1 && j0 == s1) join = s1;
    else continue;
    if (!vx_in_loop(x, join) || join == x->s->head) continue;
    if (x->frame && npreds(x, join) > 2 &&
        !(join = own_join(x, t, n0 ? b0[n0 - 1] : NULL, n1 ? b1[n1 - 1] : NULL, join)))
      return -1;
    if (npreds(x, join) != 2) continue;
    memset(f, 0, sizeof(*f));
    f->head = x->bbs[i];
    f->br = t;
    f->join = join;
    f->narm[0] = (size_t)n0;
    f->narm[1] = (size_t)n1;
    if ((n0 && !(f->arm[0] = malloc((size_t)n0 * sizeof(*b0)))) ||
        (n1 && !(f->arm[1] = malloc((size_t)n1 * sizeof(*b1))))) {
      free(f->arm[0]);
      return -1;
    }
    if (n0) memcpy(f->arm[0], b0, (size_t)n0 * sizeof(*b0));
    if (n1) memcpy(f->arm[1], b1, (size_t)n1 * sizeof(*b1));
    x->nifs++;
  }
  return 0;
}

vif *vx_if_of(const vctx *x, LLVMValueRef br)
{
  size_t i;
  for (i = 0; i < x->nifs; i++)
    if (x->ifs[i].br == br) return &x->ifs[i];
  return NULL;
}

/* The varying if whose arm holds bb (its side in *side), or NULL. */
vif *vx_arm_of(const vctx *x, LLVMBasicBlockRef bb, int *side)
{
  size_t i, k;
  int s;
  for (i = 0; i < x->nifs; i++)
    for (s = 0; x->ifs[i].varying && s < 2; s++)
      for (k = 0; k < x->ifs[i].narm[s]; k++)
        if (x->ifs[i].arm[s][k] == bb) {
          if (side) *side = s;
          return &x->ifs[i];
        }
  return NULL;
}

int vx_join_phi(const vctx *x, LLVMValueRef phi)
{
  size_t i;
  LLVMBasicBlockRef bb;
  if (!LLVMIsAPHINode(phi)) return 0;
  bb = LLVMGetInstructionParent(phi);
  for (i = 0; i < x->nifs; i++)
    if (x->ifs[i].varying && x->ifs[i].join == bb) return 1;
  return 0;
}

int vx_check_ifs(vctx *x)
{
  size_t i, k;
  int s;
  for (i = 0; i < x->nifs; i++)
    for (s = 0; x->ifs[i].varying && s < 2; s++)
      for (k = 0; k < x->ifs[i].narm[s]; k++) {
        LLVMValueRef in;
        for (in = LLVMGetFirstInstruction(x->ifs[i].arm[s][k]); in;
             in = LLVMGetNextInstruction(in)) {
          LLVMOpcode op = LLVMGetInstructionOpcode(in);
          if (op == LLVMCall && !vx_readnone(LLVMGetCalledValue(in)))
            return vx_refuse_soft(x, x->ifs[i].br, "a call with effects in an if that varies");
          if (op == LLVMSDiv || op == LLVMUDiv || op == LLVMSRem || op == LLVMURem) {
            LLVMValueRef d = LLVMGetOperand(in, 1);
            if (!LLVMIsAConstantInt(d) || LLVMConstIntGetZExtValue(d) == 0 ||
                LLVMConstIntGetSExtValue(d) == -1)
              return vx_refuse_soft(x, x->ifs[i].br, "a division in an if that varies");
          }
        }
      }
  return 0;
}

/* The block after bb in the if's order: A, true arm, false arm, join. */
static LLVMBasicBlockRef after(const vif *f, LLVMBasicBlockRef bb)
{
  int s;
  size_t k;
  if (bb == f->head) s = 0, k = 0;
  else {
    for (s = 0; s < 2; s++)
      for (k = 0; k < f->narm[s]; k++)
        if (f->arm[s][k] == bb) goto found;
    return NULL;
found:
    k++;
  }
  for (; s < 2; s++, k = 0)
    if (k < f->narm[s]) return f->arm[s][k];
  return f->join;
}

int vx_if_term(vctx *x, LLVMBasicBlockRef bb, LLVMValueRef t)
{
  int side;
  vif *f = vx_arm_of(x, bb, &side);
  size_t i;
  if (!f) {
    for (i = 0; i < x->nifs && !f; i++)
      if (x->ifs[i].varying && x->ifs[i].br == t) f = &x->ifs[i];
    if (!f) return 0;
    f->mask[0] = vx_vec(x, LLVMGetCondition(t));
    f->mask[1] = LLVMBuildNot(x->b, f->mask[0], "");
  }
  LLVMBuildBr(x->b, vx_vblock(x, after(f, bb)));
  return 1;
}

LLVMValueRef vx_mask_of(const vctx *x, LLVMBasicBlockRef bb)
{
  int side;
  vif *f = vx_arm_of(x, bb, &side);
  return f ? f->mask[side] : NULL;
}

LLVMValueRef vx_join_select(vctx *x, LLVMValueRef phi)
{
  size_t i;
  LLVMBasicBlockRef bb = LLVMGetInstructionParent(phi), from[2];
  LLVMValueRef v[2] = { NULL, NULL };
  int s;
  unsigned j;
  for (i = 0; i < x->nifs; i++) {
    vif *f = &x->ifs[i];
    if (!f->varying || f->join != bb) continue;
    for (s = 0; s < 2; s++) from[s] = f->narm[s] ? f->arm[s][f->narm[s] - 1] : f->head;
    for (s = 0; s < 2; s++)
      for (j = 0; j < LLVMCountIncoming(phi); j++)
        if (LLVMGetIncomingBlock(phi, j) == from[s]) v[s] = LLVMGetIncomingValue(phi, j);
    if (!v[0] || !v[1]) return NULL;
    return LLVMBuildSelect(x->b, f->mask[0], vx_vec(x, v[0]), vx_vec(x, v[1]), "");
  }
  return NULL;
}

void vx_ifs_free(vctx *x)
{
  size_t i;
  for (i = 0; i < x->nifs; i++) {
    free(x->ifs[i].arm[0]);
    free(x->ifs[i].arm[1]);
  }
  free(x->ifs);
}
