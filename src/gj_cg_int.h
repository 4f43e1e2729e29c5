/*
** Codegen internals shared by gj_cg.c (function bodies: blocks, slots,
** calls), gj_cg_sig.c (the boundary of functions and the module),
** gj_cg_ops.c (arithmetic, comparisons, conversions, intrinsics) and the
** other gj_cg_*.c.
*/
#ifndef GJ_CG_INT_H
#define GJ_CG_INT_H

#include "gj_cg.h"
#include "gj_typer_int.h"

/* LLVM storage classes of slot values.  Arrays are { ptr addrspace(S),
** i64 }, one class per space (LT_ARR + GJ_SPACE_*). */
enum { LT_I1, LT_I8, LT_I16, LT_I32, LT_I64, LT_F32, LT_F64,
       LT_ARR, LT_ARR_SHARED, LT_ARR_LOCAL, LT__MAX };

/* A resumable function's frame starts with its resume point (i32; 0: run
** from the start / has finished). */
#define GJ_FRAME_HEAD 16

typedef struct gj_cg {
  gj_cs *cs;
  const gj_job *job;
  const gj_cgopts *opts;
  LLVMContextRef C;
  LLVMModuleRef M;
  LLVMBuilderRef B;
  LLVMTypeRef lt[LT__MAX];
  LLVMTypeRef ptr_global;   /* arrays' element pointers */
  LLVMTypeRef ptr_wi;       /* work-item state pointer */
  /* the function being emitted */
  gj_fn *fn;
  LLVMValueRef llfn;
  LLVMValueRef wi;
  LLVMBasicBlockRef allocas;  /* entry block holding the allocas */
  LLVMValueRef *slots;        /* framesize * LT__MAX */
  /* resumable functions (job->serial_groups, barriers; gj_cg_group.c) */
  int resumable;
  LLVMValueRef frame;         /* this function's frame */
  uint32_t frame_size;        /* bytes of it assigned so far */
  LLVMValueRef resume;        /* the entry's switch on the resume point */
  int nresume;
  int ncallees;               /* resumable callees and their frames */
  gj_fn *callee[16];
  uint32_t callee_off[16];
  /* the module */
  uint32_t shared_size;       /* serial_groups: bytes of gpu.shared */
  int nshared;                /* gpu.shared call sites so far */
} gj_cg;

int gj_cg_lt(const gj_cs *cs, gj_ty t);          /* -1: no storage */
LLVMTypeRef gj_cg_type(gj_cg *g, gj_ty t);       /* NULL: no storage */
LLVMTypeRef gj_cg_scalar_type(gj_cg *g, gj_scalar s);
LLVMValueRef gj_cg_const(gj_cg *g, gj_ty t);     /* for hasc types */

/* Convert value v of type from to type to (both with storage). */
LLVMValueRef gj_cg_convert(gj_cg *g, LLVMValueRef v, gj_ty from, gj_ty to);
LLVMValueRef gj_cg_to_scalar(gj_cg *g, LLVMValueRef v, gj_ty from,
                             gj_scalar to);

/* LuaJIT's math.floor (ceil != 0: math.ceil) on a float value. */
LLVMValueRef gj_cg_floor(gj_cg *g, LLVMValueRef x, gj_scalar s, int ceil);

/* Conversion of a value stored into an array element (LuaJIT's FFI rule). */
LLVMValueRef gj_cg_to_elem(gj_cg *g, LLVMValueRef v, gj_ty from, gj_scalar ts);

/* t[idx] into slot a (type out), t the known table kv indexed with a
** value that is not a constant (or any, for an array of 64-bit integers):
** a load of its constant data (gj_cg_const.c); iv the index's value, ti
** its type.  0, or -1 with the error set. */
int gj_cg_const_table(gj_cg *g, int kv, LLVMValueRef iv, gj_ty ti, int a, gj_ty out);
/* row[idx] into slot a: row (value rv) a GJ_T_CROW, idx (value iv, type
** ti) any number. */
int gj_cg_const_row(gj_cg *g, gj_ty row, LLVMValueRef rv, LLVMValueRef iv,
                    gj_ty ti, int a, gj_ty out);

/* Slot access with the slot's type before the instruction. */
LLVMValueRef gj_cg_load(gj_cg *g, int slot, gj_ty t);
void gj_cg_store(gj_cg *g, int slot, gj_ty t, LLVMValueRef v);

/* Call a declared (or declare) function name of type (ret, params). */
LLVMValueRef gj_cg_call(gj_cg *g, const char *name, LLVMTypeRef ret,
                        LLVMTypeRef *params, unsigned n, LLVMValueRef *args);

/* Arithmetic op (GJ_BC_*VV or POW) on a, b giving type res. */
LLVMValueRef gj_cg_arith(gj_cg *g, int op, LLVMValueRef a, gj_ty ta,
                         LLVMValueRef b, gj_ty tb, gj_ty res);
LLVMValueRef gj_cg_unm(gj_cg *g, LLVMValueRef a, gj_ty ta, gj_ty res);
/* Numeric comparison for ISLT..ISGT / ISEQV.. (i1, true: the test holds). */
LLVMValueRef gj_cg_compare(gj_cg *g, int op, LLVMValueRef a, gj_ty ta,
                           LLVMValueRef b, gj_ty tb);
/* Work groups (gj_cg_group.c). */
/* Is fn compiled as a resumable function (see src/gj_backend.h)? */
int gj_cg_is_resumable(const gj_cg *g, const gj_fn *fn);
/* n bytes of the current resumable function's frame, aligned to align; the
** address is computed in the entry block. */
LLVMValueRef gj_cg_frame_alloc(gj_cg *g, uint32_t n, uint32_t align);
/* Start of a resumable function: entry switch on its resume point; the
** builder is left in the block where a fresh call starts. */
void gj_cg_resume_begin(gj_cg *g);
/* Suspend here (the current resume point k is stored) and go on in a fresh
** block, where a call of the function resumes. */
void gj_cg_resume_point(gj_cg *g);
/* A call of resumable callee fn_llvm (type fty, args[1] is replaced by the
** callee's frame): suspends the caller while the callee is suspended. */
LLVMValueRef gj_cg_call_resumable(gj_cg *g, gj_fn *callee, LLVMTypeRef fty,
                                  LLVMValueRef *args, unsigned n);
/* gpu.barrier, gpu.shared, gpu.local_array and the atomics. */
int gj_cg_group_intr(gj_cg *g, int i, int intr, LLVMValueRef *args,
                     const gj_ty *at, const gj_ty *rt, LLVMValueRef *res);
/* Element pointer of a[idx] (idx of type ti). */
LLVMValueRef gj_cg_elem_ptr(gj_cg *g, LLVMValueRef arr, gj_ty ta,
                            LLVMValueRef idx, gj_ty ti);

/* Bounds checks (gj_cg_check.c).  Between begin and end the builder is
** in the block where index idx of arr is valid; without boundscheck both
** do nothing.  end joins the paths: v (the access's result, or NULL) or,
** where the check failed, zero.  Returns -1 with the error set. */
typedef struct gj_cg_guard {
  LLVMBasicBlockRef fail, cont;
} gj_cg_guard;
int gj_cg_check_begin(gj_cg *g, int i, LLVMValueRef arr, gj_ty ta,
                      LLVMValueRef idx, gj_ty ti, gj_cg_guard *gd);
LLVMValueRef gj_cg_check_end(gj_cg *g, const gj_cg_guard *gd, LLVMValueRef v);

/* Rows of multi-dimensional arrays (gj_cg_struct.c; ta an ARR with nd > 0):
** gj_cg_row: the row at p (its first element), the value { p, the next
** dimension }; with a guard gd of gj_cg_check_begin it ends the check (a
** failed one gives { null, 0 }).  gj_cg_row_copy: a[y] = r, the row's
** bytes from row value src_row to dst. */
LLVMValueRef gj_cg_row(gj_cg *g, gj_ty ta, LLVMValueRef p, const gj_cg_guard *gd);
void gj_cg_row_copy(gj_cg *g, gj_ty ta, LLVMValueRef dst, LLVMValueRef src_row);

/* Cancellation checks (gj_cg_cancel.c; gpu.kernel's timeout, opts->cancel).
** edge: a block that checks the launch's cancel word and goes on to target
** (the builder's position is kept); NULL without cancel.  here: the check
** at the builder's position, which goes on in a fresh block; nothing
** without cancel. */
LLVMBasicBlockRef gj_cg_cancel_edge(gj_cg *g, LLVMBasicBlockRef target);
void gj_cg_cancel_here(gj_cg *g);

/* !prof branch_weights on the two-way branch br: its first successor taken
** `first` times for `second` of the other (gj_cg_ops.c). */
void gj_cg_branch_weights(gj_cg *g, LLVMValueRef br, unsigned first,
                          unsigned second);

/* gpu.barrier() at the builder's position (gj_cg_group.c). */
void gj_cg_barrier(gj_cg *g);

/* print(...) (gj_cg_print.c): append a record to the launch's print area. */
int gj_cg_print(gj_cg *g, int i, int nargs, LLVMValueRef *args, const gj_ty *at);

/* The work item's linear global id, x + gx * (y + gy * z), an i64
** (gj_cg_print.c; the order of print's records and of assert's). */
LLVMValueRef gj_cg_linear_id(gj_cg *g);

/* assert(...) and error(...) (gj_cg_assert.c, intr GJ_I_ASSERT or
** GJ_I_ERROR): where the call fails, record it in the fault record and
** return from the function; assert's result (its first argument) in
** res[0] (on OpenCL in a function with barriers: record and go on).
** after_call: right after a device-function call in a kernel
** that has such calls (cs->fails), return when the record names a failed
** work item at or below this one; nothing otherwise. */
int gj_cg_assert(gj_cg *g, int i, int intr, int nargs, LLVMValueRef *args,
                 const gj_ty *at, LLVMValueRef *res);
void gj_cg_assert_after_call(gj_cg *g);

/* Structs (gj_cg_struct.c).  check: the device's data layout holds the
** layouts of cs->structs (an error naming struct and field otherwise).
** sref: the reference value for the struct at ptr.  field_get: the value of
** field f of the struct tref (a SREF) refers to: a scalar, or a reference
** or an array value into it; field_set: store v (type tv) into scalar field
** f.  copy: the struct st at src_ref into dst (llvm.memcpy: two elements
** of struct arrays are the same element or do not overlap, which memcpy
** allows; memmove would need a temporary the SPIR-V translator puts
** outside the entry block). */
int gj_cg_struct_check(gj_cg *g);
/* The reference to element p of array of structs arr (type ta), p from a
** bounds-checked access when checked (null where the check failed). */
LLVMValueRef gj_cg_struct_elem(gj_cg *g, LLVMValueRef arr, gj_ty ta,
                               LLVMValueRef p, int checked);
LLVMValueRef gj_cg_sref(gj_cg *g, LLVMValueRef ptr, int space);
LLVMTypeRef gj_cg_struct_type(gj_cg *g, const gj_struct *st);
LLVMValueRef gj_cg_field_get(gj_cg *g, LLVMValueRef ref, gj_ty tref,
                             const gj_field *f);
void gj_cg_field_set(gj_cg *g, LLVMValueRef ref, gj_ty tref, const gj_field *f,
                     LLVMValueRef v, gj_ty tv);
void gj_cg_struct_copy(gj_cg *g, LLVMValueRef dst, LLVMValueRef src_ref,
                       const gj_struct *st);
/* A struct made in a device function crosses its return by value:
** struct_out gives the bytes of the struct ref refers to (type t), and
** struct_in a new object (type t, in this function) holding bytes v. */
LLVMValueRef gj_cg_struct_out(gj_cg *g, LLVMValueRef ref, gj_ty t);
/* The LLVM type of those bytes: the struct's scalar members, packed at
** LuaJIT's offsets (its size, bytes where it has too many members). */
LLVMTypeRef gj_cg_struct_value_type(gj_cg *g, const gj_struct *st);
LLVMValueRef gj_cg_struct_in(gj_cg *g, LLVMValueRef v, gj_ty t);
/* A new struct of type t (a SREF in local space), zeroed, its first nargs
** fields set from args (types at): LuaJIT's ctype(...). */
LLVMValueRef gj_cg_struct_new(gj_cg *g, gj_ty t, int nargs,
                              const LLVMValueRef *args, const gj_ty *at);

/* The boundary of functions (gj_cg_sig.c).  declare_fn: fn's LLVM
** function, named name, with its attributes (fn->llfn is set).  emit_fn
** (gj_cg.c): fn's body into its declared function; 0, or -1 with the
** error set.  params_in: at the entry, the function's parameters into
** their slots, k the index of the first LLVM parameter that is a Lua one.
** ret_llvm: a result's LLVM type (NULL: none).  return: return the n
** values v (types t) as fn's results. */
LLVMValueRef gj_cg_declare_fn(gj_cg *g, gj_fn *fn, const char *name);
int gj_cg_emit_fn(gj_cg *g, gj_fn *fn);
void gj_cg_params_in(gj_cg *g, gj_fn *fn, int k);
LLVMTypeRef gj_cg_ret_llvm(gj_cg *g, gj_ty t);
void gj_cg_return(gj_cg *g, gj_fn *fn, int n, LLVMValueRef *v, const gj_ty *t);

/* A call at instruction i of Lua function kv (a device function, emitted
** when first called): results into res[] (types rt[], *nout of them). */
int gj_cg_call_lua(gj_cg *g, int i, int kv, int nargs, LLVMValueRef *args,
                   const gj_ty *at, LLVMValueRef *res, gj_ty *rt, int *nout);
/* The arguments of a call of callee (cargs: %wi, its frame where it is
** resumable, each parameter with storage converted to its type); their
** number. */
unsigned gj_cg_call_args(gj_cg *g, const gj_fn *callee, LLVMValueRef *args,
                         const gj_ty *at, LLVMValueRef *cargs);
/* gpu.derivative(f, ...) / gpu.gradient(f, ...) (intr) at instruction i
** (gj_cg_deriv.c): nout results of types rt (the typer's) into res. */
int gj_cg_derivative(gj_cg *g, int i, int intr, int nargs, LLVMValueRef *args,
                     const gj_ty *at, const gj_ty *rt, int nout,
                     LLVMValueRef *res);
/* The metamethod call m at instruction i (gj_typer_meta, the state before
** i in the slots): *out is the result (NULL where it has no storage, or m
** is an __index table's value), for a comparison the i1 the branch takes
** its jump on. */
int gj_cg_meta(gj_cg *g, int i, const gj_meta *m, LLVMValueRef *out);

/* FORI/FORL: does the loop go on? idx, stop, step in the loop's type t. */
LLVMValueRef gj_cg_for_cond(gj_cg *g, LLVMValueRef idx, LLVMValueRef stop,
                            LLVMValueRef step, gj_ty t);
/* FORI: the limit stop (type ts) in the counter's type t; a float limit
** of an integer counter rounded once toward the side the loop never
** passes. */
LLVMValueRef gj_cg_int_limit(gj_cg *g, LLVMValueRef stop, gj_ty ts,
                             LLVMValueRef step, gj_ty t);

/* Intrinsic call: results into res[] (types rt[]). */
int gj_cg_intr(gj_cg *g, int i, int intr, int nargs, LLVMValueRef *args,
               const gj_ty *at, const gj_ty *rt, int nres, LLVMValueRef *res);

#endif
