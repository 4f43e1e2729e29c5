/*
** Reverse mode's inside (src/gj_ad_rev.c, gj_ad_tape.c): the state of one
** reverse transformation, and the tape's stacks and the launch's shape,
** which gj_ad_tape.c builds.
*/
#ifndef GJ_AD_REV_H
#define GJ_AD_REV_H

#include "gj_ad_int.h"

/* A counted loop reversed by counting its variable down (gj_ad_loop.c). */
typedef struct rev_iv {
  LLVMValueRef p, slot;       /* the variable (a header phi), its value in the
                              ** reverse (an integer slot) */
  LLVMBasicBlockRef header, latch;
  long long c, s, last;       /* start, step, the value of the last iteration */
  char *in;                   /* per forward block: in this loop? */
} rev_iv;
#define GJ_ADR_MAXIV 16

typedef struct rev {
  gj_ad *a;
  LLVMBuilderRef Ba;          /* slots: at the start of the entry block */
  LLVMBuilderRef Bs;          /* stores of kept values in the forward blocks */
  gj_admap adj;               /* float value -> its adjoint's slot */
  gj_admap keep;              /* forward value -> the slot keeping it */
  gj_admap rb;                /* forward block (as a value) -> reverse block */
  LLVMBasicBlockRef *fb;      /* the forward blocks, in reverse postorder */
  unsigned nfb;
  LLVMValueRef **ins;         /* per forward block: its instructions as the
                              ** kernel had them, NULL-terminated */
  char *loop;                 /* per forward block: is it in a loop? */
  gj_admap stk;               /* forward value or block -> its stack's top
                              ** (an i64 slot); the stack's number is kept
                              ** in stkid */
  gj_admap stkid;             /* forward value or block -> stack number + 1
                              ** (as an i64 constant) */
  gj_admap mark;              /* in-loop forward value -> the reverse
                              ** instruction after which it is popped (or its
                              ** reverse block, for its start) */
  int nstk;
  gj_admap own;               /* array parameter -> itself, where every access
                              ** is at index gj.global_id(0) */
  gj_admap rend;              /* reverse block -> the block its code ends in
                              ** (the plain-or-atomic adds split blocks) */
  gj_admap atom;              /* array parameter -> itself, where the kernel
                              ** itself adds into it atomically */
  gj_admap written;           /* array parameter -> itself, where the kernel
                              ** writes into it (a store, an atomic, a call) */
  int wild;                   /* the kernel writes through a pointer of no
                              ** known array: no load is recomputed */
  gj_admap memo;              /* in-loop value -> its recomputation in the
                              ** reverse block being built */
  rev_iv iv[GJ_ADR_MAXIV];    /* counted loops reversed by their variable */
  int niv;
  LLVMValueRef oned;          /* slot: is the launch 1-D (i1)? NULL: unused */
  LLVMBasicBlockRef cur;      /* the reverse block being built */
  LLVMValueRef cap, base, need;   /* slots: entries per stack, the work
                                  ** item's part of the tape, the most
                                  ** entries a stack needed */
} rev;

/* Mark the adjoint's atomic add I as one whose order against the rest of
** the launch does not matter ("gj.adj" metadata): nothing in the launch
** reads the element before the launch ends, but a work item whose forward
** pass raced with another's (docs/autodiff.md).  The cpu target then
** sums such adds per call of its entry and adds once per element
** (targets/native_adj.c). */
void gj_adr_mark_adj(gj_ad *a, LLVMValueRef I);

/* The basic block b as a value (the maps' keys). */
LLVMValueRef gj_adr_bbv(LLVMBasicBlockRef b);
/* A slot of type t in the entry block, set to init (NULL: not set). */
LLVMValueRef gj_adr_slot(rev *R, LLVMTypeRef t, LLVMValueRef init);
LLVMTypeRef gj_adr_i64(rev *R);
/* A call of the declared intrinsic name (made on first use) at a->B. */
LLVMValueRef gj_adr_intrinsic(gj_ad *a, const char *name, LLVMTypeRef ret,
                              LLVMValueRef *args, unsigned n);

/* The tape (gj_ad_tape.c).  The stack of key (a value, or a block's
** predecessor index): its top's slot, *id its number; made on first use. */
LLVMValueRef gj_adr_stack(rev *R, LLVMValueRef key, int *id);
/* Push v on stack id at B; its top at B; pop it at B. */
void gj_adr_push(rev *R, LLVMBuilderRef B, LLVMValueRef top, int id, LLVMValueRef v);
LLVMValueRef gj_adr_peek(rev *R, LLVMBuilderRef B, LLVMValueRef top, int id, LLVMTypeRef t);
void gj_adr_pop(rev *R, LLVMBuilderRef B, LLVMValueRef top);
/* Phis of one block that take the same value on every edge (the typer's
** slots give one loop variable several copies) merged into the first, so
** that the reverse keeps one stack for them (gj_ad_own.c). */
void gj_adr_merge_phis(LLVMValueRef fn);
/* A counted loop's variable among block b's phis (gj_ad_own.c): an
** integer phi of two edges, a constant *c on the one from *entry, an
** increment by a positive constant on the other, bounded (no wrap): it is
** *c exactly when b was entered from *entry.  NULL: none. */
LLVMValueRef gj_adr_iv(LLVMBasicBlockRef b, LLVMBasicBlockRef *entry, long long *c);
/* Counted loops (gj_ad_loop.c): a loop whose head has a counted variable
** (gj_adr_iv) with a constant bound, one exit (its latch's test) and no use
** of the variable outside it runs its reverse by counting the variable
** down from its last value (known: start, step and bound are constants),
** so that the variable needs no stack.  Found once (R->iv); iv_value: the
** variable's value where the reverse (a->B) needs it, or NULL for another
** value; iv_edge: at a->B on the reverse edge from block b back to its
** predecessor P: entering the loop (from its exit) sets the variable to its
** last value, taking the back edge steps it down. */
int gj_adr_find_ivs(rev *R);
LLVMValueRef gj_adr_iv_value(rev *R, LLVMValueRef v);
void gj_adr_iv_edge(rev *R, unsigned b, LLVMBasicBlockRef P);
void gj_adr_free_ivs(rev *R);
/* The arrays with a shadow that are the work item's own in a 1-D launch
** (gj_ad_own.c), into R->own; 0 or -1 (out of memory). */
int gj_adr_find_own(rev *R);
/* At the entry (a->B there): the work item's part of the tape and the
** stacks' length; whether the launch is 1-D (R->oned). */
void gj_adr_tape_setup(rev *R);
void gj_adr_oned_setup(rev *R);
/* The block that fails the launch when a stack ran out (it returns), with
** the site at loop_at; NULL with a->err set. */
LLVMBasicBlockRef gj_adr_tape_full(rev *R, LLVMValueRef loop_at);

#endif
