/*
** The work-item vectorizer's shared state (native_vec.c, native_vec_build.c,
** native_vec_loop.c, native_vec_if.c, native_vec_lin*.c):
** what the analysis knows of each value of the fast loop and the helpers
** that build vector code from it.  Internal to the native target.
*/
#ifndef GJ_NATIVE_VEC_H
#define GJ_NATIVE_VEC_H

#include "native.h"

enum { V_UNI, V_LIN, V_VEC };   /* ordered: a value only moves up */

#define VEC_MAX_STRIDE ((int64_t)1 << 40)
#define VEC_MAX_ROUNDS 64
#define VEC_MAX_ARGS 16      /* operands of a call or GEP built per lane */
#define VX_MAXW 64           /* lanes at most (choose_width) */
#define VX_INTERLEAVE 2      /* vectors per operation in kernels with loops */

/* A value of the fast loop (key: an instruction, or a block as a value). */
typedef struct vent {
  LLVMValueRef k;
  int kind;
  int64_t stride;               /* V_LIN */
  LLVMValueRef v;               /* its scalar (uniform, linear: lane 0's),
                                ** its vector, or a block's copy */
} vent;

typedef struct vctx {
  LLVMModuleRef m;
  LLVMContextRef c;
  LLVMBuilderRef b;
  LLVMTargetDataRef td;
  cpu_split_site *s;
  LLVMValueRef fn, lx, more;    /* gj_entry, the loop's phi and condition */
  LLVMBasicBlockRef latch;
  LLVMBasicBlockRef *bbs;       /* the fast loop's blocks, head first */
  size_t nbbs, capbbs;
  vent *tab;                    /* open addressing, cap a power of two */
  size_t cap, n;
  unsigned W;                   /* lanes: 2 .. VX_MAXW */
  LLVMTypeRef i8, i32, i64;
  LLVMValueRef vlx, vnext, vend;
  LLVMBasicBlockRef vhead, vlatch, spre;
  const char *why;              /* why not, once known */
  int why_line;                 /* its Lua line, when known (else 0) */
  struct vloop *loops;          /* inner loops with one exit block */
  size_t nloops;
  int again;                    /* a loop became varying: another round */
  struct vif *ifs;              /* ifs of the shape native_vec_if.c takes */
  size_t nifs;
  LLVMValueRef curmask;         /* building: the lanes of the block's arm */
  /* a kernel with barriers (native_vec_frame.c): the work item's frame in
  ** the loop (linear, stride the frame's size), the first item's */
  LLVMValueRef frame, frames;
  struct vslot *slots;
  size_t nslots;
  LLVMValueRef md_scope, md_noalias;  /* building: frame / other accesses */
  int soft;                     /* why is a shape native_vec_lin.c may take */
  struct vlin *lin;             /* linearized (native_vec_lin.c), or NULL */
  int lin_loops;                /* its inner loops */
} vctx;

/* A slot of the frame: the bytes [off, off + size) of every work item's
** frame.  In the vector loop the W frames of a group of lanes are laid out
** by slots (lane l's bytes of slot off at frame_0 + W * off + l * size),
** so that a varying slot is one vector access; a slot whose stores are all
** uniform, or linear with one stride, outside masks, keeps lane 0's value
** only (at frame_0 + W * off). */
typedef struct vslot {
  int64_t off;
  unsigned size;
  int kind, seen;               /* V_UNI, V_LIN (stride) or V_VEC */
  int64_t stride;
  int nkind, nseen;             /* this round's, from its stores */
  int64_t nstride;
} vslot;

/* An inner loop of the fast loop whose blocks form one path from its head
** to its latch, leaving only to one exit block (native_vec_loop.c).  When
** a branch of it that leaves varies with the work item, the lanes run it
** under a mask until every lane has left. */
#define VEC_MAX_OUTS 16
typedef struct vloop {
  LLVMBasicBlockRef head, latch, exit, outside;  /* outside: head's entry */
  LLVMBasicBlockRef *body;      /* the path, head first */
  size_t nbody;
  LLVMValueRef outs[VEC_MAX_OUTS];  /* the phis in exit of its values used
                                ** after it (one incoming per exiting block) */
  size_t nouts;
  int varying;                  /* a varying branch leaves it */
  /* building */
  LLVMValueRef mask, res[VEC_MAX_OUTS];      /* along the path */
  LLVMValueRef mphi, rphi[VEC_MAX_OUTS];     /* in the head's copy */
  LLVMBasicBlockRef vexit;      /* where the lanes' results meet */
} vloop;

/* (LLVMOpcode: Add .. Xor and Trunc .. BitCast are runs of values) */
static inline int vx_is_binop(LLVMOpcode op)
{
  return op >= LLVMAdd && op <= LLVMXor;
}

static inline int vx_is_cast(LLVMOpcode op)
{
  return (op >= LLVMTrunc && op <= LLVMBitCast) || op == LLVMAddrSpaceCast;
}

/* An if (native_vec_if.c): head A ends in the branch br; arm[0] runs when
** its condition holds, arm[1] when not (either may be empty); both meet at
** join. */
typedef struct vif {
  LLVMBasicBlockRef head, join;
  LLVMValueRef br;
  LLVMBasicBlockRef *arm[2];
  size_t narm[2];
  int varying;                  /* its condition varies: if-converted */
  LLVMValueRef mask[2];         /* building: the condition, its negation */
} vif;

/* native_vec.c */
vent *vx_get(const vctx *x, LLVMValueRef k);
vent *vx_put(vctx *x, LLVMValueRef k);
int vx_kind_of(const vctx *x, LLVMValueRef v, int64_t *stride);
int vx_in_loop(const vctx *x, LLVMBasicBlockRef bb);
int vx_refuse(vctx *x, const char *why);
/* vx_refuse at branch I (or NULL), with the Lua line codegen put on it
** (!gj.line, src/gj_cg.c) when it is still there: the note ends "at line N". */
int vx_refuse_at(vctx *x, LLVMValueRef I, const char *why);
/* vx_refuse_at for a shape that linearizing (native_vec_lin.c) may take:
** cpu_vectorize then tries that. */
int vx_refuse_soft(vctx *x, LLVMValueRef I, const char *why);
int vx_readnone(LLVMValueRef f);
/* Put bb into the blocks before x->bbs[at] (and into the table). */
int vx_insert_bb(vctx *x, size_t at, LLVMBasicBlockRef bb);
/* native_vec_build.c: vector values */
LLVMTypeRef vx_vty(const vctx *x, LLVMTypeRef t);
LLVMValueRef vx_splat(vctx *x, LLVMValueRef s);
LLVMValueRef vx_scal(const vctx *x, LLVMValueRef v);
LLVMValueRef vx_vec(vctx *x, LLVMValueRef v);
LLVMBasicBlockRef vx_vblock(const vctx *x, LLVMBasicBlockRef bb);

/* native_vec_build.c */
/* Do the vector forms of these intrinsics give each lane the scalar's bits
** (sqrt, fabs, floor, ceil, trunc)? */
int vx_exact_intrinsic(unsigned id);
/* The vector loop, entered before the fast loop (x->W set). */
int vx_build(vctx *x);

/* native_vec_loop.c */
/* Find the inner loops (after collect) and give each value of one that is
** used after it a phi in its exit block (LCSSA form: the scalar code means
** the same).  -1: out of memory. */
int vx_find_loops(vctx *x);
/* The loop that the conditional branch br leaves, or NULL. */
vloop *vx_exit_of(const vctx *x, LLVMValueRef br);
/* Is phi one of a varying loop's exit phis (varying, built apart)? */
int vx_exit_phi(const vctx *x, LLVMValueRef phi);
/* What a loop under a mask may not hold (stores, loads at varying
** addresses, calls with effects, varying division); -1 with x->why. */
int vx_check_loops(vctx *x);
/* Building: the mask and result phis at the head of a varying loop (before
** its first instruction that is not a phi); the terminator of a block of
** one (1: done); the incoming values from outside once all is built. */
void vx_loop_head(vctx *x, LLVMBasicBlockRef bb);
int vx_loop_term(vctx *x, LLVMBasicBlockRef bb, LLVMValueRef t);
void vx_loops_finish(vctx *x);
void vx_loops_free(vctx *x);

/* native_vec_frame.c: kernels with barriers */
/* Check the frame's uses and find its slots (once, before analyze); -1 with
** x->why when the kernel cannot be vectorized. */
int vx_frame_slots(vctx *x);
/* Before collect: loads of a slot stored or loaded earlier in the same
** block become that value, stores to slots nothing loads go; -1: out of
** memory. */
int vx_frame_forward(vctx *x);
/* The slot that I (a load or store) accesses, or NULL when it is no frame
** access. */
vslot *vx_frame_slot(const vctx *x, LLVMValueRef I);
/* The kind of a frame access (the slot's; a store's value joins it). */
int vx_frame_kind(vctx *x, LLVMValueRef I, vslot *sl, int64_t *st);
/* End of an analysis round: the slots take what their stores gave; 1 when
** one changed. */
int vx_frame_round(vctx *x);
/* Building: a frame access; alias metadata on other accesses. */
LLVMValueRef vx_frame_emit(vctx *x, LLVMValueRef I, vslot *sl);
void vx_frame_noalias(vctx *x, LLVMValueRef I);

/* native_vec_if.c */
/* Find the ifs of that shape (after collect); -1: out of memory. */
int vx_find_ifs(vctx *x);
/* The if whose branch is br, or NULL. */
vif *vx_if_of(const vctx *x, LLVMValueRef br);
/* The varying if with bb in an arm (*side: 0 true, 1 false), or NULL. */
vif *vx_arm_of(const vctx *x, LLVMBasicBlockRef bb, int *side);
/* Is phi in the join of a varying if (a select, built apart)? */
int vx_join_phi(const vctx *x, LLVMValueRef phi);
/* What an arm may not hold (division by a value, calls with effects). */
int vx_check_ifs(vctx *x);
/* Building: the terminator of a varying if's head or arm block (1: done);
** the mask of bb's arm (NULL: all lanes); a join phi's select. */
int vx_if_term(vctx *x, LLVMBasicBlockRef bb, LLVMValueRef t);
LLVMValueRef vx_mask_of(const vctx *x, LLVMBasicBlockRef bb);
LLVMValueRef vx_join_select(vctx *x, LLVMValueRef phi);
void vx_ifs_free(vctx *x);

/* native_vec_lin.c: any reducible control flow, linearized with masks */
/* The order, loops and dominators (after collect, before analyze); -1 with
** x->why when refused (or out of memory, without). */
int vx_lin_plan(vctx *x);
/* Does bb run under a mask (not every lane)? */
int vx_lin_masked(const vctx *x, LLVMBasicBlockRef bb);
/* Is bb in an inner loop? */
int vx_lin_in_loop(const vctx *x, LLVMBasicBlockRef bb);
/* Must phi be a vector (it blends lanes from several edges)? */
int vx_lin_phi_varying(vctx *x, LLVMValueRef phi);
/* Building: every block in the order, emit_block doing each one's code;
** in it, a phi's value, the block's mask (NULL: all lanes), and the
** masks of a terminator's edges. */
int vx_lin_emit(vctx *x, void (*emit_block)(vctx *, LLVMBasicBlockRef));
LLVMValueRef vx_lin_phi(vctx *x, LLVMValueRef phi);
LLVMValueRef vx_lin_mask(const vctx *x, LLVMBasicBlockRef bb);
void vx_lin_term(vctx *x, LLVMBasicBlockRef bb, LLVMValueRef t);
/* The line of the branch that dominates bb nearest (!gj.line), or 0. */
int vx_lin_line(const vctx *x, LLVMBasicBlockRef bb);
void vx_lin_free(vctx *x);

#endif
