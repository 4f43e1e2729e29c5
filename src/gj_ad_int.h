/*
** The derivative transformation's inside (src/gj_ad.h): the state shared
** by gj_ad.c (preparation, the new signature, the value maps, messages)
** and the modes (gj_ad_fwd.c).
*/
#ifndef GJ_AD_INT_H
#define GJ_AD_INT_H

#include "gj_ad.h"

/* A map from LLVM values to LLVM values (open addressing). */
typedef struct gj_admap {
  LLVMValueRef *key, *val;
  size_t cap, n;
} gj_admap;

typedef struct gj_ad {
  LLVMContextRef C;
  LLVMModuleRef m;
  LLVMBuilderRef B;
  LLVMValueRef fn;        /* the new @gj_body */
  gj_admap tan;           /* float value -> its tangent */
  gj_admap sh;            /* array pointer -> its shadow's pointer */
  gj_admap roots;         /* an array parameter's pointer -> itself */
  gj_admap sadj;          /* reverse mode: a float scalar parameter -> the
                          ** pointer of its 1-element adjoint array */
  unsigned as_global;     /* the job's address space of arrays */
  LLVMValueRef tape, tape_len;   /* reverse mode: the tape argument */
  int loops;              /* the body has a loop */
  gj_sites *sites;        /* the kernel's check sites (the tape's) */
  int used_faults;        /* the body claims the fault record */
  LLVMValueRef seed_par;  /* inner derivatives: a struct parameter whose
                          ** float field at byte offset seed_off has
                          ** tangent 1 (its other fields 0), or NULL */
  long seed_off;
  const char *kname;
  unsigned line_kind;     /* !gj.line */
  gj_err *err;
} gj_ad;

LLVMValueRef gj_admap_get(const gj_admap *m, LLVMValueRef k);
int gj_admap_put(gj_admap *m, LLVMValueRef k, LLVMValueRef v);
void gj_admap_free(gj_admap *m);

/* A session on module m for kernel kname (errors into err), and its end
** (the builder, if made, and the maps). */
void gj_ad_init(gj_ad *a, LLVMModuleRef m, const char *kname, gj_err *err);
void gj_ad_free(gj_ad *a);

/* "SOURCE:LINE: derivative: <what> (in kernel K)" for instruction at
** (its !gj.line, else the nearest one before it in its block, else after
** it); -1. */
int gj_ad_refuse(gj_ad *a, LLVMValueRef at, const char *what);

/* Where instruction at is (as gj_ad_refuse finds it): its source into
** chunk and *line (0 and "?" when unknown). */
void gj_ad_where(gj_ad *a, LLVMValueRef at, char *chunk, size_t size, int *line);

/* The kernel array parameter that pointer p is derived from (through
** GEPs), or NULL (a local, shared or unknown pointer). */
LLVMValueRef gj_ad_root(gj_ad *a, LLVMValueRef p);

/* A float load (store 0) or store (1) I at p inside the struct parameter
** a->seed_par: *t the load's tangent (1 at the seeded field, else NULL:
** 0); 0, or -1 refused (a store into it, a field at an index that is not
** a constant).  Elsewhere *t NULL and 0. */
int gj_ad_seed(gj_ad *a, LLVMValueRef I, LLVMValueRef p, int store, LLVMValueRef *t);

/* Is t a float type (float or double)? */
int gj_ad_isfloat(LLVMTypeRef t);

/* A call I: 1 for gj.math.<fn> with a float result (fn filled), 0 for
** another declared intrinsic with no float result and no array with a
** shadow among its arguments; else refused (-1). */
int gj_ad_call(gj_ad *a, LLVMValueRef I, char *fn, size_t fnsize);

/* An atomic I: 0 on an array without a shadow, 1 for an atomic_add of
** floats whose result is not used on one with a shadow, else refused. */
int gj_ad_atomic(gj_ad *a, LLVMValueRef I);

/* A float load or store I at pointer p: 0 when p is in a kernel array or
** in constant data (a constant table's global: no derivative), else
** refused (a float in local or shared memory). */
int gj_ad_mem(gj_ad *a, LLVMValueRef I, LLVMValueRef p);

/* GEP I of an array with a shadow: the same GEP of the shadow, built at
** a->B, into a->sh.  0, or -1. */
int gj_ad_gep(gj_ad *a, LLVMValueRef I);

/* The blocks of fn in reverse postorder (*out malloc'ed, *n of them);
** back (may be NULL): the first instruction of a loop's header (the target
** of a back edge), or NULL. */
int gj_ad_rpo(LLVMValueRef fn, LLVMBasicBlockRef **out, unsigned *n,
              LLVMValueRef *back);

/* Zeros folded: is v the constant 0; x*y, x+y, x-y. */
int gj_ad_is_zero(LLVMValueRef v);
LLVMValueRef gj_ad_fmul(LLVMBuilderRef B, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef gj_ad_fadd(LLVMBuilderRef B, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef gj_ad_fsub(LLVMBuilderRef B, LLVMValueRef x, LLVMValueRef y);

/* The tangent of y = gj.math.<fn>(x [, z]) (gj_ad_math.c). */
int gj_ad_math(gj_ad *a, LLVMValueRef call, const char *fn, LLVMValueRef x,
               LLVMValueRef dx, LLVMValueRef z, LLVMValueRef dz, LLVMValueRef y,
               LLVMValueRef *out);

/* Device functions inlined (mark: all of them made alwaysinline first, so
** that a derivative sees one function; else those codegen marked), slots
** in SSA (every function), then body's extractvalues forwarded.  No new
** float operations appear: SROA and instsimplify only forward and fold. */
int gj_ad_prepare(gj_ad *a, LLVMValueRef body, int mark);
/* Each float extractvalue of fn that reads an inserted value or a constant
** aggregate's element through a chain of insertvalues is replaced by it. */
void gj_ad_forward_extracts(LLVMValueRef fn);

/* Forward mode over a->fn, whose shadows are in a->tan and a->sh. */
int gj_ad_forward(gj_ad *a);
/* Reverse mode over a->fn (gj_ad_rev.c): adjoints of the arguments with
** a shadow (a->tan: a scalar's 1-element adjoint array, a->sh: arrays). */
int gj_ad_reverse(gj_ad *a);

#endif
