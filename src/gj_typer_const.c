/*
** Typer: constant tables (docs/typing.md, "Constant tables").  A Lua table
** of numbers a kernel reaches by name (an upvalue, a global, a field of
** one) and indexes with a value that is not a constant (`W[k]`, k a loop
** counter) is compiled in as read-only constant data: its numbers t[1..n],
** read once, when the kernel is compiled (as numbers read from upvalues
** are), into the kv entry, where codegen (gj_cg_const.c) finds them.  They
** are in the module, so the disk cache key, which hashes the module,
** holds them.
*/
#include <math.h>
#include <stdlib.h>

#include "gj_typer.h"
#include "gj_typer_int.h"

#define GJ_CONST_MAX 65536   /* elements of one constant table */

/* t[1], t[2], ... up to the first nil, raw reads through the source. */
static int read_table(gj_cs *cs, gj_fn *fn, int i, gj_kv *k)
{
  gj_kvsrc *src = cs->src;
  double *d = NULL, lo = 0, hi = 0;
  int n = 0, cap = 0, whole = 1;
  for (;;) {
    gj_kvinfo info;
    int h = src->ops->field(src, k->h, NULL, n + 1);
    src->ops->classify(src, h, &info);
    src->ops->release(src, h);
    if (info.cls == GJ_KVC_NIL) break;
    if (info.cls != GJ_KVC_NUMBER || n == GJ_CONST_MAX) {
      free(d);
      if (n == GJ_CONST_MAX)
        return gj_typer_error(cs, fn, i, "table '%s' has more than %d elements: "
                              "too many for constant data", k->name, GJ_CONST_MAX);
      return gj_typer_error(cs, fn, i, "table '%s' holds a %s at [%d]: a table "
                            "indexed with a variable in a kernel must be a list "
                            "of numbers", k->name,
                            info.cls == GJ_KVC_TABLE ? "table (nested tables "
                            "are not supported)" : "value that is not a number",
                            n + 1);
    }
    if (n == cap) {
      double *m = realloc(d, sizeof(double) * (size_t)(cap = cap ? cap * 2 : 16));
      if (!m) {
        free(d);
        return gj_err_set(cs->err, "out of memory");
      }
      d = m;
    }
    d[n++] = info.num;
    if (!(info.num == floor(info.num) && info.num >= -2147483648.0 &&
          info.num <= 2147483647.0 && !(info.num == 0 && signbit(info.num))))
      whole = 0;
    lo = fmin(lo, info.num);
    hi = fmax(hi, info.num);
  }
  if (n == 0)
    return gj_typer_error(cs, fn, i, "table '%s' has no number at [1]: a table "
                          "indexed with a variable in a kernel must be a list "
                          "of numbers", k->name);
  k->cdata = d;
  k->cn = n;
  k->cwhole = whole;
  k->clo = lo;   /* both hold 0, what an index outside 1..n reads */
  k->chi = hi;
  return 0;
}

int gj_typer_const_table(gj_cs *cs, gj_fn *fn, int i, int kv, gj_ty idx,
                         gj_ty *out)
{
  gj_kv *k = &cs->kv[kv];
  if (gj_typer_num_operand(cs, fn, i, idx, "indexing a table")) return -1;
  if (!k->cdata && read_table(cs, fn, i, k)) return -1;
  /* whole numbers: an lnum, exact as the double; else the double (the
  ** default float with precision = "single", as a weak float becomes) */
  *out = k->cwhole ? gj_ty_lnum(cs, k->clo, k->chi) : gj_ty_num(gj_ty_deffloat(cs));
  return 0;
}
