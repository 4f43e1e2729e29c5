/*
** Typer: constant tables (docs/typing.md, "Constant tables").  A Lua table
** of numbers, or of tables of numbers to any one depth, that a kernel
** reaches by name (an upvalue, a global, a field of one) and indexes with a
** value that is not a constant (`W[k]`, `T[i][j]`, k a loop counter) is
** compiled in as read-only constant data: its numbers, read once, when the
** kernel is compiled (as numbers read from upvalues are), into the kv
** entry (gj_typer.h: cdata, cdir), where codegen (gj_cg_const.c) finds
** them.  They are in the module, so the disk cache key, which hashes the
** module, holds them.  `T[i]` of a nested table is a GJ_T_CROW, a node of
** that data; rows may differ in length (ragged), and an index outside a
** table reads the empty node, or 0.
*/
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gj_typer.h"
#include "gj_typer_int.h"

#define GJ_CONST_MAX 65536   /* numbers, and tables, of one constant table */
#define GJ_CONST_DEPTH 8     /* levels of tables */

/* The tables read so far, breadth-first: node n's handle (0 once read, and
** for the root, which is the kv's), where it is in its parent (for
** messages), and its start and length (cdir's pairs). */
typedef struct walk {
  int *h, *par, *pix;
  int32_t *dir;
  int n, cap;
  double *d;
  int64_t *q;    /* an array of 64-bit integers' (gj_kv.ci64) */
  int dn, dcap;
} walk;

static int grow(void **p, int cap, size_t size)
{
  void *m = realloc(*p, size * (size_t)cap);
  if (!m) return -1;
  *p = m;
  return 0;
}

static int add_node(walk *w, int par, int pix, int h)
{
  if (w->n == w->cap) {
    int c = w->cap ? w->cap * 2 : 16;
    if (grow((void **)&w->h, c, sizeof(int)) || grow((void **)&w->par, c, sizeof(int)) ||
        grow((void **)&w->pix, c, sizeof(int)) ||
        grow((void **)&w->dir, c, 2 * sizeof(int32_t)))
      return -1;
    w->cap = c;
  }
  w->h[w->n] = h;
  w->par[w->n] = par;
  w->pix[w->n] = pix;
  w->dir[2 * w->n] = w->dir[2 * w->n + 1] = 0;
  w->n++;
  return 0;
}

static int add_num(walk *w, double v, int64_t q)
{
  if (w->dn == w->dcap) {
    int c = w->dcap ? w->dcap * 2 : 16;
    if (grow((void **)&w->d, c, sizeof(double)) || grow((void **)&w->q, c, sizeof(int64_t)))
      return -1;
    w->dcap = c;
  }
  w->q[w->dn] = q;
  w->d[w->dn++] = v;
  return 0;
}

/* The C integer of a 64-bit element's decimal text s (types.const_data),
** ci64 1 for int64_t, 2 for uint64_t: 0, or -1 when s is no such text. */
static int parse_i64(const char *s, int ci64, int64_t *out)
{
  char *end;
  if (!s || !*s) return -1;
  errno = 0;
  if (ci64 == 2) *out = (int64_t)strtoull(s, &end, 10);
  else *out = (int64_t)strtoll(s, &end, 10);
  return errno || *end ? -1 : 0;
}

/* "[2][3]": where item pix of node par is, as Lua indexes it. */
static void path(const walk *w, int par, int pix, char *buf, size_t n)
{
  int ix[GJ_CONST_DEPTH + 2], m = 0;
  size_t len = 0;
  for (; par >= 1 && m < GJ_CONST_DEPTH + 2; pix = w->pix[par], par = w->par[par])
    ix[m++] = pix;
  buf[0] = 0;
  while (m > 0 && len + 16 < n)
    len += (size_t)snprintf(buf + len, n - len, "[%d]", ix[--m]);
}

/* Why item pix of node par cannot be constant data. */
static int bad(gj_cs *cs, gj_fn *fn, int i, const gj_kv *k, const walk *w,
               int par, int pix, const char *what, int tpar, int tpix)
{
  char at[128], other[128];
  path(w, par, pix, at, sizeof(at));
  if (tpar < 0)
    return gj_typer_error(cs, fn, i, "table '%s' holds %s at %s: a table indexed "
                          "with a variable in a kernel must hold numbers, or "
                          "tables of numbers", k->name, what, at);
  path(w, tpar, tpix, other, sizeof(other));
  return gj_typer_error(cs, fn, i, "table '%s' holds %s at %s but a table at %s: "
                        "the numbers of nested constant tables must all be at "
                        "one depth", k->name, what, at, other);
}

/* Items of node nd at level lv (the root's: 1).  depth: the level holding
** numbers, 0 until one is seen; *tpar, *tpix: the first table seen at this
** level (-1: none). */
static int read_node(gj_cs *cs, gj_fn *fn, int i, const gj_kv *k, walk *w,
                     int nd, int lv, int *depth, int *tpar, int *tpix)
{
  gj_kvsrc *src = cs->src;
  int j, first = w->n, dstart = w->dn, h = nd == 1 ? k->h : w->h[nd];
  for (j = 1;; j++) {
    gj_kvinfo info;
    int64_t q = 0;
    int e = src->ops->field(src, h, NULL, j);
    src->ops->classify(src, e, &info);
    if (info.cls == GJ_KVC_NIL) {
      src->ops->release(src, e);
      break;
    }
    if (info.cls == GJ_KVC_TABLE && (info.base0 != k->base0 || info.i64 != k->ci64)) {
      char at[128];
      src->ops->release(src, e);
      path(w, nd, j, at, sizeof(at));
      return gj_typer_error(cs, fn, i, "table '%s' holds %s at %s: constant data "
                            "nests Lua tables in Lua tables, or is one FFI array",
                            k->name, info.base0 ? "an FFI array" : "a Lua table", at);
    }
    if (info.cls == GJ_KVC_TABLE && *depth != lv && w->n < GJ_CONST_MAX) {
      if (*tpar < 0) {
        *tpar = nd;
        *tpix = j;
      }
      if (add_node(w, nd, j, e)) return gj_err_set(cs->err, "out of memory");
      continue;   /* e is the node's until it is read */
    }
    src->ops->release(src, e);
    if (info.cls == GJ_KVC_TABLE && *depth == lv) {
      char at[128];
      path(w, nd, j, at, sizeof(at));
      return gj_typer_error(cs, fn, i, "table '%s' holds a table at %s but "
                            "numbers at the same depth: the numbers of nested "
                            "constant tables must all be at one depth",
                            k->name, at);
    }
    if (w->n >= GJ_CONST_MAX || w->dn >= GJ_CONST_MAX)
      return gj_typer_error(cs, fn, i, "table '%s' has more than %d elements: "
                            "too many for constant data", k->name, GJ_CONST_MAX);
    if (k->ci64 ? info.cls != GJ_KVC_STRING || parse_i64(info.str, k->ci64, &q)
                : info.cls != GJ_KVC_NUMBER)
      return bad(cs, fn, i, k, w, nd, j, "a value that is not a number", -1, 0);
    if (*tpar >= 0) return bad(cs, fn, i, k, w, nd, j, "a number", *tpar, *tpix);
    *depth = lv;
    if (add_num(w, k->ci64 ? (double)q : info.num, q))
      return gj_err_set(cs->err, "out of memory");
  }
  w->dir[2 * nd + 1] = j - 1;
  w->dir[2 * nd] = w->n > first ? first - 1 : dstart;
  return 0;
}

/* The numbers (and tables) of k, breadth-first. */
static int read_table(gj_cs *cs, gj_fn *fn, int i, gj_kv *k)
{
  walk w = { 0 };
  int lv, a, b, nd, depth = 0, rc = -1;
  double lo = 0, hi = 0;
  int whole = 1;
  if (add_node(&w, -1, 0, 0) || add_node(&w, 0, 0, 0)) {   /* empty, root */
    gj_err_set(cs->err, "out of memory");
    goto cleanup;
  }
  for (lv = 1, a = 1, b = 2; a < b; lv++, a = b, b = w.n) {
    int tpar = -1, tpix = 0;
    if (lv > GJ_CONST_DEPTH) {
      char at[128];
      path(&w, w.par[a], w.pix[a], at, sizeof(at));
      gj_typer_error(cs, fn, i, "table '%s' nests tables more than %d deep "
                     "(at %s): too deep for constant data", k->name,
                     GJ_CONST_DEPTH, at);
      goto cleanup;
    }
    for (nd = a; nd < b; nd++) {
      int e = read_node(cs, fn, i, k, &w, nd, lv, &depth, &tpar, &tpix);
      if (nd > 1) cs->src->ops->release(cs->src, w.h[nd]);
      w.h[nd] = 0;
      if (e) goto cleanup;
    }
  }
  if (w.dn == 0) {
    gj_typer_error(cs, fn, i, "table '%s' has no number at [1]%s: a table "
                   "indexed with a variable in a kernel must hold numbers, or "
                   "tables of numbers", k->name, w.n > 2 ? " (nor in any table in it)" : "");
    goto cleanup;
  }
  for (nd = 0; nd < w.dn; nd++) {
    double v = w.d[nd];
    if (!(v == floor(v) && v >= -2147483648.0 && v <= 2147483647.0 &&
          !(v == 0 && signbit(v))))
      whole = 0;
    lo = fmin(lo, v);
    hi = fmax(hi, v);
  }
  k->cdata = k->ci64 ? NULL : w.d;
  k->cn = w.dn;
  k->cwhole = whole;
  k->clo = lo;   /* both hold 0, what an index outside reads */
  k->chi = hi;
  k->cdepth = depth;
  k->cdir = w.dir;
  k->cnodes = w.n;
  w.dir = NULL;
  if (k->ci64) {   /* the C integers only */
    k->cidata = w.q;
    k->cwhole = 0;
    w.q = NULL;
  } else {
    w.d = NULL;
  }
  rc = 0;
cleanup:
  for (nd = 2; nd < w.n; nd++)
    if (w.h[nd]) cs->src->ops->release(cs->src, w.h[nd]);
  free(w.h);
  free(w.par);
  free(w.pix);
  free(w.dir);
  free(w.d);
  free(w.q);
  return rc;
}

/* The type of an item at level lv (the root's items: 1) of table kv. */
static gj_ty item(gj_cs *cs, int kv, int lv)
{
  const gj_kv *k = &cs->kv[kv];
  gj_ty t;
  if (lv < k->cdepth) {
    t = gj_ty_kind(GJ_T_CROW);
    t.aux = kv;
    t.s = (uint8_t)lv;
    return t;
  }
  if (k->ci64) {   /* C integers, as LuaJIT reads them (cdata) */
    t = gj_ty_num(k->ci64 == 2 ? GJ_U64 : GJ_I64);
    t.cint = 1;
    return t;
  }
  /* whole numbers: an lnum, exact as the double; else the double (the
  ** default float with precision = "single", as a weak float becomes) */
  return k->cwhole ? gj_ty_lnum(cs, k->clo, k->chi) : gj_ty_num(gj_ty_deffloat(cs));
}

int gj_typer_const_table(gj_cs *cs, gj_fn *fn, int i, int kv, gj_ty idx,
                         gj_ty *out)
{
  gj_kv *k = &cs->kv[kv];
  if (gj_typer_num_operand(cs, fn, i, idx, "indexing a table")) return -1;
  if (!k->cdata && !k->cidata && read_table(cs, fn, i, k)) return -1;
  *out = item(cs, kv, 1);
  return 0;
}

int gj_typer_const_row(gj_cs *cs, gj_fn *fn, int i, gj_ty row, gj_ty idx,
                       gj_ty *out)
{
  if (gj_typer_num_operand(cs, fn, i, idx, "indexing a table")) return -1;
  *out = item(cs, row.aux, row.s + 1);
  return 0;
}
