/*
** Known values: what the typer asks the frontend about the values a kernel
** reaches by name.
**
** A kernel may read upvalues, globals and fields of the tables it reached
** that way (`C.scale`, `math.sin`, `gpu.global_id`).  The typer turns each
** into a constant (number, boolean, string), nil, or a known value (gj_kv
** in gj_typer.h: a table or a function, which it may index or call).  It
** never holds the values themselves, only handles: small integers that the
** frontend gives out and answers questions about through the table below.
** So the typer needs no Lua stack; where the values live is the frontend's
** business (gj_kv_lua.c keeps them in a table of a Lua state).
**
** Contract between a source (gj_kvsrc) and the typer:
** - A handle (an int > 0) names one value from the call that returns it
**   until release(), or until close() for those never released; a
**   released number may be given out again.  The same value reached twice
**   may come back as two handles: same() tells.
** - src->kernel is the handle of the kernel function; it lives until close.
** - Every string a source returns (names, texts) stays valid, unchanged,
**   until close, whatever is released before.
** - Lookups give what Lua's own indexing gives, metamethods included
**   (upvalue, global, field with a key), except field() by number, which
**   is a raw read.
** - An op does not fail except as the frontend's own machinery fails (a
**   metamethod raising an error: an __index on a table or environment, a
**   __tostring).  Then the op gives nil (a handle of nil, or a CLASS OTHER
**   classification), and the source sets `failed` with the first such
**   error's message in `why`; the pipeline ends the compile with that
**   message once the frontend stage is over (running the function would
**   have raised it), whatever the typer made of the nil.  The source never
**   unwinds the compile (no longjmp past the core's frames: nothing leaks,
**   no lock stays held).  Errors the kernel's author
**   should see (a value of a kind kernels cannot use, a bad upvalue) are
**   the typer's to word: a source only says what it found.
** - A source is owned by the compile session it is given to (gj_cs_init),
**   which closes it in gj_cs_free.
*/
#ifndef GJ_KV_H
#define GJ_KV_H

#include <stddef.h>

#include "gj_bc.h"
#include "gj_err.h"

/* What a value is (gj_kvinfo.cls). */
typedef enum gj_kvclass {
  GJ_KVC_NIL,
  GJ_KVC_NUMBER,     /* num: the value */
  GJ_KVC_BOOLEAN,    /* num: 0 or 1 */
  GJ_KVC_STRING,     /* str: the text */
  GJ_KVC_TABLE,
  GJ_KVC_FUNCTION,   /* intr, cfunc */
  GJ_KVC_CTYPE,      /* an FFI ctype, e.g. ffi.typeof("float"); str: the
                     ** C type's name as FFI prints it ("float", "int *") */
  GJ_KVC_OTHER       /* anything else; str: its Lua type name ("thread",
                     ** "userdata", "cdata") */
} gj_kvclass;

typedef struct gj_kvinfo {
  gj_kvclass cls;
  double num;
  const char *str;   /* see gj_kvclass; NULL where it says nothing */
  const char *intr;  /* FUNCTION: the intrinsic's name (gj_intr_lookup)
                     ** when it is one of gpujit's, else NULL */
  int cfunc;         /* FUNCTION: written in C (it has no bytecode) */
  int builtin;       /* FUNCTION: a library function the VM builds from
                     ** bytecode (string.len, math.deg: no line of its own) */
  const char *layout;  /* CTYPE of a struct the kernels can hold: its
                       ** layout text (gj_type.h, "Struct types"), as the
                       ** Lua face writes it; else NULL */
  int base0;         /* TABLE: a copy of an FFI array of numbers the kernel
                     ** reached (its element 0 at [1]), read as constant
                     ** data (gj_typer_const.c) */
  int i64;           /* TABLE: such a copy of an array of int64_t (1) or
                     ** uint64_t (2), whose elements are their decimal
                     ** texts (STRING) */
} gj_kvinfo;

typedef struct gj_kvsrc gj_kvsrc;

/* The operations of a source.  fn, t, h, a, b are handles. */
typedef struct gj_kvops {
  /* Upvalue n (0-based) of function fn: returns its name ("" for one
  ** without debug information), and when h is not NULL sets *h to a
  ** handle of its value.  NULL (and *h untouched) when fn has no upvalue
  ** n. */
  const char *(*upvalue)(gj_kvsrc *src, int fn, int n, int *h);
  /* Global `name` as function fn sees it (its environment). */
  int (*global)(gj_kvsrc *src, int fn, const char *name);
  /* The value of standard library field lib.key as the frontend's own
  ** globals hold it, not any function's environment (nil when there is
  ** none): the typer compares a function with math.random this way. */
  int (*stdlib)(gj_kvsrc *src, const char *lib, const char *key);
  /* Field t[key], or with key NULL the raw t[idx]; t is a table. */
  int (*field)(gj_kvsrc *src, int t, const char *key, int idx);
  void (*classify)(gj_kvsrc *src, int h, gj_kvinfo *info);
  /* Metamethod mm ("__add" .. "__le", "__len", "__unm", "__index") of the
  ** FFI metatype of struct sname (gj_struct.name): a handle of what
  ** LuaJIT's dispatch finds for two objects of that struct (of nil when the
  ** struct has no metatype or no such entry).  For "__index", key is the
  ** name looked up: *isfn 1 and the __index function when it is one, else
  ** *isfn 0 and what the __index table gives for key. */
  int (*meta)(gj_kvsrc *src, const char *sname, const char *mm,
              const char *key, int *isfn);
  /* 1 when a and b are the same value (Lua's rawequal), else 0. */
  int (*same)(gj_kvsrc *src, int a, int b);
  void (*release)(gj_kvsrc *src, int h);
  /* Read the bytecode of Lua function fn (not a C function) into p, as
  ** gj_bc_decode decodes it (gj_bc.h: its contract and errors; the Lua
  ** source reads through jit.util, gj_bc_lua.c).  0, or -1 with err set. */
  int (*read)(gj_kvsrc *src, int fn, gj_proto *p, gj_err *err);
  /* Free what read() put in p (not p itself). */
  void (*unread)(gj_kvsrc *src, gj_proto *p);
  /* Free the source and every handle still held. */
  void (*close)(gj_kvsrc *src);
} gj_kvops;

/* A source: an implementation embeds this first in its own state. */
struct gj_kvsrc {
  const gj_kvops *ops;
  int kernel;        /* the kernel function's handle */
  int failed;        /* an op's lookup raised an error (see the top) */
  gj_err why;        /* failed: the first such error's message */
};

#endif
