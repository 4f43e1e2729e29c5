/*
** Typer internals shared by its files (gj_typer.c and the gj_typer_*.c)
** and by codegen.
*/
#ifndef GJ_TYPER_INT_H
#define GJ_TYPER_INT_H

#include "gj_typer.h"

int gj_ins_isbranch(int op);   /* ISLT .. ISF: a test before a JMP */
int gj_ins_isret(int op);      /* RET*, CALLT, CALLMT */
gj_ty *gj_fn_entry(gj_fn *fn, int b);
/* Replay block b from its entry state; st/ed hold the state and edges
** after its last instruction. */
int gj_typer_block(gj_cs *cs, gj_fn *fn, int b, gj_tstate *st, gj_edges *ed);

/* The type of kind k (gj_tk) with nothing else known. */
gj_ty gj_ty_kind(int k);

/* An error unless t is a number: "<what> on <t>". */
int gj_typer_num_operand(gj_cs *cs, gj_fn *fn, int i, gj_ty t,
                         const char *what);

/* Static truth of a value: 1 true, 0 false, -1 known only at run time. */
int gj_ty_truth(gj_ty t);

/* Type of numeric constant v (weak int when integral and exact). */
gj_ty gj_ty_const(double v);

/* Read slot of st at instruction i (gj_typer_step.c): a value of mixed
** types is an error here, where it is used; rd_any lets a string through
** (a type name: moves and call arguments), rd rejects it. */
int gj_typer_rd_any(gj_cs *cs, gj_fn *fn, int i, gj_tstate *st, int slot,
                    gj_ty *out);
int gj_typer_rd(gj_cs *cs, gj_fn *fn, int i, gj_tstate *st, int slot, gj_ty *out);

/* gj_typer_step's rules for a call instruction (CALL*: the results into
** st's slots) and a return (RET*) (gj_typer_call.c). */
int gj_typer_call(gj_cs *cs, gj_fn *fn, int i, gj_tstate *st, gj_edges *ed);
int gj_typer_ret(gj_cs *cs, gj_fn *fn, int i, gj_tstate *st);

/* For a call at instruction i: the function slot, the first argument slot,
** the argument count and the wanted result count (-1: all). */
void gj_call_shape(const gj_cs *cs, const gj_ins *in, const gj_tstate *st,
                   int *fslot, int *arg0, int *nargs, int *nres);

/* Types of an intrinsic call's results.  nres_out: how many it returns.
** *nargs: the arguments passed; on return, those the function uses (a math
** or bit function ignores extra arguments, as LuaJIT's do:
** `math.floor(f(x))` with f returning two values). */
int gj_typer_intr(gj_cs *cs, gj_fn *fn, int i, int intr, int *nargs,
                  const gj_ty *args, gj_ty *res, int *nres_out);

/* FORI: the type the loop counts in. */
gj_ty gj_typer_fortype(const gj_cs *cs, gj_ty start, gj_ty stop, gj_ty step);

/* LuaJIT's cdata arithmetic (lj_carith.c): when a or b is a C integer
** (gj_ty.cint: an integer scalar argument, an int64_t/uint64_t element,
** what is computed from them), an arithmetic operation or comparison of
** the two converts both to uint64_t if a C integer operand is one, else to
** int64_t (a number as a store into such an element converts it: 1.5 is 1,
** -3 into uint64_t is 2^63), and computes there, wrapping; / and % are C's
** (truncating), with a zero divisor giving 2^63's bits, ^ is
** lj_carith_powi64/powu64.  1 with that kind in *s, or 0 when neither is
** a C integer. */
int gj_typer_carith(gj_ty a, gj_ty b, gj_scalar *s);

/* Result type of arithmetic op (GJ_BC_ADDVV .. GJ_BC_POW, as VV). */
gj_ty gj_typer_arith(const gj_cs *cs, int op, gj_ty a, gj_ty b);

/* The edge of comparison op (GJ_BC_ISLT .. ISGT) on operands a and d
** where the test holds (holds 1, the JMP) or fails: narrows their ranges
** (docs/typing.md, "Guards"). */
void gj_typer_refine(int op, int holds, gj_ty *a, gj_ty *d);

/* t[idx] at instruction i, t the known table kv and idx not a constant:
** the table's numbers as constant data (gj_typer_const.c); *out the
** element's type (a GJ_T_CROW when t holds tables).  0, or -1 with an
** error naming the table. */
int gj_typer_const_table(gj_cs *cs, gj_fn *fn, int i, int kv, gj_ty idx,
                         gj_ty *out);
/* row[idx], row a GJ_T_CROW, idx any number: *out as above. */
int gj_typer_const_row(gj_cs *cs, gj_fn *fn, int i, gj_ty row, gj_ty idx,
                       gj_ty *out);

/* Result type of unary minus on numeric b. */
gj_ty gj_typer_unm(const gj_cs *cs, gj_ty b);

/* Value h (the handle is the callee's to keep or release) reached as
** `name`, as a type: numbers and booleans are constants, tables and
** functions known values (gj_typer_resolve_kv: tables and functions
** only, info being h's classification). */
int gj_typer_resolve(gj_cs *cs, gj_fn *fn, int i, const char *name, int h,
                     gj_ty *out);
int gj_typer_resolve_kv(gj_cs *cs, const char *name, int h,
                        const gj_kvinfo *info, gj_ty *out);

/* A call at instruction i of Lua function kv (not a C function) with
** these arguments: types its specialization (a device function), carries
** its array accesses and barriers over to fn, and gives its results'
** types at the caller (*nout of them). */
int gj_typer_call_lua(gj_cs *cs, gj_fn *fn, int i, int kv, int nargs,
                      const gj_ty *args, gj_ty *res, int *nout);

/* Metatypes (docs/typing.md, "Metatypes"): an instruction on a struct
** operand that LuaJIT dispatches to a metamethod of the struct's
** ffi.metatype.  The typer types it as a call of that function and codegen
** emits it as one; both read it from gj_typer_meta. */
typedef struct gj_meta {
  int kv;            /* the metamethod called (a gj_kv); -1: none, the
                     ** instruction is a lookup in an __index table whose
                     ** value (a constant or known value) is `value` */
  int nargs;
  gj_ty args[2];     /* the arguments' types, in LuaJIT's order */
  int slot[2];       /* where argument j is; -1: a constant (args[j] has
                     ** it, or is nil or a string key) */
  int negate;        /* ISGE, ISGT, ISNE*: the condition is the falsity of
                     ** the result */
  gj_ty res;         /* the result's type at the caller (nil: none) */
  gj_ty value;       /* kv -1: the __index table's value */
} gj_meta;

/* Instruction i of fn with the state st before it: 1 when it is a
** metamethod call or an __index table lookup on a struct (*m says which),
** 0 when LuaJIT dispatches it to no metamethod (no struct operand; a
** field of the struct; == without an __eq), -1 with an error (the
** struct's metatype has no such metamethod, which LuaJIT would raise).
** The first call at an instruction types the callee. */
int gj_typer_meta(gj_cs *cs, gj_fn *fn, int i, const gj_tstate *st,
                  gj_meta *m);

/* gj_typer_step's rule for a metamethod call or __index lookup at i: 1
** with the state after it in st and ed (a comparison branches on the
** truth of the result, the other instructions put it into slot A), 0 when
** i is none, -1 on an error. */
int gj_typer_meta_step(gj_cs *cs, gj_fn *fn, int i, gj_tstate *st,
                       gj_edges *ed);

/* A constructor call of struct st (instruction i): an error when its
** metatype has __new, which LuaJIT would call and a kernel does not. */
int gj_typer_meta_new(gj_cs *cs, gj_fn *fn, int i, const gj_struct *st);

/* After fn's fixed point, when it uses gpu.barrier: a barrier in control
** flow that depends on the work item is an error (gj_uniform.c). */
int gj_uniform_check(gj_cs *cs, gj_fn *fn);

#endif
