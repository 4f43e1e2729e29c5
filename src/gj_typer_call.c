/*
** Typer: calls and returns (docs/typing.md).  What a call instruction
** (CALL, CALLM, CALLT, CALLMT) calls -- a struct's constructor, an
** intrinsic (gj_typer_intr.c), a device function typed for these
** arguments (gj_typer_callee), or a C function, which has no kernel form
** and is an error naming it -- and what it leaves in the slots; what a
** function returns (a kernel nothing, a device function the same number
** of values at every return, their types joined).  The C stack kept free
** for nested device functions is checked here, for the typer and codegen.
*/
#include <string.h>

#include "gj_intr.h"
#include "gj_stack.h"
#include "gj_typer_int.h"

#define S(x) (st->slot[(x)])

void gj_call_shape(const gj_cs *cs, const gj_ins *in, const gj_tstate *st,
                   int *fslot, int *arg0, int *nargs, int *nres)
{
  *fslot = in->a;
  *arg0 = in->a + 1 + cs->map->fr2;
  switch (in->op) {
  case GJ_BC_CALL: *nargs = in->c - 1; *nres = in->b - 1; break;
  case GJ_BC_CALLM: *nargs = in->c + st->mr_n; *nres = in->b - 1; break;
  case GJ_BC_CALLT: *nargs = (int)in->d - 1; *nres = -1; break;
  default: *nargs = (int)in->d + st->mr_n; *nres = -1; break;  /* CALLMT */
  }
}

/* A struct a device function returns is either made in it (returned by
** value) or one it was passed (returned as itself), not maybe either. */
static int mixed_struct(gj_cs *cs, gj_fn *fn, int i, gj_ty t)
{
  if (!(t.k == GJ_T_SREF && t.space != GJ_SPACE_GLOBAL && t.aux && t.u.origin))
    return 0;
  return gj_typer_error(cs, fn, i, "device function '%s' returns a struct "
                                   "that may be made here or passed in: "
                                   "return one or the other",
                        fn->proto->name);
}

static int record_return(gj_cs *cs, gj_fn *fn, int i, int n, const gj_ty *v)
{
  int j;
  if (fn->kv < 0) {
    if (n > 0)
      return gj_typer_error(cs, fn, i, "a kernel cannot return values "
                                       "(store results into an array)");
    fn->nret = 0;
    return 0;
  }
  if (n > GJ_MAXRET)
    return gj_typer_error(cs, fn, i, "too many return values (at most %d)",
                          GJ_MAXRET);
  for (j = 0; j < n; j++) {
    if (v[j].k == GJ_T_ARR && v[j].space != GJ_SPACE_GLOBAL)
      return gj_typer_error(cs, fn, i, "a shared or local array cannot be "
                                       "returned");
    if (mixed_struct(cs, fn, i, v[j])) return -1;
  }
  if (fn->nret < 0) {
    fn->nret = n;
    for (j = 0; j < n; j++) fn->ret[j] = v[j];
    return 0;
  }
  if (fn->nret != n)
    return gj_typer_error(cs, fn, i, "every return of device function '%s' "
                                     "must return the same number of values "
                                     "(%d here, %d elsewhere)",
                          fn->proto->name, n, fn->nret);
  for (j = 0; j < n; j++) {
    gj_ty t = gj_ty_join(cs, fn->ret[j], v[j]);
    if (t.k == GJ_T_CONFLICT) {
      char b[200];
      gj_ty_str(cs, t, b, sizeof(b));
      return gj_typer_error(cs, fn, i, "return value %d may be %s", j + 1, b);
    }
    if (mixed_struct(cs, fn, i, t)) return -1;
    fn->ret[j] = t;
  }
  return 0;
}


/* A C function the kernel calls that has no kernel form.  math.random
** and friends are named as such (they are math.*, but not the subset's). */
static int is_math_fn(gj_cs *cs, int h, const char *field)
{
  gj_kvsrc *src = cs->src;
  int m = src->ops->stdlib(src, "math", field);
  int same = src->ops->same(src, h, m);
  src->ops->release(src, m);
  return same;
}

static int unknown_cfunction(gj_cs *cs, gj_fn *fn, int i, int kv)
{
  const char *name = cs->kv[kv].name;
  int rs = is_math_fn(cs, cs->kv[kv].h, "randomseed");
  if (rs || is_math_fn(cs, cs->kv[kv].h, "random"))
    return gj_typer_error(cs, fn, i, "'%s'%s has no kernel form (kernels keep "
                          "no random state): draw by counter, e.g. "
                          "gpu.uniform(seed, gpu.global_id(0)) (docs/api.md, "
                          "\"Random numbers\")", name,
                          strncmp(name, "math.random", 11) == 0 ? ""
                          : rs ? " (math.randomseed)" : " (math.random)");
  if (strncmp(name, "math.", 5) == 0 || strncmp(name, "bit.", 4) == 0)
    return gj_typer_error(cs, fn, i, "'%s' has no kernel form: kernels may "
                          "call the math.* and bit.* functions listed in "
                          "docs/kernels.md, gpu.* and Lua functions in the "
                          "kernel subset", name);
  return gj_typer_error(cs, fn, i, "unknown function '%s': a library "
                        "function not in the kernel subset is not supported; "
                        "kernels may call only gpu.*, the math.* and bit.* "
                        "functions listed in docs/kernels.md, and Lua "
                        "functions in the kernel subset", name);
}

/* The arguments of a struct constructor (LuaJIT's initializers): numbers
** or booleans, one per field in order, each field a number; the fields
** left over are zeros. */
static int struct_ctor(gj_cs *cs, gj_fn *fn, int i, gj_ty f, int nargs,
                       const gj_ty *args)
{
  const gj_struct *st = &cs->structs->s[f.sid - 1];
  int j;
  if (nargs > st->nfields)
    return gj_typer_error(cs, fn, i, "%d initializers for %s%s, which "
                                     "has %d fields", nargs, gj_struct_word(st->name), st->name,
                          st->nfields);
  for (j = 0; j < nargs; j++) {
    const gj_field *fd = &st->fields[j];
    if (fd->count || fd->scalar >= GJ_SCALAR__MAX)
      return gj_typer_error(cs, fn, i, "%s%s(...) in a kernel: "
                                       "initializer %d is for field '%s', "
                                       "%s, which kernels do not initialize "
                                       "yet (set its elements or fields)",
                            gj_struct_word(st->name), st->name, j + 1, fd->name,
                            fd->count ? "a fixed array" : "a struct");
    if (!gj_ty_isnumeric(args[j]) && args[j].k != GJ_T_BOOL) {
      char b[200];
      gj_ty_str(cs, args[j], b, sizeof(b));
      return gj_typer_error(cs, fn, i, "%s%s(...): initializer %d (for "
                                       "field '%s') is %s", gj_struct_word(st->name),
                            st->name, j + 1,
                            fd->name, b);
    }
  }
  return 0;
}

/* C stack kept free below the deepest device function the typer or
** codegen enters (LLVM's calls, and what one more level needs): 256 KiB,
** or a quarter of a smaller thread stack, so that a thread of 128 KiB
** (musl's default) still compiles a few levels. */
#define STACK_RESERVE (256 * 1024)

int gj_typer_depth_check(gj_cs *cs, gj_fn *fn, int i, const char *name,
                         int depth)
{
  size_t reserve = STACK_RESERVE, size = gj_stack_size();
  if (size && size / 4 < reserve) reserve = size / 4;
  if (gj_stack_left() >= reserve) return 0;
  return gj_typer_error(cs, fn, i, "device functions nested too deeply: the "
                        "call of '%s' is %d calls deep, and the compiling "
                        "thread's C stack is nearly used up (each level takes "
                        "about 5 KiB; %zu KiB are kept for the rest of the "
                        "compile): make the chain shallower, or compile on a "
                        "thread with a larger stack", name, depth,
                        reserve / 1024);
}

int gj_typer_call_lua(gj_cs *cs, gj_fn *fn, int i, int kv, int nargs,
                      const gj_ty *args, gj_ty *res, int *nout)
{
  gj_fn *callee;
  int j, rc;
  if (gj_typer_depth_check(cs, fn, i, cs->kv[kv].name, cs->depth + 1))
    return -1;
  cs->depth++;
  rc = gj_typer_callee(cs, kv, nargs, args, fn->proto->ins[i].line, fn,
                       &callee);
  cs->depth--;
  if (rc == -2)
    return gj_typer_error(cs, fn, i, "recursive call to '%s' is not "
                                     "supported in kernels", cs->kv[kv].name);
  if (rc) return -1;
  *nout = callee->nret;
  for (j = 0; j < *nout; j++) res[j] = gj_ty_returned(callee->ret[j], nargs, args);
  fn->uses_barrier |= callee->uses_barrier;
  fn->uses_deriv |= callee->uses_deriv;
  fn->uses_print |= callee->uses_print;
  for (j = 0; j < nargs && j < callee->nparams; j++)
    if (args[j].k == GJ_T_ARR || args[j].k == GJ_T_SREF) {
      if (callee->wmask & (1ull << j)) fn->wmask |= args[j].u.origin;
      if (callee->rmask & (1ull << j)) fn->rmask |= args[j].u.origin;
      if (callee->lmask & (1ull << j)) fn->lmask |= args[j].u.origin;
    }
  return 0;
}

int gj_typer_call(gj_cs *cs, gj_fn *fn, int i, gj_tstate *st, gj_edges *ed)
{
  const gj_ins *in = &fn->proto->ins[i];
  gj_ty args[GJ_MAXPARAMS], res[GJ_MAXRET], f;
  int fslot, arg0, nargs, nres, nout = 0, j;
  gj_call_shape(cs, in, st, &fslot, &arg0, &nargs, &nres);
  if (gj_typer_rd_any(cs, fn, i, st, fslot, &f)) return -1;   /* a struct's ctype */
  if (nargs > GJ_MAXPARAMS)
    return gj_typer_error(cs, fn, i, "too many arguments in a call");
  for (j = 0; j < nargs; j++)
    if (gj_typer_rd_any(cs, fn, i, st, arg0 + j, &args[j])) return -1;
  if (f.k == GJ_T_NIL)
    return gj_typer_error(cs, fn, i, "attempt to call a nil value (an "
                                     "undefined function?)");
  if (f.k == GJ_T_STR && f.sid) {   /* particle(x, y, ...): a new struct */
    if (struct_ctor(cs, fn, i, f, nargs, args) ||
        gj_typer_meta_new(cs, fn, i, &cs->structs->s[f.sid - 1]))
      return -1;
    memset(&res[0], 0, sizeof(res[0]));
    res[0].k = GJ_T_SREF;
    res[0].sid = f.sid;
    res[0].space = GJ_SPACE_LOCAL;
    res[0].aux = 1;       /* made in this function */
    nout = 1;
    goto results;
  }
  if (f.k != GJ_T_KV || cs->kv[f.aux].kind == GJ_KV_TABLE) {
    char b[200];
    gj_ty_str(cs, f, b, sizeof(b));
    return gj_typer_error(cs, fn, i, "attempt to call %s", b);
  }
  if (cs->kv[f.aux].kind == GJ_KV_INTR) {
    if (gj_typer_intr(cs, fn, i, cs->kv[f.aux].intr, &nargs, args, res, &nout))
      return -1;
    if (cs->kv[f.aux].intr == GJ_I_ERROR) {   /* the rest of the block is dead */
      ed->dead = 1;
      return 0;
    }
  } else {
    gj_kvinfo info;
    cs->src->ops->classify(cs->src, cs->kv[f.aux].h, &info);
    if (info.cfunc)
      return unknown_cfunction(cs, fn, i, f.aux);
    /* a library function the VM builds from bytecode compiles as Lua
    ** (math.deg); one outside the kernel subset (string.len checks its
    ** argument's type) is an unknown function here, not its bytecode's
    ** error at no line of the program's */
    if (gj_typer_call_lua(cs, fn, i, f.aux, nargs, args, res, &nout))
      return info.builtin ? unknown_cfunction(cs, fn, i, f.aux) : -1;
  }
results:
  if (in->op == GJ_BC_CALLT || in->op == GJ_BC_CALLMT)
    return record_return(cs, fn, i, nout, res);
  st->mr_base = -1;
  st->mr_n = 0;
  if (nres < 0) {
    for (j = 0; j < nout; j++) S(fslot + j) = res[j];
    st->mr_base = fslot;
    st->mr_n = nout;
  } else {
    for (j = 0; j < nres; j++) S(fslot + j) = j < nout ? res[j] : gj_ty_kind(GJ_T_NIL);
  }
  return 0;
}

int gj_typer_ret(gj_cs *cs, gj_fn *fn, int i, gj_tstate *st)
{
  const gj_ins *in = &fn->proto->ins[i];
  gj_ty v[GJ_MAXRET + 1];
  int n, j;
  switch (in->op) {
  case GJ_BC_RET0: n = 0; break;
  case GJ_BC_RET1: n = 1; break;
  case GJ_BC_RET: n = (int)in->d - 1; break;
  default: n = (int)in->d + st->mr_n; break;  /* RETM */
  }
  if (n > GJ_MAXRET) n = GJ_MAXRET + 1;
  for (j = 0; j < n && j <= GJ_MAXRET; j++)
    if (gj_typer_rd(cs, fn, i, st, in->a + j, &v[j])) return -1;
  return record_return(cs, fn, i, n, v);
}
