/*
** The work-item vectorizer, part two: inner loops that the lanes leave at
** different times (mandelbrot's escape loop, `while c * c < i do`).
**
** Such a loop runs under a mask of the lanes still in it, until no lane
** is: at each branch that leaves the loop, the lanes whose condition says
** leave record the values the code after the loop reads (its exit phis,
** which vx_find_loops adds: LCSSA form) and drop out of the mask; the loop
** goes on while any lane is left.  Lanes that have left go on computing
** with their values, which nothing reads any more; so the loop may only
** hold what is harmless to run on any values: arithmetic, comparisons,
** selects, calls without effects, loads at uniform addresses (read anyway
** by the lanes still in it), and no integer division, store, or load at a
** varying address (vx_check_loops).  A lane's recorded values are those
** its work item would have computed in the scalar code, which leaves at
** the same iteration and branch, so results are bitwise the same.
**
** Shape: a loop whose blocks form one path from its head to its latch
** (each block has one successor in the loop), whose other edges all go to
** one exit block in the fast loop that only the loop enters and that has
** no phis.  Branches inside it other than its exits must be uniform.
*/
#include "native_vec.h"

#include <stdlib.h>
#include <string.h>

#define VEC_MAX_LOOPS 8
#define VEC_LOOP_SEARCH 2000    /* blocks of the fast loop: above, none */

static long index_of(const vctx *x, LLVMBasicBlockRef bb)
{
  size_t i;
  for (i = 0; i < x->nbbs; i++)
    if (x->bbs[i] == bb) return (long)i;
  return -1;
}

static int in_body(const vloop *L, LLVMBasicBlockRef bb)
{
  size_t i;
  for (i = 0; i < L->nbody; i++)
    if (L->body[i] == bb) return 1;
  return 0;
}

static int has_succ(LLVMBasicBlockRef p, LLVMBasicBlockRef b)
{
  LLVMValueRef t = LLVMGetBasicBlockTerminator(p);
  unsigned j, n = t ? LLVMGetNumSuccessors(t) : 0;
  for (j = 0; j < n; j++)
    if (LLVMGetSuccessor(t, j) == b) return 1;
  return 0;
}

/* The blocks of the back edge latch -> head: head, and those that reach
** latch without passing through head; then in path order.  0: not a loop
** of the shape above (L->body freed). */
static int shape(const vctx *x, vloop *L)
{
  size_t n = 0, i, j, npre = 0;
  LLVMBasicBlockRef *b = malloc(x->nbbs * sizeof(*b)), *ord, cur;
  if (!b) return 0;
  if (!(ord = malloc(x->nbbs * sizeof(*ord)))) {
    free(b);
    return 0;
  }
  L->body = b;
  b[n++] = L->head;
  if (L->latch != L->head) b[n++] = L->latch;
  for (i = 1; i < n; i++)
    for (j = 0; j < x->nbbs; j++) {
      L->nbody = n;
      if (has_succ(x->bbs[j], b[i]) && !in_body(L, x->bbs[j])) b[n++] = x->bbs[j];
    }
  L->nbody = n;
  /* one path: each block one successor inside, the others the exit */
  L->exit = NULL;
  for (i = 0, cur = L->head; i < n; i++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(cur);
    LLVMBasicBlockRef next = NULL;
    unsigned k, ns = t && LLVMIsABranchInst(t) ? LLVMGetNumSuccessors(t) : 0;
    if (!ns) goto no;
    for (k = 0; k < ns; k++) {
      LLVMBasicBlockRef s = LLVMGetSuccessor(t, k);
      if (in_body(L, s)) {
        if (next) goto no;
        next = s;
      } else if (!L->exit) {
        L->exit = s;
      } else if (L->exit != s || ns == 1) {
        goto no;
      }
    }
    if (!next || (cur == L->latch) != (next == L->head) ||
        (i + 1 < n) != (next != L->head))
      goto no;
    ord[i] = cur;
    cur = next;
  }
  if (!L->exit || !vx_in_loop(x, L->exit) ||
      LLVMIsAPHINode(LLVMGetFirstInstruction(L->exit)))
    goto no;
  for (j = 0; j < x->nbbs; j++) {
    int in = in_body(L, x->bbs[j]);
    if (!in && has_succ(x->bbs[j], L->exit)) goto no;
    if (!in && has_succ(x->bbs[j], L->head)) {
      L->outside = x->bbs[j];
      npre++;
    }
  }
  if (npre == 1) {
    memcpy(b, ord, n * sizeof(*b));
    free(ord);
    return 1;
  }
no:
  free(ord);
  free(L->body);
  L->body = NULL;
  return 0;
}

/* Values of the loop used after it, or -1 when more than VEC_MAX_OUTS. */
static int count_outs(const vloop *L, LLVMValueRef *outs)
{
  size_t i;
  int n = 0;
  for (i = 0; i < L->nbody; i++) {
    LLVMValueRef in;
    for (in = LLVMGetFirstInstruction(L->body[i]); in;
         in = LLVMGetNextInstruction(in)) {
      LLVMUseRef u;
      for (u = LLVMGetFirstUse(in); u; u = LLVMGetNextUse(u)) {
        LLVMValueRef user = LLVMGetUser(u);
        if (LLVMIsAInstruction(user) &&
            !in_body(L, LLVMGetInstructionParent(user))) {
          if (n == VEC_MAX_OUTS) return -1;
          outs[n++] = in;
          break;
        }
      }
    }
  }
  return n;
}

/* v's uses outside the loop go to a phi in the exit block. */
static LLVMValueRef exit_phi(LLVMBuilderRef b, const vloop *L, LLVMValueRef v)
{
  LLVMValueRef p, *users;
  size_t i, n = 0, cap = 0;
  LLVMUseRef u;
  LLVMPositionBuilderBefore(b, LLVMGetFirstInstruction(L->exit));
  p = LLVMBuildPhi(b, LLVMTypeOf(v), "");
  for (i = 0; i < L->nbody; i++)
    if (has_succ(L->body[i], L->exit)) LLVMAddIncoming(p, &v, &L->body[i], 1);
  LLVMReplaceAllUsesWith(v, p);
  for (i = 0; i < LLVMCountIncoming(p); i++) LLVMSetOperand(p, (unsigned)i, v);
  for (u = LLVMGetFirstUse(p); u; u = LLVMGetNextUse(u)) cap++;
  users = malloc((cap ? cap : 1) * sizeof(*users));
  if (!users) return NULL;
  for (u = LLVMGetFirstUse(p); u; u = LLVMGetNextUse(u)) users[n++] = LLVMGetUser(u);
  for (i = 0; i < n; i++) {     /* uses inside the loop: v again */
    int k, no = LLVMGetNumOperands(users[i]);
    if (users[i] == p || !in_body(L, LLVMGetInstructionParent(users[i]))) continue;
    for (k = 0; k < no; k++)
      if (LLVMGetOperand(users[i], (unsigned)k) == p)
        LLVMSetOperand(users[i], (unsigned)k, v);
  }
  free(users);
  return p;
}

int vx_find_loops(vctx *x)
{
  size_t i;
  LLVMBuilderRef b;
  if (x->nbbs > VEC_LOOP_SEARCH) return 0;
  x->loops = calloc(VEC_MAX_LOOPS, sizeof(vloop));
  if (!x->loops) return -1;
  b = LLVMCreateBuilderInContext(x->c);
  for (i = 0; i < x->nbbs && x->nloops < VEC_MAX_LOOPS; i++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(x->bbs[i]);
    unsigned j, ns = t ? LLVMGetNumSuccessors(t) : 0;
    for (j = 0; x->bbs[i] != x->latch && j < ns; j++) {
      LLVMBasicBlockRef h = LLVMGetSuccessor(t, j);
      long hi = index_of(x, h);
      vloop *L = &x->loops[x->nloops];
      LLVMValueRef outs[VEC_MAX_OUTS];
      int n, k;
      if (hi < 0 || hi > (long)i || h == x->s->head) continue;
      memset(L, 0, sizeof(*L));
      L->head = h;
      L->latch = x->bbs[i];
      if (!shape(x, L)) continue;
      if ((n = count_outs(L, outs)) < 0) {
        free(L->body);
        continue;
      }
      for (k = 0; k < n; k++)
        if (!(L->outs[L->nouts++] = exit_phi(b, L, outs[k]))) {
          LLVMDisposeBuilder(b);
          return -1;
        }
      x->nloops++;
      break;
    }
  }
  LLVMDisposeBuilder(b);
  return 0;
}

vloop *vx_exit_of(const vctx *x, LLVMValueRef br)
{
  size_t i;
  for (i = 0; i < x->nloops; i++) {
    vloop *L = &x->loops[i];
    if (in_body(L, LLVMGetInstructionParent(br)) && has_succ(
            LLVMGetInstructionParent(br), L->exit))
      return L;
  }
  return NULL;
}

int vx_exit_phi(const vctx *x, LLVMValueRef phi)
{
  size_t i, k;
  for (i = 0; i < x->nloops; i++)
    for (k = 0; x->loops[i].varying && k < x->loops[i].nouts; k++)
      if (x->loops[i].outs[k] == phi) return 1;
  return 0;
}

/* The branch of loop L that leaves it with a line (!gj.line), or NULL. */
static LLVMValueRef exit_branch(vctx *x, const vloop *L)
{
  unsigned kind = LLVMGetMDKindIDInContext(x->c, "gj.line", 7);
  size_t j;
  for (j = 0; j < L->nbody; j++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(L->body[j]);
    if (t && LLVMGetMetadata(t, kind)) return t;
  }
  return NULL;
}

int vx_check_loops(vctx *x)
{
  size_t i, j;
  for (i = 0; i < x->nloops; i++) {
    vloop *L = &x->loops[i];
    LLVMValueRef br = L->varying ? exit_branch(x, L) : NULL;
    for (j = 0; L->varying && j < L->nbody; j++) {
      LLVMValueRef in;
      for (in = LLVMGetFirstInstruction(L->body[j]); in;
           in = LLVMGetNextInstruction(in)) {
        LLVMOpcode op = LLVMGetInstructionOpcode(in);
        int64_t st;
        if (op == LLVMStore)
          return vx_refuse_soft(x, br, "a store in a loop that varies with the work item");
        if (op == LLVMLoad && vx_kind_of(x, LLVMGetOperand(in, 0), &st) != V_UNI)
          return vx_refuse_soft(x, br, "a load at a varying address in a loop that "
                                     "varies with the work item");
        if (op == LLVMCall && !vx_readnone(LLVMGetCalledValue(in)))
          return vx_refuse_soft(x, br, "a call with effects in a loop that varies "
                                     "with the work item");
        if ((op == LLVMSDiv || op == LLVMUDiv || op == LLVMSRem ||
             op == LLVMURem) && vx_kind_of(x, in, &st) != V_UNI)
          return vx_refuse_soft(x, br, "integer division in a loop that varies with "
                                     "the work item");
      }
    }
  }
  return 0;
}

static vloop *varying_loop_of(const vctx *x, LLVMBasicBlockRef bb)
{
  size_t i;
  for (i = 0; i < x->nloops; i++)
    if (x->loops[i].varying && in_body(&x->loops[i], bb)) return &x->loops[i];
  return NULL;
}

void vx_loop_head(vctx *x, LLVMBasicBlockRef bb)
{
  vloop *L = varying_loop_of(x, bb);
  LLVMBasicBlockRef cur = LLVMGetInsertBlock(x->b);
  size_t k;
  if (!L || L->head != bb) return;
  L->mask = L->mphi = LLVMBuildPhi(x->b, vx_vty(x, LLVMInt1TypeInContext(x->c)),
                                   "lanes");
  for (k = 0; k < L->nouts; k++)
    L->res[k] = L->rphi[k] = LLVMBuildPhi(x->b, vx_vty(x, LLVMTypeOf(L->outs[k])), "");
  L->vexit = LLVMInsertBasicBlockInContext(x->c, vx_vblock(x, L->exit), "vec.left");
  LLVMPositionBuilderAtEnd(x->b, L->vexit);
  for (k = 0; k < L->nouts; k++)
    vx_get(x, L->outs[k])->v = LLVMBuildPhi(x->b, vx_vty(x, LLVMTypeOf(L->outs[k])), "");
  LLVMPositionBuilderAtEnd(x->b, cur);
}

/* v's incoming value from block from (a phi), or NULL. */
static LLVMValueRef incoming(LLVMValueRef phi, LLVMBasicBlockRef from)
{
  unsigned i;
  for (i = 0; i < LLVMCountIncoming(phi); i++)
    if (LLVMGetIncomingBlock(phi, i) == from) return LLVMGetIncomingValue(phi, i);
  return NULL;
}

int vx_loop_term(vctx *x, LLVMBasicBlockRef bb, LLVMValueRef t)
{
  vloop *L = varying_loop_of(x, bb);
  LLVMBasicBlockRef cur, stay;
  LLVMValueRef go;
  size_t k;
  if (!L) return 0;
  if (LLVMIsConditional(t)) {
    LLVMValueRef c = LLVMGetCondition(t), ex, leave, any;
    int64_t st;
    int on_true = LLVMGetSuccessor(t, 0) == L->exit;
    ex = vx_kind_of(x, c, &st) == V_UNI ? vx_splat(x, vx_scal(x, c)) : vx_vec(x, c);
    if (!on_true) ex = LLVMBuildNot(x->b, ex, "");
    leave = LLVMBuildAnd(x->b, L->mask, ex, "");
    for (k = 0; k < L->nouts; k++)
      L->res[k] = LLVMBuildSelect(x->b, leave, vx_vec(x, incoming(L->outs[k], bb)),
                                  L->res[k], "");
    L->mask = LLVMBuildAnd(x->b, L->mask, LLVMBuildNot(x->b, ex, ""), "lanes");
    any = LLVMBuildBitCast(x->b, L->mask, LLVMIntTypeInContext(x->c, x->W), "");
    any = LLVMBuildICmp(x->b, LLVMIntNE, any, LLVMConstNull(LLVMTypeOf(any)), "");
    stay = LLVMGetSuccessor(t, on_true ? 1 : 0);
    cur = LLVMGetInsertBlock(x->b);
    LLVMBuildCondBr(x->b, any, vx_vblock(x, stay), L->vexit);
    for (k = 0; k < L->nouts; k++) {
      go = L->res[k];
      LLVMAddIncoming(vx_get(x, L->outs[k])->v, &go, &cur, 1);
    }
  } else {
    stay = LLVMGetSuccessor(t, 0);
    cur = LLVMGetInsertBlock(x->b);
    LLVMBuildBr(x->b, vx_vblock(x, stay));
  }
  if (stay == L->head) {       /* the latch */
    LLVMAddIncoming(L->mphi, &L->mask, &cur, 1);
    for (k = 0; k < L->nouts; k++) LLVMAddIncoming(L->rphi[k], &L->res[k], &cur, 1);
  }
  return 1;
}

void vx_loops_finish(vctx *x)
{
  size_t i, k;
  for (i = 0; i < x->nloops; i++) {
    vloop *L = &x->loops[i];
    LLVMBasicBlockRef out;
    LLVMValueRef v;
    if (!L->varying) continue;
    out = vx_vblock(x, L->outside);
    v = LLVMConstAllOnes(LLVMTypeOf(L->mphi));
    LLVMAddIncoming(L->mphi, &v, &out, 1);
    for (k = 0; k < L->nouts; k++) {
      v = LLVMGetPoison(LLVMTypeOf(L->rphi[k]));
      LLVMAddIncoming(L->rphi[k], &v, &out, 1);
    }
    LLVMPositionBuilderAtEnd(x->b, L->vexit);
    LLVMBuildBr(x->b, vx_vblock(x, L->exit));
  }
}

void vx_loops_free(vctx *x)
{
  size_t i;
  for (i = 0; i < x->nloops; i++) free(x->loops[i].body);
  free(x->loops);
}
