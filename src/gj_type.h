/*
** Scalar kinds, kernel signatures and launch shapes: the vocabulary shared by
** the core, the backends and (through gpujit.h) the Lua dispatcher.
*/
#ifndef GJ_TYPE_H
#define GJ_TYPE_H

#include <stddef.h>
#include <stdint.h>

/* Element and value kinds a kernel can see.  Order matters: the integer
** kinds are sorted by width so that promotion can compare them. */
typedef enum gj_scalar {
  GJ_BOOL,
  GJ_I8, GJ_U8, GJ_I16, GJ_U16, GJ_I32, GJ_U32, GJ_I64, GJ_U64,
  GJ_F32, GJ_F64,
  GJ_SCALAR__MAX
} gj_scalar;

#define gj_scalar_isint(s)   ((s) >= GJ_I8 && (s) <= GJ_U64)
#define gj_scalar_isfloat(s) ((s) == GJ_F32 || (s) == GJ_F64)
#define gj_scalar_issigned(s) \
  ((s) == GJ_I8 || (s) == GJ_I16 || (s) == GJ_I32 || (s) == GJ_I64)

/* The type table: one entry per kind, the only place the vocabulary is
** written down.  The core reads it (the functions below); the Lua face gets
** it once at load through core.types() (src/gj_lua_types.c) and builds
** lua/gpujit/types.lua's tables from it.  Invariants:
** - gj_types[s].scalar == s, for every s < GJ_SCALAR__MAX;
** - name is the canonical spelling: a LuaJIT FFI type name (the <stdint.h>
**   name for integers, "bool", "float", "double"), unique in the table;
** - size and align are the host C compiler's sizeof and _Alignof of the
**   type (so LuaJIT's ffi.sizeof/ffi.alignof of name, spec/types_spec.lua);
**   bits are the value bits (bool: 1, else 8 * size);
** - flags are derived from the enum's order (the macros above): exactly one
**   of GJ_TF_BOOL, GJ_TF_INT, GJ_TF_FLOAT; GJ_TF_SIGNED only with
**   GJ_TF_INT; GJ_TF_INT64 for the 64-bit integers (boxed cdata in LuaJIT);
** - spell holds the other C spellings that mean the type ("int",
**   "unsigned char", "size_t"), at most GJ_TYPE_NSPELL, the unused slots
**   NULL; no spelling appears twice in the whole table.  int is 32 bits and
**   long 64, as on every LP64 host LuaJIT runs on (gj_type.c checks it);
**   "char" is int8_t whatever the host's char signedness.
** Struct types are entries of their own (gj_struct, below): LuaJIT's layout
** of an FFI struct, made per compile from the text the Lua face writes. */
#define GJ_TF_BOOL   0x01u
#define GJ_TF_INT    0x02u
#define GJ_TF_FLOAT  0x04u
#define GJ_TF_SIGNED 0x08u
#define GJ_TF_INT64  0x10u

#define GJ_TYPE_NSPELL 10

typedef struct gj_typeinfo {
  const char *name;
  uint8_t scalar;      /* gj_scalar */
  uint8_t size;        /* bytes in memory */
  uint8_t align;       /* bytes */
  uint8_t bits;        /* value bits */
  uint8_t flags;       /* GJ_TF_* */
  const char *spell[GJ_TYPE_NSPELL];
} gj_typeinfo;

/* Indexed by gj_scalar. */
extern const gj_typeinfo gj_types[GJ_SCALAR__MAX];

const char *gj_scalar_name(gj_scalar s);     /* "int32_t", "float", ...; "?" */
int gj_scalar_size(gj_scalar s);             /* bytes in memory (bool: 1) */
int gj_scalar_bits(gj_scalar s);             /* value bits (bool: 1) */
/* A canonical name or one of the entries' C spellings.  Returns 0 and sets
** *out, or -1 for an unknown name. */
int gj_scalar_parse(const char *name, gj_scalar *out);

/* Lua numbers that hold whole values (docs/typing.md, "Whole numbers").  A
** Lua-number argument is classed at launch by its value; a class other than
** GJ_LNUM_NONE types the parameter as an integer that stands for the double
** LuaJIT would hold, known to lie in [lo, hi].  Every other value (a
** fraction, -0, NaN, +-inf, a whole number outside every class, any number
** of a launch with a global or group dimension of 2^31 or more) is a
** `double`.  The classes are disjoint but for GJ_LNUM_INT, the range of the
** eager type name "lua_int", which holds every other one. */
typedef enum gj_lnum {
  GJ_LNUM_NONE = 0,
  GJ_LNUM_INT,     /* "lua_int":   [-2^31, 2^31 - 1] (eager signatures) */
  GJ_LNUM_POS20,   /* "lua_pos20": [1, 2^20] */
  GJ_LNUM_POS31,   /* "lua_pos31": [2^20 + 1, 2^31 - 1] */
  GJ_LNUM_ZERO,    /* "lua_zero":  +0 */
  GJ_LNUM_NEG20,   /* "lua_neg20": [-2^20, -1] */
  GJ_LNUM_NEG31,   /* "lua_neg31": [-2^31, -2^20 - 1] */
  GJ_LNUM__MAX
} gj_lnum;

typedef struct gj_lnum_class {
  const char *name;
  double lo, hi;
} gj_lnum_class;

/* Indexed by gj_lnum (entry 0: no class, name NULL). */
extern const gj_lnum_class gj_lnum_classes[GJ_LNUM__MAX];
/* The class named name, or GJ_LNUM_NONE. */
gj_lnum gj_lnum_parse(const char *name);
/* The class whose range is exactly [lo, hi], or GJ_LNUM_NONE. */
gj_lnum gj_lnum_of(double lo, double hi);

/* Struct types (docs/typing.md, "Structs").  The Lua face reads an FFI
** struct's layout through ffi.typeinfo/ffi.offsetof (lua/gpujit/types.lua)
** and names the type to the core by its layout text:
**   struct := '{' NAME ';' SIZE ';' ALIGN ';' field (',' field)* '}'
**   field  := FIELD ':' OFFSET ':' (SCALAR | struct) ['[' COUNT ']']
** e.g. "{particle;16;4;x:0:float,y:4:float,pos:8:float[2]}"; an array of
** them is the text followed by "[]".  NAME is the C name ("particle",
** "struct vec"), SCALAR a canonical name of gj_types; the layout is
** LuaJIT's (offsets, size, alignment), taken as it is.  A compile's
** structs live in a gj_structs table; the same text gives the same entry,
** so a struct's index (its sid) identifies its type within the compile. */
#define GJ_MAXSTRUCTS 32
#define GJ_MAXFIELDS 256    /* in all the structs of one table */

typedef struct gj_field {
  const char *name;    /* into the table's text */
  uint32_t offset;     /* bytes from the start of the struct */
  uint32_t count;      /* 0: one value; n: a fixed array of n */
  uint8_t scalar;      /* gj_scalar; GJ_SCALAR__MAX: a struct, sid */
  uint8_t sid;
  uint8_t pad_[2];
} gj_field;

typedef struct gj_struct {
  const char *name;    /* the C name, into the table's text */
  const char *text;    /* its layout text (the key of the entry) */
  uint32_t size, align;
  int nfields;
  const gj_field *fields;
} gj_struct;

typedef struct gj_structs {
  int n, nfields;
  gj_struct s[GJ_MAXSTRUCTS];
  gj_field f[GJ_MAXFIELDS];
  char *texts[GJ_MAXSTRUCTS];   /* owned copies of the names and texts */
} gj_structs;

void gj_structs_free(gj_structs *tab);   /* the texts, not tab */
/* For messages that write "struct NAME": "struct " before a name that does
** not already start with "struct " or "union " (a tag's C name), else "". */
const char *gj_struct_word(const char *name);
/* Parse the layout text at *p (a struct, above) into tab, advancing *p
** past it; its sid (index in tab) into *sid.  0, or -1 with a message in
** msg.  The layout is checked for consistency (every field inside the
** struct's size, size a multiple of align, align a power of two); whether
** a device can hold it is the pipeline's check (gj_structs_check). */
int gj_struct_parse(gj_structs *tab, const char **p, int *sid, char *msg,
                    size_t msgsize);
/* The field named name of struct sid, or NULL. */
const gj_field *gj_struct_field(const gj_structs *tab, int sid,
                                const char *name);
/* Bytes of one element of field f (a scalar or a struct). */
uint32_t gj_field_size(const gj_structs *tab, const gj_field *f);

#define GJ_MAXPARAMS 64

/* One kernel parameter as the launch sees it.  In the argument block a
** scalar is stored at its natural alignment; an array is a descriptor
** { void *ptr; int64_t len; } (16 bytes, 8-aligned) where ptr already
** points at element 0 of the kernel's indexing (a 1-based Lua table passes
** its buffer address minus one element). */
typedef struct gj_param {
  uint8_t is_array;
  uint8_t elem;        /* gj_scalar */
  uint8_t read;        /* arrays: the kernel may load from it */
  uint8_t written;     /* arrays: the kernel may store to it */
  uint8_t len_used;    /* arrays: the kernel reads its length (#a) */
  uint8_t lnum;        /* scalars: the gj_lnum class of a Lua number held
                       ** as an integer (elem is then int64_t) */
  uint16_t esize;      /* arrays of structs: bytes of an element (elem is
                       ** then uint8_t: to a backend, bytes); else 0 */
  uint32_t offset;     /* byte offset in the argument block */
  uint32_t size;       /* bytes in the argument block */
} gj_param;

typedef struct gj_sig {
  int nparams;
  uint32_t argsize;    /* whole block, a multiple of 8 */
  gj_param params[GJ_MAXPARAMS];
  /* What the kernel needs beyond its arguments (filled by codegen). */
  uint32_t shared_bytes;   /* gpu.shared arrays of one work group */
  uint32_t frame_bytes;    /* serial_groups jobs with barriers: the state
                           ** one work item keeps across a barrier */
  uint8_t uses_barrier;    /* it (or a function it calls) calls gpu.barrier */
  uint8_t faults;          /* it has bounds checks: a launch passes a
                           ** fault record (src/gj_backend.h) */
  uint8_t cancel;          /* it has cancellation checks (timeout): a
                           ** launch passes a fault record whose cancel
                           ** word stops it (src/gj_backend.h) */
  uint8_t lnum;            /* a parameter is an lnum: its code counts on
                           ** ids below 2^31 (docs/typing.md) */
  uint8_t prints;          /* it calls print: the launch's fault record is
                           ** followed by a print area, and sig->faults is 1
                           ** too (src/gj_backend.h) */
  uint32_t print_cap;      /* then: the bytes for records in it (the
                           ** kernel's print_buffer option) */
} gj_sig;

/* Fill offsets, sizes and argsize from is_array/elem. */
void gj_sig_layout(gj_sig *sig);

/* A launch's shape.  group[0] == 0 means "the backend chooses". */
typedef struct gj_dims {
  int64_t global[3];
  int64_t group[3];
  int32_t ndim;        /* 1, 2 or 3 */
  int32_t pad_;
} gj_dims;

/* "AxBxC" of the first n sizes in v, into buf (for messages); returns buf. */
const char *gj_dims_str(char *buf, size_t size, const int64_t *v, int n);

#endif
