/*
** Frontend: a Lua function's LuaJIT bytecode, decoded.
**
** The core never links against LuaJIT internals: the binding
** (gj_bc_lua.c) asks jit.util for the instructions, constants and line
** numbers of a function and hands them here as a gj_bcraw; opcode numbers
** are mapped to our own enum by name (jit.vmdef's names when present, else
** a table kept for each known LuaJIT version), so a LuaJIT whose opcode
** numbering differs is read correctly or refused with a clear error.  No
** function here needs a Lua stack.
*/
#ifndef GJ_BC_H
#define GJ_BC_H

#include <stddef.h>
#include <stdint.h>

#include "gj_err.h"

/* LuaJIT 2.1's opcodes, by name.  The order here is ours, not LuaJIT's. */
#define GJ_BCDEF(_) \
  _(ISLT) _(ISGE) _(ISLE) _(ISGT) _(ISEQV) _(ISNEV) _(ISEQS) _(ISNES) \
  _(ISEQN) _(ISNEN) _(ISEQP) _(ISNEP) _(ISTC) _(ISFC) _(IST) _(ISF) \
  _(ISTYPE) _(ISNUM) _(MOV) _(NOT) _(UNM) _(LEN) _(ADDVN) _(SUBVN) \
  _(MULVN) _(DIVVN) _(MODVN) _(ADDNV) _(SUBNV) _(MULNV) _(DIVNV) _(MODNV) \
  _(ADDVV) _(SUBVV) _(MULVV) _(DIVVV) _(MODVV) _(POW) _(CAT) _(KSTR) \
  _(KCDATA) _(KSHORT) _(KNUM) _(KPRI) _(KNIL) _(UGET) _(USETV) _(USETS) \
  _(USETN) _(USETP) _(UCLO) _(FNEW) _(TNEW) _(TDUP) _(GGET) _(GSET) \
  _(TGETV) _(TGETS) _(TGETB) _(TGETR) _(TSETV) _(TSETS) _(TSETB) _(TSETM) \
  _(TSETR) _(CALLM) _(CALL) _(CALLMT) _(CALLT) _(ITERC) _(ITERN) _(VARG) \
  _(ISNEXT) _(RETM) _(RET) _(RET0) _(RET1) _(FORI) _(JFORI) _(FORL) \
  _(IFORL) _(JFORL) _(ITERL) _(IITERL) _(JITERL) _(LOOP) _(ILOOP) _(JLOOP) \
  _(JMP) _(FUNCF) _(IFUNCF) _(JFUNCF) _(FUNCV) _(IFUNCV) _(JFUNCV) \
  _(FUNCC) _(FUNCCW)

typedef enum gj_bcop {
#define GJ_BCENUM(name) GJ_BC_##name,
  GJ_BCDEF(GJ_BCENUM)
#undef GJ_BCENUM
  GJ_BC__MAX
} gj_bcop;

extern const char *const gj_bc_names[GJ_BC__MAX];

/* The opcode map of the running LuaJIT, built once per context. */
typedef struct gj_bcmap {
  uint8_t op[256];   /* LuaJIT opcode number -> gj_bcop (GJ_BC__MAX: none) */
  int fr2;           /* 1 when call frames take two slots (GC64 builds) */
} gj_bcmap;

/* map->op from the running LuaJIT's opcode names: names in jit.vmdef.bcnames'
** layout, six characters a name (padded with spaces), in its opcode order. */
void gj_bc_mapnames(gj_bcmap *map, const char *names, size_t len);

/* map->fr2 from the n instruction words of the chunk `local f; f(0)`
** (ins[k] is pc k+1), read with the map gj_bc_mapnames built.  0, or -1
** with err set when the frame layout cannot be told. */
int gj_bc_mapfr2(gj_bcmap *map, const uint32_t *ins, int n, gj_err *err);

/* One decoded instruction.  Jumps are resolved to instruction indices. */
typedef struct gj_ins {
  uint8_t op;        /* gj_bcop, JIT-specialized forms folded to the base */
  uint8_t a;
  uint8_t b;
  uint8_t c;
  uint16_t d;
  int32_t target;    /* jumps: index of the target instruction, else -1 */
  int32_t line;
} gj_ins;

/* A function prototype as the compiler sees it.  Instruction i is LuaJIT
** pc i+1 (pc 0 is the function header). */
typedef struct gj_proto {
  char chunk[256];     /* source name for messages: "file.lua" */
  char name[128];      /* function name for messages */
  int linedefined;
  int nparams;
  int framesize;
  int nuv;
  int nins;
  gj_ins *ins;
  int nknum;
  double *knum;        /* numeric constants, by D */
  int nkgc;
  char **kstr;         /* string constants by D (funck(-D-1)), or NULL */
} gj_proto;

/* A function's bytecode as the frontend read it (jit.util's view).  Every
** pointer is the reader's and only read during gj_bc_decode. */
typedef struct gj_bcraw {
  const char *source;  /* the chunk's source: "@file.lua", "=name", or its
                       ** text (messages show it as Lua's do); NULL: "?" */
  int linedefined;
  int nparams;
  int framesize;
  int nuv;
  int isvararg;
  int nbc;             /* bytecodes, the header (pc 0) included */
  const uint32_t *ins; /* nbc - 1 words: ins[i] is pc i+1 */
  const int32_t *lines;/* nbc - 1 lines, of each word */
  int nknum;
  const double *knum;  /* numeric constants, by D */
  int nkgc;
  const char *const *kstr;  /* GC constant i, funck(-i-1): a string's bytes,
                            ** NULL for any other kind */
  const size_t *kstrlen;    /* and its length */
} gj_bcraw;

/* Decode raw into p, then check it (gj_bc_check): 0, or -1 with err set
** ("vararg functions (...) are not supported", "empty function", "unknown
** bytecode N", "malformed bytecode") and nothing left to free.  The
** header fields of p are set either way, for messages. */
int gj_bc_decode(const gj_bcraw *raw, const gj_bcmap *map, gj_proto *p,
                 gj_err *err);
/* Free what gj_bc_decode put in p (not p itself). */
void gj_bc_free(gj_proto *p);

/* Check every operand of p against its frame, constants, upvalues and
** instruction count (gj_bc_check.c); gj_bc_decode calls it.  0, or -1 with
** "malformed bytecode" in err. */
int gj_bc_check(const gj_proto *p, int fr2, gj_err *err);

#endif
