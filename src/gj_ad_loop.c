/*
** Reverse mode: counted loops reversed by counting their variable down
** (src/gj_ad_rev.h; Enzyme's canonical induction variables).  The reverse
** otherwise reads each iteration's loop variable from a stack on the tape
** (pushed by the forward pass); for a loop of constant start c, step s > 0
** and bound (the back edge taken while the next value is at most top), left
** only by its latch's test, the variable's last value is known,
**     last = c + s * floor((top - c) / s)   (c when c > top: a do-while
**                                             form runs its body once),
** so the reverse sets a slot to it where it enters the loop (from the
** loop's exit), steps it down by s where it takes the back edge, and the
** head's reverse knows it came from outside when the slot is back at c
** (gj_adr_iv).  The forward pass then pushes nothing for the variable, and
** with constant bounds the optimizer sees the reverse loop's trip count.
** Only where every use of the variable is inside its loop (the reverse of
** the code after the loop runs before the slot is set).
*/
#include <stdlib.h>
#include <string.h>

#include "gj_ad_rev.h"

static int index_of(rev *R, LLVMBasicBlockRef b)
{
  unsigned i;
  for (i = 0; i < R->nfb; i++)
    if (R->fb[i] == b) return (int)i;
  return -1;
}

/* seen[x] = 1 for every block reachable from block `from` (itself only
** through an edge) without passing block `avoid` (-1: none; it is marked,
** not passed). */
static void reach(rev *R, unsigned from, int avoid, char *seen)
{
  LLVMValueRef t = LLVMGetBasicBlockTerminator(R->fb[from]);
  unsigned j, n = t ? LLVMGetNumSuccessors(t) : 0;
  for (j = 0; j < n; j++) {
    int x = index_of(R, LLVMGetSuccessor(t, j));
    if (x < 0 || seen[x]) continue;
    seen[x] = 1;
    if (x != avoid) reach(R, (unsigned)x, avoid, seen);
  }
}

static int const_i(LLVMValueRef v, long long *c)
{
  if (!LLVMIsAConstantInt(v)) return 0;
  *c = LLVMConstIntGetSExtValue(v);
  return 1;
}

/* The loop of head hb with variable p starting at c from pre:
** filled into *L, 1; 0 when it is not of the form above. */
static int counted(rev *R, unsigned hb, LLVMValueRef p, LLVMBasicBlockRef pre,
                   long long c, rev_iv *L)
{
  LLVMValueRef inc = NULL, t, cmp;
  LLVMBasicBlockRef latch = NULL, exitb;
  LLVMIntPredicate pr;
  long long s, k, top;
  unsigned j, x;
  char *from_h, *to_h;
  LLVMUseRef u;
  for (j = 0; j < LLVMCountIncoming(p); j++)
    if (LLVMGetIncomingBlock(p, j) != pre) {
      inc = LLVMGetIncomingValue(p, j);
      latch = LLVMGetIncomingBlock(p, j);
    }
  if (!inc || !const_i(LLVMGetOperand(inc, 1), &s) || s <= 0) return 0;
  t = LLVMGetBasicBlockTerminator(latch);
  cmp = LLVMGetCondition(t);
  if (!const_i(LLVMGetOperand(cmp, 1), &k)) return 0;
  pr = LLVMGetICmpPredicate(cmp);
  top = pr == LLVMIntSLE || pr == LLVMIntSGT ? k : k - 1;
  exitb = LLVMGetSuccessor(t, 0) == R->fb[hb] ? LLVMGetSuccessor(t, 1) : LLVMGetSuccessor(t, 0);
  /* the loop: reachable from the head and reaching it */
  from_h = calloc(R->nfb + 1, 1);
  to_h = calloc(R->nfb + 1, 1);
  if (!from_h || !to_h) {
    free(from_h);
    free(to_h);
    return 0;
  }
  /* the natural loop of the back edge latch -> head: the head, and the
  ** blocks reachable from it that reach the latch without passing it */
  reach(R, hb, (int)hb, from_h);
  for (x = 0; x < R->nfb; x++) {
    char *seen = calloc(R->nfb + 1, 1);
    int lb = index_of(R, latch);
    if (!seen) break;
    reach(R, x, (int)hb, seen);
    to_h[x] = (char)(lb >= 0 && lb != (int)hb && from_h[x] && ((int)x == lb || seen[lb]));
    free(seen);
  }
  to_h[hb] = 1;
  /* one exit: every successor of a block of the loop is in it, but the
  ** latch's exit; no block of it returns */
  for (x = 0; x < R->nfb; x++) {
    LLVMValueRef tx;
    unsigned n;
    if (!to_h[x]) continue;
    tx = LLVMGetBasicBlockTerminator(R->fb[x]);
    n = tx ? LLVMGetNumSuccessors(tx) : 0;
    if (!n) goto no;
    for (j = 0; j < n; j++) {
      int y = index_of(R, LLVMGetSuccessor(tx, j));
      if (y >= 0 && to_h[y]) continue;
      if (R->fb[x] == latch && LLVMGetSuccessor(tx, j) == exitb) continue;
      goto no;
    }
  }
  /* every use of the variable in the loop */
  for (u = LLVMGetFirstUse(p); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef us = LLVMGetUser(u);
    int y = LLVMIsAInstruction(us) ? index_of(R, LLVMGetInstructionParent(us)) : -1;
    if (y < 0 || !to_h[y]) goto no;
  }
  free(from_h);
  L->p = p;
  L->header = R->fb[hb];
  L->latch = latch;
  L->c = c;
  L->s = s;
  L->last = c > top ? c : c + s * ((top - c) / s);
  L->in = to_h;
  return 1;
no:
  free(from_h);
  free(to_h);
  return 0;
}

int gj_adr_find_ivs(rev *R)
{
  unsigned b;
  for (b = 0; b < R->nfb && R->niv < GJ_ADR_MAXIV; b++) {
    LLVMBasicBlockRef pre = NULL;
    long long c = 0;
    LLVMValueRef p;
    rev_iv *L = &R->iv[R->niv];
    if (!R->loop[b] || !(p = gj_adr_iv(R->fb[b], &pre, &c))) continue;
    if (!counted(R, b, p, pre, c, L)) continue;
    L->slot = gj_adr_slot(R, LLVMTypeOf(p), NULL);
    R->niv++;
  }
  return 0;
}

LLVMValueRef gj_adr_iv_value(rev *R, LLVMValueRef v)
{
  int i;
  for (i = 0; i < R->niv; i++)
    if (R->iv[i].p == v)
      return LLVMBuildLoad2(R->a->B, LLVMTypeOf(v), R->iv[i].slot, "");
  return NULL;
}

void gj_adr_iv_edge(rev *R, unsigned b, LLVMBasicBlockRef P)
{
  LLVMBuilderRef B = R->a->B;
  int i, pi = index_of(R, P);
  for (i = 0; i < R->niv; i++) {
    rev_iv *L = &R->iv[i];
    LLVMTypeRef ty = LLVMTypeOf(L->p);
    if (P == L->latch && pi >= 0 && L->in[pi] && !L->in[b])   /* entering it */
      LLVMBuildStore(B, LLVMConstInt(ty, (unsigned long long)L->last, 1), L->slot);
    else if (R->fb[b] == L->header && P == L->latch)          /* its back edge */
      LLVMBuildStore(B, LLVMBuildSub(B, LLVMBuildLoad2(B, ty, L->slot, ""),
                                     LLVMConstInt(ty, (unsigned long long)L->s, 1), ""),
                     L->slot);
  }
}

void gj_adr_free_ivs(rev *R)
{
  int i;
  for (i = 0; i < R->niv; i++) free(R->iv[i].in);
  R->niv = 0;
}
