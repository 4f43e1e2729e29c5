/*
** The signature's type names -> parameter types (src/gj_params.h).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gj_params.h"

/* The array part of a type name, from `suf` (just after the element's
** name): "" (not an array), "[]" (an array) or "[][4][3]" (a multi-
** dimensional one: the outer count from the descriptor, dims below it
** into dims[0..*n)).  0, or -1 when it is neither. */
static int array_suffix(const char *suf, int *arr, int64_t *dims, int *n)
{
  *arr = 0;
  *n = 0;
  if (!*suf) return 0;
  if (strncmp(suf, "[]", 2) != 0) return -1;
  *arr = 1;
  suf += 2;
  while (*suf) {
    char *e;
    long long d;
    if (*suf != '[' || *n >= GJ_MAXDIMS) return -1;
    d = strtoll(suf + 1, &e, 10);
    if (e == suf + 1 || *e != ']' || d < 0 || d > ((long long)1 << 40)) return -1;
    dims[(*n)++] = d;
    suf = e + 1;
  }
  return 0;
}

/* A global array parameter j of type t: its tag, and its shape when
** dims[0..n) are the dimensions below the outer one. */
static int array_param(gj_cs *cs, const gj_compile_opts *o, int j, gj_ty *t,
                       const int64_t *dims, int n, gj_err *err)
{
  t->k = GJ_T_ARR;
  t->space = GJ_SPACE_GLOBAL;
  if (o->boundscheck) t->aux = GJ_ARR_TAG(j, (int)((o->one_based >> j) & 1));
  if (n > 0) {
    int shp;
    if (gj_cs_shape(cs, dims, n, &shp))
      return gj_err_prefix(err, "kernel %s: argument %d: ", o->name, j + 1);
    t->shp = (uint8_t)shp;
    t->nd = (uint8_t)n;
  }
  return 0;
}

/* A struct: the layout text "{...}" (gj_type.h) into cs's struct table;
** with "[]" after it, an array of them (and "[N]..." after that, a
** multi-dimensional one).  A struct alone is passed as LuaJIT passes a
** struct cdata to a function, by reference: to the launch and the
** backends it is an array of one element, in the kernel a reference
** (GJ_T_SREF) to it. */
static int struct_param(gj_cs *cs, const gj_compile_opts *o, int j,
                        gj_ty *t, gj_err *err)
{
  const char *close = strrchr(o->types[j], '}');
  size_t n = close ? (size_t)(close - o->types[j]) + 1 : strlen(o->types[j]);
  int arr, nd, sid, rc;
  int64_t dims[GJ_MAXDIMS];
  char *text;
  if (array_suffix(o->types[j] + n, &arr, dims, &nd))
    return gj_err_set(err, "kernel %s: unsupported type '%s' for argument %d",
                      o->name, o->types[j], j + 1);
  text = malloc(n + 1);
  if (!text) return gj_err_set(err, "out of memory");
  memcpy(text, o->types[j], n);
  text[n] = '\0';
  rc = gj_cs_struct(cs, text, &sid);
  free(text);
  if (rc) return gj_err_prefix(err, "kernel %s: argument %d: ", o->name, j + 1);
  memset(t, 0, sizeof(*t));
  t->k = GJ_T_SREF;
  t->s = GJ_U8;
  t->sid = (uint8_t)(sid + 1);
  t->space = GJ_SPACE_GLOBAL;
  if (arr) return array_param(cs, o, j, t, dims, nd, err);
  return 0;
}

/* Type names of the signature -> parameter types. */
int gj_param_types(gj_cs *cs, const gj_compile_opts *o, gj_ty *params,
                       gj_err *err)
{
  int j;
  for (j = 0; j < o->nparams; j++) {
    char nm[64];
    const char *br = strchr(o->types[j], '[');
    size_t n = br ? (size_t)(br - o->types[j]) : strlen(o->types[j]);
    int arr, nd;
    int64_t dims[GJ_MAXDIMS];
    gj_scalar s;
    if (o->types[j][0] == '{') {
      if (struct_param(cs, o, j, &params[j], err)) return -1;
      continue;
    }
    snprintf(nm, sizeof(nm), "%.*s", (int)n, o->types[j]);
    if (array_suffix(o->types[j] + n, &arr, dims, &nd) || n >= sizeof(nm))
      return gj_err_set(err, "kernel %s: unsupported type '%s' for argument %d",
                        o->name, o->types[j], j + 1);
    if (!arr && gj_lnum_parse(nm) != GJ_LNUM_NONE) {
      const gj_lnum_class *c = &gj_lnum_classes[gj_lnum_parse(nm)];
      params[j] = gj_ty_lnum(NULL, c->lo, c->hi);   /* in range: never a float */
      continue;
    }
    if (gj_scalar_parse(nm, &s))
      return gj_err_set(err, "kernel %s: unsupported type '%s' for argument %d",
                        o->name, o->types[j], j + 1);
    params[j] = gj_ty_num(s);
    params[j].cint = !arr && gj_scalar_isint(s);   /* cdata in LuaJIT */
    if (arr && array_param(cs, o, j, &params[j], dims, nd, err)) return -1;
  }
  return 0;
}
