/*
** Typer: the rules of the intrinsics (gpu.*, math.*, bit.*), called by
** gj_typer_step for a call of a known intrinsic and replayed by codegen
** (docs/typing.md, docs/kernels.md).
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gj_intr.h"
#include "gj_typer.h"
#include "gj_typer_int.h"

/* --- Intrinsics -------------------------------------------------------- */

/* A float-valued math result for operand type t. */
static gj_ty float_of(const gj_cs *cs, gj_ty t)
{
  if (t.k == GJ_T_NUM && gj_scalar_isfloat((gj_scalar)t.s)) return gj_ty_num((gj_scalar)t.s);
  if (t.k == GJ_T_NUM) return gj_ty_num(gj_ty_deffloat(cs));
  return gj_ty_kind(GJ_T_WFLT);
}

/* --- bit.* -------------------------------------------------------------- */

/* Is t an integer in [0, 2^31 - 1], which bit.tobit leaves as it is?  hi:
** its upper bound. */
static int small_nonneg(gj_ty t, double *hi)
{
  double lo;
  return gj_ty_bounds(t, &lo, hi) && lo >= 0 && *hi <= 2147483647.0;
}

/* The kind of a bit.* call's operation, as LuaJIT 2.1 decides it (lib_bit.c,
** lj_carith_check64): a C integer among the operands -- only the first of
** a shift or rotate, whose count is always 32-bit -- makes it a 64-bit
** operation, on uint64_t if one of them is a uint64_t, else on int64_t;
** otherwise it is LuaJIT's 32-bit bit.* on int32_t.  bit.tobit is always
** 32-bit (the low 32 bits of a C integer). */
static gj_scalar bit_kind(int intr, int nargs, const gj_ty *args)
{
  gj_scalar s = GJ_I32;
  int j, n = nargs;
  if (intr == GJ_I_B_TOBIT) return GJ_I32;
  if (intr != GJ_I_B_BAND && intr != GJ_I_B_BOR && intr != GJ_I_B_BXOR && n > 1) n = 1;
  for (j = 0; j < n; j++)
    if (args[j].k == GJ_T_NUM && args[j].cint) {
      if (args[j].s == GJ_U64) return GJ_U64;
      s = GJ_I64;
    }
  return s;
}

/* The int32_t a bit.* call gives, with the range its operands imply: a
** mask keeps bit.band within [0, mask], bit.rshift by a constant k within
** [0, 2^(32-k) - 1], and bor/bxor of operands below 2^k stay below 2^k.
** (Philox's 16-bit limbs and hashes then stay integers where a product may
** otherwise be -0: docs/typing.md, "Negative zero".) */
static gj_ty bit_result(int intr, int nargs, const gj_ty *args)
{
  gj_ty t = gj_ty_num(bit_kind(intr, nargs, args));
  double hi, h, lo;
  int j, all = 1;
  if (t.s != GJ_I32) {
    /* a 64-bit operation gives cdata, as LuaJIT's */
    t.cint = 1;
    if (intr != GJ_I_B_BAND && intr != GJ_I_B_BOR && intr != GJ_I_B_BXOR) return t;
  }
  switch (intr) {
  case GJ_I_B_BAND:
    hi = -1;
    for (j = 0; j < nargs; j++)
      if (small_nonneg(args[j], &h) && (hi < 0 || h < hi)) hi = h;
    if (hi < 0) return t;
    break;
  case GJ_I_B_BOR: case GJ_I_B_BXOR:
    hi = 0;
    for (j = 0; j < nargs && all; j++) all = small_nonneg(args[j], &h) && (hi = fmax(hi, h), 1);
    if (!all || nargs < 1) return t;
    hi = exp2(ceil(log2(hi + 1))) - 1;   /* every bit below the highest */
    break;
  case GJ_I_B_RSHIFT:
    if (nargs < 2 || !gj_ty_bounds(args[1], &lo, &h) || lo != h) return t;
    j = (int)((int64_t)lo & 31);
    if (j == 0) return t;
    hi = ldexp(1.0, 32 - j) - 1;
    break;
  case GJ_I_B_TOBIT:
    if (nargs < 1 || !small_nonneg(args[0], &hi)) return t;
    break;
  default:
    return t;
  }
  t.rng = 1;
  t.lo = 0;
  t.hi = hi;
  return t;
}

/* --- Work-group intrinsics --------------------------------------------- */

/* The largest gpu.shared array, in bytes: more is a typo (the device
** limits, far lower on GPUs, are checked when the kernel loads).  A
** gpu.local_array lives on the stack of a CPU thread (or in a GPU's local
** memory, 512 KiB per thread on CUDA), hence its smaller bound. */
#define GJ_MAX_SHARED_ARRAY (1 << 30)
#define GJ_MAX_LOCAL_ARRAY (64 << 10)

static int type_array_alloc(gj_cs *cs, gj_fn *fn, int i, int intr, int nargs,
                            const gj_ty *args, gj_ty *res)
{
  const char *nm = gj_intr_names[intr];
  gj_ty n = nargs > 1 ? args[1] : gj_ty_kind(GJ_T_NIL);
  int max = intr == GJ_I_SHARED ? GJ_MAX_SHARED_ARRAY : GJ_MAX_LOCAL_ARRAY;
  double bytes;
  if (nargs != 2)
    return gj_typer_error(cs, fn, i, "gpu.%s expects 2 arguments (element "
                                     "type, count), got %d", nm, nargs);
  if (args[0].k != GJ_T_STR || args[0].s == GJ_SCALAR__MAX) {
    char b[200];
    gj_ty_str(cs, args[0], b, sizeof(b));
    return gj_typer_error(cs, fn, i, "gpu.%s: the element type must name a "
                                     "number type (\"float\", \"int32_t\", "
                                     "ffi.typeof(\"double\"), ...), got %s%s",
                          nm, b, args[0].k == GJ_T_STR ? " that is not one" : "");
  }
  if (!(n.k == GJ_T_WINT || n.k == GJ_T_WFLT) || !n.hasc)
    return gj_typer_error(cs, fn, i, "gpu.%s: the element count must be a "
                                     "compile-time constant (a literal, or a "
                                     "number upvalue)", nm);
  bytes = n.u.c * gj_scalar_size((gj_scalar)args[0].s);
  if (n.u.c != floor(n.u.c) || n.u.c < 1 || bytes > max)
    return gj_typer_error(cs, fn, i, "gpu.%s: the element count must be a "
                                     "positive integer, the array at most %d "
                                     "bytes, got %.17g elements", nm, max, n.u.c);
  res[0] = gj_ty_kind(GJ_T_ARR);
  res[0].s = args[0].s;
  res[0].space = intr == GJ_I_SHARED ? GJ_SPACE_SHARED : GJ_SPACE_LOCAL;
  res[0].aux = (int32_t)n.u.c;
  return 0;
}

/* gpu.atomic_*(a, i, v) and gpu.atomic_cas(a, i, expected, new): integer
** elements of 32 or 64 bits; add and xchg also on float and double. */
static int type_atomic(gj_cs *cs, gj_fn *fn, int i, int intr, int nargs,
                       const gj_ty *args, gj_ty *res)
{
  const char *nm = gj_intr_names[intr];
  int want = intr == GJ_I_ATOMIC_CAS ? 4 : 3, j;
  gj_scalar e;
  if (nargs != want)
    return gj_typer_error(cs, fn, i, "gpu.%s expects %d arguments (array, "
                                     "index, %s), got %d", nm, want,
                          want == 4 ? "expected, new" : "value", nargs);
  if (args[0].k != GJ_T_ARR) {
    char b[200];
    gj_ty_str(cs, args[0], b, sizeof(b));
    return gj_typer_error(cs, fn, i, "gpu.%s: argument 1 must be an array, "
                                     "got %s", nm, b);
  }
  for (j = 1; j < want; j++)
    if (gj_typer_num_operand(cs, fn, i, args[j], j == 1 ? "an atomic's index"
                                                : "an atomic's value"))
      return -1;
  if (args[0].shp && args[0].nd > 0) {
    char b[200];
    gj_ty_str(cs, args[0], b, sizeof(b));
    return gj_typer_error(cs, fn, i, "gpu.%s on %s: pass a row of its last "
                                     "dimension (gpu.%s(a[y], x, v))", nm, b, nm);
  }
  if (args[0].sid)
    return gj_typer_error(cs, fn, i, "gpu.%s on an array of %s%s: atomics "
                                     "work on arrays of numbers (a field "
                                     "array, p[i].counts, is one)", nm,
                          gj_struct_word(gj_ty_struct(cs, args[0])->name),
                          gj_ty_struct(cs, args[0])->name);
  e = (gj_scalar)args[0].s;
  if (!(e == GJ_I32 || e == GJ_U32 || e == GJ_I64 || e == GJ_U64 ||
        (gj_scalar_isfloat(e) &&
         (intr == GJ_I_ATOMIC_ADD || intr == GJ_I_ATOMIC_XCHG))))
    return gj_typer_error(cs, fn, i, "gpu.%s on an array of %s: atomics "
                                     "need 32- or 64-bit integer elements%s",
                          nm, gj_scalar_name(e),
                          intr == GJ_I_ATOMIC_ADD || intr == GJ_I_ATOMIC_XCHG
                              ? " (or float/double)" : "");
  fn->rmask |= args[0].u.origin;
  fn->wmask |= args[0].u.origin;
  res[0] = gj_ty_read(cs, gj_ty_num(e));
  return 0;
}

/* print(...): numbers, booleans, nil and string constants (docs/api.md,
** "print in kernels"); no results. */
static int type_print(gj_cs *cs, gj_fn *fn, int i, int nargs,
                      const gj_ty *args, int *nres_out)
{
  int j;
  for (j = 0; j < nargs; j++) {
    gj_tk k = (gj_tk)args[j].k;
    if (!(gj_ty_isnumeric(args[j]) || k == GJ_T_BOOL || k == GJ_T_NIL ||
          (k == GJ_T_STR && args[j].u.origin))) {
      char b[200];
      gj_ty_str(cs, args[j], b, sizeof(b));
      return gj_typer_error(cs, fn, i, "print: argument %d is %s; kernels "
                            "print numbers, booleans, nil and string "
                            "constants", j + 1, b);
    }
  }
  *nres_out = 0;
  return 0;
}

/* assert(v [, msg]) and error(msg): msg a string constant (docs/api.md,
** "assert and error in kernels"); assert gives v, error nothing. */
static int type_assert(gj_cs *cs, gj_fn *fn, int i, int intr, int nargs,
                       const gj_ty *args, gj_ty *res, int *nres_out)
{
  const char *nm = intr == GJ_I_ASSERT ? "assert" : "error";
  int at = intr == GJ_I_ASSERT ? 1 : 0;   /* the message's argument */
  if (intr == GJ_I_ASSERT && nargs < 1)
    return gj_typer_error(cs, fn, i, "bad argument #1 to 'assert' (value expected)");
  if (nargs > at + 1)
    return gj_typer_error(cs, fn, i, "%s: %d arguments; kernels take %s", nm, nargs,
                          intr == GJ_I_ASSERT ? "assert(v) and assert(v, message)"
                                              : "error(message) only (no level)");
  if (nargs > at && !(args[at].k == GJ_T_STR && args[at].u.origin)) {
    char b[200];
    gj_ty_str(cs, args[at], b, sizeof(b));
    return gj_typer_error(cs, fn, i, "%s: the message is %s; in kernels it must "
                          "be a string constant (\"...\")", nm, b);
  }
  if (intr == GJ_I_ERROR && nargs < 1)
    return gj_typer_error(cs, fn, i, "error: a message is required in kernels "
                          "(error(\"...\"))");
  cs->fails = 1;
  *nres_out = intr == GJ_I_ASSERT ? 1 : 0;
  if (intr == GJ_I_ASSERT) res[0] = args[0];
  return 0;
}

static int type_group_intr(gj_cs *cs, gj_fn *fn, int i, int intr, int nargs,
                           const gj_ty *args, gj_ty *res, int *nres_out)
{
  switch (intr) {
  case GJ_I_BARRIER:
    if (nargs != 0)
      return gj_typer_error(cs, fn, i, "gpu.barrier expects no arguments, "
                                       "got %d", nargs);
    fn->uses_barrier = 1;
    *nres_out = 0;
    return 0;
  case GJ_I_SHARED: case GJ_I_LOCAL_ARRAY:
    return type_array_alloc(cs, fn, i, intr, nargs, args, res);
  default:
    return type_atomic(cs, fn, i, intr, nargs, args, res);
  }
}

/* type(v): a string constant, LuaJIT's name of v's type, which the kernel
** may compare with constants (a metamethod's `type(a) == "number"`). */
static int type_type(gj_cs *cs, gj_fn *fn, int i, int nargs,
                     const gj_ty *args, gj_ty *res)
{
  gj_ty t = nargs > 0 ? args[0] : gj_ty_kind(GJ_T_UNDEF);
  const char *nm;
  if (nargs < 1)
    return gj_typer_error(cs, fn, i, "bad argument #1 to 'type' (value "
                                     "expected)");
  switch (t.k) {
  case GJ_T_NIL: case GJ_T_UNDEF: nm = "nil"; break;
  case GJ_T_BOOL: nm = "boolean"; break;
  case GJ_T_NUM: nm = t.cint ? "cdata" : "number"; break;   /* C integers */
  case GJ_T_WINT: case GJ_T_WFLT: nm = "number"; break;
  case GJ_T_SREF: nm = "cdata"; break;
  case GJ_T_STR: nm = "string"; break;
  case GJ_T_CROW: nm = "table"; break;
  case GJ_T_KV:
    nm = cs->kv[t.aux].kind == GJ_KV_TABLE ? "table" : "function";
    break;
  default: {
    char b[200];
    gj_ty_str(cs, t, b, sizeof(b));
    return gj_typer_error(cs, fn, i, "type() of %s is not known while "
                                     "compiling", b);
  }
  }
  res[0] = gj_ty_kind(GJ_T_STR);
  res[0].s = GJ_SCALAR__MAX;
  res[0].u.origin = (uint64_t)(uintptr_t)nm;
  return 0;
}

/* --- gpu.derivative, gpu.gradient ----------------------------------------- */

/* A float number? */
static int float_number(gj_ty t)
{
  return t.k == GJ_T_WFLT ||
         (t.k == GJ_T_NUM && gj_scalar_isfloat((gj_scalar)t.s) && !t.cint);
}

void gj_typer_deriv_args(gj_cs *cs, int intr, int nargs, const gj_ty *args,
                         gj_ty *out)
{
  int j, nact = intr == GJ_I_DERIVATIVE ? 1 : nargs - 1;
  for (j = 0; j < nargs; j++) {
    out[j] = args[j];
    if (j >= 1 && j <= nact && !float_number(args[j]) && gj_ty_isnumeric(args[j]) &&
        !args[j].cint)
      out[j] = gj_ty_num(gj_ty_deffloat(cs));
  }
}

/* gpu.derivative(f, x, ...) and gpu.gradient(f, a, b, ...) (docs/autodiff.md,
** "Inside kernels"): f a device function, typed as called at the other
** arguments; its first result a number.  derivative: d f / d x (x active,
** the arguments after it passed as they are), then f's first result;
** gradient: one partial per argument after f (each active), then the
** value.  An active argument the typer knows as an integer is a number
** like any (f is typed at the default float for it: gj_typer_deriv_args).
** An active argument may also be a struct of float fields (a vec3): its
** partial is a new struct of the same type, field by field.
** Refused: an active argument that is not a number (a C integer) or such a
** struct, a first
** result that is not a number, an f that writes memory, prints, uses
** gpu.barrier or takes a derivative itself (nested). */
static int type_derivative(gj_cs *cs, gj_fn *fn, int i, int intr, int nargs,
                           const gj_ty *args, gj_ty *res, int *nres_out)
{
  const char *nm = intr == GJ_I_DERIVATIVE ? "gpu.derivative" : "gpu.gradient";
  gj_ty fr[GJ_MAXRET], ta[GJ_MAXPARAMS];
  gj_fn *callee;
  const char *fname;
  char b[200];
  int nf = 0, j, nact;
  if (nargs < 2)
    return gj_typer_error(cs, fn, i, "%s expects a device function and at least "
                          "one number, got %d argument%s", nm, nargs,
                          nargs == 1 ? "" : "s");
  if (args[0].k != GJ_T_KV || cs->kv[args[0].aux].kind != GJ_KV_FUNC) {
    gj_ty_str(cs, args[0], b, sizeof(b));
    return gj_typer_error(cs, fn, i, "%s: argument 1 is %s, not a device "
                          "function (a Lua function the kernel can call)", nm, b);
  }
  fname = cs->kv[args[0].aux].name;
  nact = intr == GJ_I_DERIVATIVE ? 1 : nargs - 1;
  if (nact + 1 > GJ_MAXRET)
    return gj_typer_error(cs, fn, i, "%s: at most %d arguments after the "
                          "function", nm, GJ_MAXRET - 1);
  gj_typer_deriv_args(cs, intr, nargs, args, ta);
  for (j = 1; j <= nact; j++) {
    const gj_struct *st = ta[j].k == GJ_T_SREF ? gj_ty_struct(cs, ta[j]) : NULL;
    if (st) {   /* a struct of floats: its partial is a struct of the same type */
      int fi;
      for (fi = 0; fi < st->nfields; fi++)
        if (st->fields[fi].count || st->fields[fi].scalar >= GJ_SCALAR__MAX ||
            !gj_scalar_isfloat((gj_scalar)st->fields[fi].scalar))
          return gj_typer_error(cs, fn, i, "%s: argument %d is %s%s, whose field '%s' is "
                                "not a float: only a struct of float fields (float, "
                                "double) has a gradient", nm, j + 1,
                                gj_struct_word(st->name), st->name, st->fields[fi].name);
      continue;
    }
    if (!float_number(ta[j])) {
      gj_ty_str(cs, args[j], b, sizeof(b));
      return gj_typer_error(cs, fn, i, "%s: argument %d is %s, not a number "
                            "(a C integer: convert it with tonumber)%s", nm,
                            j + 1, b, intr == GJ_I_GRADIENT ?
                            "; gpu.derivative passes the arguments after its "
                            "first as they are" : "");
    }
  }
  if (gj_typer_call_lua(cs, fn, i, args[0].aux, nargs - 1, ta + 1, fr, &nf) ||
      gj_typer_callee(cs, args[0].aux, nargs - 1, ta + 1,
                      fn->proto->ins[i].line, fn, &callee))
    return -1;
  if (nf < 1 || !gj_ty_isnumeric(fr[0])) {
    if (nf < 1) snprintf(b, sizeof(b), "nothing");
    else gj_ty_str(cs, fr[0], b, sizeof(b));
    return gj_typer_error(cs, fn, i, "%s: the first result of device function "
                          "'%s' is %s: only a number can be differentiated",
                          nm, fname, b);
  }
  if (callee->uses_deriv)
    return gj_typer_error(cs, fn, i, "%s: device function '%s' takes a "
                          "derivative itself (gpu.derivative or gpu.gradient): "
                          "nested derivatives are not supported", nm, fname);
  if (callee->uses_barrier)
    return gj_typer_error(cs, fn, i, "%s: device function '%s' calls "
                          "gpu.barrier, which has no derivative", nm, fname);
  if (callee->uses_print)
    return gj_typer_error(cs, fn, i, "%s: device function '%s' calls print, "
                          "which its derivative would run again", nm, fname);
  if (callee->wmask)
    return gj_typer_error(cs, fn, i, "%s: device function '%s' writes into an "
                          "array: a function differentiated inside a kernel "
                          "must not write memory", nm, fname);
  fn->uses_deriv = 1;
  if (!cs->derivs++) {
    cs->deriv_chunk = fn->proto->chunk;
    cs->deriv_line = fn->proto->ins[i].line;
  }
  for (j = 0; j < nact; j++) {
    if (ta[j + 1].k == GJ_T_SREF) {   /* a new struct, made here */
      memset(&res[j], 0, sizeof(res[j]));
      res[j].k = GJ_T_SREF;
      res[j].sid = ta[j + 1].sid;
      res[j].space = GJ_SPACE_LOCAL;
      res[j].aux = 1;
    } else {
      res[j] = float_of(cs, fr[0]);
    }
  }
  res[nact] = fr[0];
  *nres_out = nact + 1;
  return 0;
}

int gj_typer_intr(gj_cs *cs, gj_fn *fn, int i, int intr, int *nargs_io,
                  const gj_ty *args, gj_ty *res, int *nres_out)
{
  const char *nm = gj_intr_names[intr];
  int j, minargs = 1, maxargs = 1, nargs = *nargs_io;
  *nres_out = 1;
  switch (intr) {
  case GJ_I_GLOBAL_ID: case GJ_I_LOCAL_ID: case GJ_I_GROUP_ID:
  case GJ_I_GROUP_SIZE: case GJ_I_NUM_GROUPS: case GJ_I_GLOBAL_SIZE:
    minargs = 0;
    break;
  case GJ_I_M_ATAN2: case GJ_I_M_POW: case GJ_I_M_FMOD:
  case GJ_I_B_LSHIFT: case GJ_I_B_RSHIFT: case GJ_I_B_ARSHIFT:
  case GJ_I_B_ROL: case GJ_I_B_ROR:
    minargs = maxargs = 2;
    break;
  case GJ_I_M_LOG:
    maxargs = 2;
    break;
  case GJ_I_M_MIN: case GJ_I_M_MAX: case GJ_I_B_BAND: case GJ_I_B_BOR:
  case GJ_I_B_BXOR:
    maxargs = 64;
    break;
  case GJ_I_BARRIER: case GJ_I_SHARED: case GJ_I_LOCAL_ARRAY:
  case GJ_I_ATOMIC_ADD: case GJ_I_ATOMIC_SUB: case GJ_I_ATOMIC_MIN:
  case GJ_I_ATOMIC_MAX: case GJ_I_ATOMIC_AND: case GJ_I_ATOMIC_OR:
  case GJ_I_ATOMIC_XOR: case GJ_I_ATOMIC_XCHG: case GJ_I_ATOMIC_CAS:
    return type_group_intr(cs, fn, i, intr, nargs, args, res, nres_out);
  case GJ_I_PRINT:
    fn->uses_print = 1;
    return type_print(cs, fn, i, nargs, args, nres_out);
  case GJ_I_TYPE:
    return type_type(cs, fn, i, nargs, args, res);
  case GJ_I_DERIVATIVE: case GJ_I_GRADIENT:
    return type_derivative(cs, fn, i, intr, nargs, args, res, nres_out);
  case GJ_I_ASSERT: case GJ_I_ERROR:
    return type_assert(cs, fn, i, intr, nargs, args, res, nres_out);
  default:
    break;
  }
  if (nargs < minargs)
    return gj_typer_error(cs, fn, i, "%s%s expects %d%s argument%s, got %d",
                          intr <= GJ_I_ATOMIC_CAS ? "gpu." : "", nm, minargs,
                          maxargs > minargs ? " or more" : "",
                          minargs == 1 ? "" : "s", nargs);
  /* Extra arguments are ignored, as LuaJIT's math and bit functions do
  ** (bit.bnot(math.modf(x)) passes two). */
  if (nargs > maxargs) nargs = *nargs_io = maxargs;
  for (j = 0; j < nargs; j++)
    if (gj_typer_num_operand(cs, fn, i, args[j], "a math or bit call")) return -1;
  switch (intr) {
  case GJ_I_GLOBAL_ID: case GJ_I_LOCAL_ID: case GJ_I_GROUP_ID:
  case GJ_I_GROUP_SIZE: case GJ_I_NUM_GROUPS: case GJ_I_GLOBAL_SIZE:
    if (nargs == 1 && args[0].hasc &&
        !(args[0].u.c == 0 || args[0].u.c == 1 || args[0].u.c == 2))
      return gj_typer_error(cs, fn, i, "gpu.%s: dimension must be 0, 1 or 2",
                            nm);
    /* Launches are below 2^51 in every dimension (the dispatcher checks),
    ** and below 2^31 where a parameter is an lnum (docs/typing.md). */
    res[0] = gj_ty_num(GJ_I64);
    res[0].rng = 1;
    res[0].lo = intr == GJ_I_GLOBAL_ID || intr == GJ_I_LOCAL_ID ||
                intr == GJ_I_GROUP_ID ? 0.0 : 1.0;
    res[0].hi = cs->id_ranges ? 2147483647.0 : 2251799813685247.0;
    return 0;
  case GJ_I_M_ABS: case GJ_I_M_CEIL: case GJ_I_M_FLOOR:
    res[0] = args[0];
    res[0].hasc = 0;
    if (res[0].k == GJ_T_NUM) res[0] = gj_ty_arith(cs, args[0], args[0]);
    if (intr == GJ_I_M_ABS && res[0].k == GJ_T_NUM &&
        !gj_scalar_issigned((gj_scalar)res[0].s) &&
        gj_scalar_isint((gj_scalar)res[0].s))
      res[0] = gj_ty_num((gj_scalar)res[0].s);
    if (intr == GJ_I_M_ABS && res[0].k == GJ_T_NUM && res[0].rng) {
      double lo = res[0].lo, hi = res[0].hi;
      res[0].lo = lo <= 0 && hi >= 0 ? 0.0 : fmin(fabs(lo), fabs(hi));
      res[0].hi = fmax(fabs(lo), fabs(hi));
    }
    res[0].hasc = 0;
    return 0;
  case GJ_I_M_MIN: case GJ_I_M_MAX:
    res[0] = args[0];
    for (j = 1; j < nargs; j++) res[0] = gj_ty_arith(cs, res[0], args[j]);
    if (nargs == 1 && res[0].k == GJ_T_NUM) res[0] = gj_ty_arith(cs, res[0], res[0]);
    res[0].hasc = 0;
    return 0;
  case GJ_I_M_ATAN2: case GJ_I_M_POW: case GJ_I_M_FMOD:
    res[0] = float_of(cs, gj_ty_arith(cs, args[0], args[1]));
    return 0;
  case GJ_I_M_LOG:
    res[0] = float_of(cs, nargs == 2 ? gj_ty_arith(cs, args[0], args[1]) : args[0]);
    return 0;
  case GJ_I_M_MODF:
    res[0] = res[1] = float_of(cs, args[0]);
    *nres_out = 2;
    return 0;
  default:
    break;
  }
  if (intr >= GJ_I_B_BAND && intr <= GJ_I_B_TOBIT) {
    res[0] = bit_result(intr, nargs, args);
    return 0;
  }
  res[0] = float_of(cs, args[0]);  /* the one-argument math functions */
  return 0;
}
