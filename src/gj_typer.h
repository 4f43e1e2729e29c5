/*
** Typer: a type for every slot at every instruction (docs/typing.md).
**
** A compile session (gj_cs) types the kernel and, on demand, every device
** function it reaches, once per tuple of argument types (gj_fn).  The
** state at each basic block's entry is iterated to a fixed point; codegen
** later replays gj_typer_step through each block to get the types at every
** instruction, so the rules live in one place.
*/
#ifndef GJ_TYPER_H
#define GJ_TYPER_H

#include <stdint.h>

#include "gj_bc.h"
#include "gj_err.h"
#include "gj_kv.h"
#include "gj_type.h"

typedef enum gj_tk {
  GJ_T_UNDEF = 0,  /* no value reaches here yet (bottom) */
  GJ_T_NIL,
  GJ_T_BOOL,
  GJ_T_NUM,        /* s: the scalar kind (never GJ_BOOL) */
  GJ_T_WINT,       /* weak integer: a literal or captured constant */
  GJ_T_WFLT,       /* weak float */
  GJ_T_ARR,        /* s: element kind; space: GJ_SPACE_* */
  GJ_T_KV,         /* a Lua value known while compiling; aux: gj_cs.kv index */
  GJ_T_STR,        /* a string constant, usable only as the type name of
                   ** gpu.shared/gpu.local_array; s: the scalar it names
                   ** (GJ_SCALAR__MAX: not a scalar type name) */
  GJ_T_CONFLICT,   /* incompatible types merged; aux: the two type codes */
  GJ_T_SREF,       /* a reference to a struct in memory (an element of an
                   ** array of structs, or a struct field of one): sid,
                   ** space and u.origin as for the array it is in; held
                   ** as an array value { ptr, i64 }.  In GJ_SPACE_LOCAL
                   ** (a struct made with its ctype): aux 1 when it may
                   ** have been made in this function (a device function
                   ** returns it by value, its caller gets a new object),
                   ** u.origin the parameters it may be (returned as they
                   ** are: the caller's own objects) */
  GJ_T_CROW        /* a table below a known nested table of numbers
                   ** reached with an index that is not a constant
                   ** (`T[i]`, gj_typer_const.c): aux the root's gj_kv, s
                   ** its level (T[i] is 1); held as an i32 node id of the
                   ** table's constant data (node 0: an index outside) */
} gj_tk;

enum { GJ_SPACE_GLOBAL = 0, GJ_SPACE_SHARED = 1, GJ_SPACE_LOCAL = 2 };

/* Bounds-check tag of a global array: which kernel argument (0-based; -1:
** one of several) it is and the index of its first element (1 for a Lua
** table, else 0); tag 0: the first index is not known either.  Arrays with
** different tags get different device-function specializations, so a
** check in a device function still knows them. */
#define GJ_ARR_TAG(arg, base) ((((arg) + 2) << 1) | (base))
#define GJ_ARR_TAG_ARG(tag) (((tag) >> 1) - 2)
#define GJ_ARR_TAG_BASE(tag) ((tag) & 1)

typedef struct gj_ty {
  uint8_t k;       /* gj_tk */
  uint8_t s;       /* gj_scalar for NUM and ARR */
  uint8_t space;
  uint8_t hasc;    /* WINT/WFLT/BOOL: the constant value u.c is known */
  int32_t aux;     /* KV: the gj_kv; CONFLICT: the type codes; ARR: in
                   ** GJ_SPACE_GLOBAL the bounds-check tag (GJ_ARR_TAG, 0
                   ** without boundscheck or when not known), in shared
                   ** and local space the length the intrinsic gave */
  union {
    double c;        /* constant value (BOOL: 0 or 1) */
    uint64_t origin; /* ARR: bit i set when it may be kernel/function param i;
                     ** STR: the text (a const char *, the proto's) */
  } u;
  /* Integer NUMs only (docs/typing.md, "Whole numbers"):
  ** rng:  the value lies in [lo, hi], both below 2^53 in magnitude (the
  **       narrow kinds' own ranges are implied, see gj_ty_bounds);
  ** lnum: the value stands for a Lua number, a double: every operation on
  **       it must give exactly what the double gives, so it has rng and is
  **       never -0; an operation that cannot guarantee that is typed
  **       `double` instead (gj_typer_arith);
  ** cint: a C integer -- a scalar integer argument or an int64_t/uint64_t
  **       element, which LuaJIT holds as cdata with C arithmetic (no -0);
  **       every other integer stands for a Lua number, so an operation on
  **       it that LuaJIT's doubles would make -0 is done in double
  **       (gj_typer_unm, gj_typer_arith; docs/typing.md, "Negative zero"). */
  uint8_t rng;
  uint8_t lnum;
  uint8_t cint;
  uint8_t sid;     /* ARR: its elements are structs, SREF: the struct, of
                   ** type cs->structs->s[sid - 1]; 0: none (an ARR of
                   ** scalars s) */
  uint8_t shp;     /* ARR of a multi-dimensional array: its level's entry
                   ** in cs->shapes (1-based; 0: a plain array, no shape) */
  uint8_t nd;      /* ARR with shp: the dimensions below this level; its
                   ** elements are rows (ARRs of shp + 1, nd - 1) while
                   ** nd > 0, else elements of kind s / sid */
  double lo, hi;
} gj_ty;

/* Known Lua values: tables and functions reached through upvalues, globals
** and fields of known tables.  One entry per value: two ways to reach it
** give the same entry, so `f == math.sin` is decided while typing. */
typedef enum { GJ_KV_TABLE, GJ_KV_FUNC, GJ_KV_INTR } gj_kvkind;

typedef struct gj_kv {
  gj_kvkind kind;
  int h;            /* the value's handle in cs->src (gj_kv.h) */
  int intr;         /* GJ_KV_INTR: gj_intr */
  char name[96];    /* how the kernel reached it, for messages */
  struct gj_proto *proto;   /* GJ_KV_FUNC: read on first call */
  /* GJ_KV_TABLE indexed with a variable (gj_typer_const.c): its numbers,
  ** read once on first need (cdata NULL until then): for a list of
  ** numbers (cdepth 1) t[1..cn]; for nested tables (cdepth levels) every
  ** number, the innermost tables' in breadth-first order, and cdir: per
  ** table (node; 0 the empty one an index outside reads, 1 the root, then
  ** breadth-first) its start and its length: item k of node n (1 <= k <=
  ** length) is node or number start + k (numbers from 1; 0 reads 0).
  ** cwhole: all whole, not -0, within int32_t (the elements are then an
  ** lnum on [clo, chi], which holds 0: what an index outside reads) */
  double *cdata;
  int cn, cwhole;
  double clo, chi;
  int cdepth, cnodes;
  int32_t *cdir;
  int ci64;         /* a copy of an FFI array of int64_t (1) or uint64_t
                    ** (2) (gj_kvinfo.i64): its numbers are cidata, C
                    ** integers, and cdata NULL */
  int64_t *cidata;
  int base0;        /* a copy of an FFI array (gj_kvinfo.base0): the
                    ** kernel's index k reads t[k + 1] */
} gj_kv;

#define GJ_MAXRET 8

/* Multi-dimensional arrays (docs/typing.md, "Multi-dimensional arrays"):
** an argument "float[][4][3]" is an ARR whose descriptor length is the
** outer count; indexing it gives a row, an ARR { base + i * row bytes,
** the next dimension }.  One entry per level: the root (level 0) and each
** row level below it follow each other in cs->shapes, so a row of entry
** e is entry e + 1.  dims[0..n) are the dimensions below the level. */
#define GJ_MAXDIMS 8
#define GJ_MAXSHAPES 64
typedef struct gj_shape {
  int level;        /* 0: the argument itself; the message's dimension is
                    ** level + 1 */
  int n;            /* dimensions below this level */
  int64_t dims[GJ_MAXDIMS];
} gj_shape;

typedef struct gj_block {
  int start, end;   /* instructions [start, end) */
  int nsucc;
  int succ[2];      /* successor block indices */
  int join_barrier; /* the join (immediate post-dominator) of a branch
                    ** whose paths reach a barrier (gj_uniform.c): with
                    ** job->join_barriers, codegen puts one at its start */
} gj_block;

/* One function specialized for one tuple of argument types. */
typedef struct gj_fn {
  int kv;                /* the gj_kv of the function; -1 for the kernel */
  gj_proto *proto;
  int nparams;
  gj_ty params[GJ_MAXPARAMS];
  int nret;              /* -1 until a return is typed */
  gj_ty ret[GJ_MAXRET];
  uint64_t wmask;        /* array params it may store to */
  uint64_t rmask;        /* array params it may load from */
  uint64_t lmask;        /* array params whose length (#a) it reads */
  int nblocks;
  gj_block *blocks;
  int *blockof;          /* instruction -> block */
  gj_ty *entry;          /* nblocks * framesize entry states */
  uint8_t *reached;      /* per block */
  int busy;              /* being typed: a call to it is recursion */
  int uses_barrier;      /* it calls gpu.barrier, itself or through a call */
  int uses_deriv;        /* it calls gpu.derivative or gpu.gradient, itself
                         ** or through a call */
  int uses_print;        /* it calls print, itself or through a call */
  void *llfn;            /* codegen's LLVMValueRef */
  uint32_t frame_bytes;  /* codegen: its frame, when resumable */
} gj_fn;

typedef struct gj_cs {
  gj_kvsrc *src;         /* the frontend: the kernel and the values it
                         ** reaches (gj_kv.h); the session owns it */
  const gj_bcmap *map;
  int single;            /* precision = "single" */
  int lua;               /* precision = "lua": a float element, field or
                         ** scalar parameter is read as the double LuaJIT
                         ** makes of it (gj_ty_read), so float kernels
                         ** compute in double and round only at stores */
  int narrow32;          /* the job's narrow_ints: gj_ty_scalar holds an
                         ** integer whose range fits int32_t in 32 bits */
  int id_ranges;         /* the ids have rng [0, 2^31 - 1]: set when a
                         ** parameter is lnum, since such kernels run only
                         ** in launches whose dimensions are below 2^31 */
  const char *kname;     /* kernel name for messages */
  gj_err *err;
  int nkv, maxkv;
  gj_kv *kv;
  int nfns, maxfns;
  gj_fn **fns;           /* fns[0] is the kernel */
  gj_structs *structs;   /* the struct types of the signature (NULL: none) */
  int nshapes;           /* multi-dimensional arrays' levels (gj_shape) */
  gj_shape shapes[GJ_MAXSHAPES];
  int depth;             /* device-function calls being typed, nested */
  int derivs;            /* gpu.derivative/gradient calls typed (the
                         ** compile then needs the codegen option ad and
                         ** gj_ad_inner); the first one's place: */
  const char *deriv_chunk;
  int deriv_line;
  int fails;             /* an assert or error call was typed: codegen
                         ** checks the fault record after device-function
                         ** calls (gj_cg_assert.c) */
} gj_cs;

/* Multiple results of the last call with C == 0 (MULTRES), tracked with the
** state as LuaJIT tracks it at run time. */
typedef struct gj_tstate {
  gj_ty *slot;           /* framesize entries */
  int mr_base;           /* first slot of the multiple results, -1: none */
  int mr_n;
} gj_tstate;

/* Outgoing states of a block's last instruction: for a conditional branch
** taken[0] is the fall-through edge and taken[1] the jump; a statically
** known condition marks the dead edge. */
typedef struct gj_edges {
  int live[2];
  int copy_a;       /* ISTC/ISFC: on the jump edge, slot copy_a = slot d */
  int copy_d;
  int dead;         /* the instruction does not return (error(msg)): the
                    ** rest of its block and every edge out are dead */
} gj_edges;

/* The session takes src over (NULL: memory ran out, which
** gj_typer_kernel reports) and closes it in gj_cs_free.  map: the opcode
** map src reads bytecode with (fr2 shapes calls). */
void gj_cs_init(gj_cs *cs, gj_kvsrc *src, const gj_bcmap *map, int single,
                const char *kname, gj_err *err);
void gj_cs_free(gj_cs *cs);

/* The struct of layout text (gj_type.h, a whole struct and nothing after
** it) in cs->structs: its index into *sid.  0, or -1 with cs->err set. */
int gj_cs_struct(gj_cs *cs, const char *text, int *sid);

/* The root entry (1-based, for gj_ty.shp) of an array whose dimensions
** below the outer one are dims[0..n), n >= 1, interned with its row
** levels after it.  0, or -1 with cs->err set (too many). */
int gj_cs_shape(gj_cs *cs, const int64_t *dims, int n, int *shp);
/* The bytes of one element of an array of type t (a row's bytes for a
** multi-dimensional level; a struct's size, a scalar's size). */
int64_t gj_ty_elem_bytes(const gj_cs *cs, gj_ty t);

/* Type the kernel, src->kernel, with param types. */
int gj_typer_kernel(gj_cs *cs, int nparams, const gj_ty *params, gj_fn **out);

/* Type one instruction: st holds the state before it, afterwards the state
** after it (for branches: the fall-through state; edges says which edges
** are live).  fn is the function being typed. */
int gj_typer_step(gj_cs *cs, gj_fn *fn, int i, gj_tstate *st, gj_edges *ed);

/* The specialization of device function kv for these argument types
** (typing it if new). */
int gj_typer_callee(gj_cs *cs, int kv, int nargs, const gj_ty *args,
                    int line, gj_fn *caller, gj_fn **out);

/* Before the typer or codegen goes into device function `name`, depth
** calls below the kernel: 0 while the compiling thread has C stack to
** spare, else -1 with an error (at instruction i of fn) naming the depth
** and the function (each level takes a few KiB of stack; gj_stack.h). */
int gj_typer_depth_check(gj_cs *cs, gj_fn *fn, int i, const char *name,
                         int depth);

/* Type helpers shared with codegen. */
gj_ty gj_ty_num(gj_scalar s);
gj_scalar gj_ty_deffloat(const gj_cs *cs);
/* The argument types (f first) at which gpu.derivative / gpu.gradient
** (intr) call f: an active argument that is an integer (a Lua number the
** typer knows as one) is converted to the default float, as a number it
** is; a C integer (cdata) stays, and is refused. */
void gj_typer_deriv_args(gj_cs *cs, int intr, int nargs, const gj_ty *args,
                         gj_ty *out);
/* The concrete scalar a numeric/bool type is held in (weak ones
** materialized).  GJ_SCALAR__MAX for non-scalars.  With cs->narrow32, an
** int64_t that stands for a Lua number or an id (not a C integer) and
** whose range fits int32_t is held as int32_t: its add, sub and mul then
** wrap modulo 2^32 and give the exact result, which the range says fits
** (docs/typing.md, "32-bit integers"). */
gj_scalar gj_ty_scalar(const gj_cs *cs, gj_ty t);
int gj_ty_isnumeric(gj_ty t);
/* Join for merges and for operands of arithmetic (docs/typing.md). */
gj_ty gj_ty_join(const gj_cs *cs, gj_ty a, gj_ty b);
gj_ty gj_ty_join_loop(const gj_cs *cs, gj_ty a, gj_ty b);   /* at a back edge */
/* Arithmetic operand join: join, then narrow integers promoted to 32 bits. */
gj_ty gj_ty_arith(const gj_cs *cs, gj_ty a, gj_ty b);
int gj_ty_eq(gj_ty a, gj_ty b);
/* The bounds of an integer-valued numeric type: rng, a narrow kind's range
** or a weak integer constant.  0 when not known. */
int gj_ty_bounds(gj_ty t, double *lo, double *hi);
/* An lnum type on [lo, hi], or the default float (`double`; `float` with
** precision = "single") when the range is not exact (2^53 or more in
** magnitude).  Below, "the double" of an lnum means this default float. */
gj_ty gj_ty_lnum(const gj_cs *cs, double lo, double hi);
void gj_ty_str(const gj_cs *cs, gj_ty t, char *buf, size_t n);
/* Array elements: type of a loaded element (a SREF for an array of
** structs). */
gj_ty gj_ty_elem(gj_ty arr);
/* A value read from memory (an element, a field, an atomic's old value, a
** scalar parameter) as the kernel computes with it: t itself, but a `float`
** is the `double` of the same value with precision = "lua". */
gj_ty gj_ty_read(const gj_cs *cs, gj_ty t);
/* The type at the caller of a value of type t a callee returns, called
** with args: a struct made in the callee is a new object of the caller's
** (GJ_T_SREF, aux); one the callee got as parameter j is what the caller
** passed as argument j.  Other types are t. */
gj_ty gj_ty_returned(gj_ty t, int nargs, const gj_ty *args);
/* Does a function return t by value (a struct made in it)? */
#define gj_ty_byvalue(t) \
  ((t).k == GJ_T_SREF && (t).space == GJ_SPACE_LOCAL && (t).aux)
/* The struct of a SREF or of an array of structs, or NULL. */
const gj_struct *gj_ty_struct(const gj_cs *cs, gj_ty t);
/* The type of field f of a struct reached through ref (a SREF): a number or
** boolean for a scalar field, a SREF for a struct, an ARR for a fixed
** array (space and origin of ref; no bounds-check tag). */
gj_ty gj_ty_field(gj_ty ref, const gj_field *f);

/* "file.lua:LINE: <msg> (in kernel NAME)"; returns -1. */
int gj_typer_error(gj_cs *cs, gj_fn *fn, int i, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#endif
