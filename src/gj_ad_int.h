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
  const char *kname;
  unsigned line_kind;     /* !gj.line */
  gj_err *err;
} gj_ad;

LLVMValueRef gj_admap_get(const gj_admap *m, LLVMValueRef k);
int gj_admap_put(gj_admap *m, LLVMValueRef k, LLVMValueRef v);
void gj_admap_free(gj_admap *m);

/* "SOURCE:LINE: derivative: <what> (in kernel K)" for instruction at
** (its !gj.line, else the nearest one before it in its block); -1. */
int gj_ad_refuse(gj_ad *a, LLVMValueRef at, const char *what);

/* The kernel array parameter that pointer p is derived from (through
** GEPs), or NULL (a local, shared or unknown pointer). */
LLVMValueRef gj_ad_root(gj_ad *a, LLVMValueRef p);

/* Is t a float type (float or double)? */
int gj_ad_isfloat(LLVMTypeRef t);

/* Forward mode over a->fn, whose shadows are in a->tan and a->sh. */
int gj_ad_forward(gj_ad *a);

#endif
