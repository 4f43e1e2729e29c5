/*
** The work-item vectorizer's linearization (native_vec_lin.c plans,
** native_vec_lin_build.c builds): its state.  Internal to the native target.
*/
#ifndef GJ_NATIVE_VEC_LIN_H
#define GJ_NATIVE_VEC_LIN_H

#include "native_vec.h"

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

typedef struct vlin {
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

  /* building */
  char *uni;                    /* per loop: no varying branch in it */
  int ucur;                     /* the uniform loop being built, or -1 */
  LLVMValueRef umask;           /* its lanes (NULL: all) */
  LLVMBasicBlockRef upre, upost, *stub;  /* its pre and post blocks, exit stubs */
} vlin;

static inline int vl_bidx(const vctx *x, LLVMBasicBlockRef bb)
{
  vent *e = vx_get(x, LLVMBasicBlockAsValue(bb));
  return e ? (int)e->stride : -1;
}

static inline int vl_nsucc(LLVMBasicBlockRef bb)
{
  LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
  return t ? (int)LLVMGetNumSuccessors(t) : 0;
}

static inline LLVMBasicBlockRef vl_succ(LLVMBasicBlockRef bb, int j)
{
  return LLVMGetSuccessor(LLVMGetBasicBlockTerminator(bb), (unsigned)j);
}

/* Does loop l contain block b (l == -1: the body)? */
static inline int vl_in_loop(const vlin *L, int l, int b)
{
  int k;
  if (l < 0) return 1;
  for (k = L->loop[b]; k >= 0; k = L->loops[k].parent)
    if (k == l) return 1;
  return 0;
}

/* Is the edge p -> s an exit of an inner loop? */
static inline int vl_is_exit(const vlin *L, int p, int s)
{
  return L->loop[p] >= 0 && !vl_in_loop(L, L->loop[p], s);
}

#endif
