/*
** print in kernels: the table of print calls that codegen fills, which
** says how to read each record a launch leaves in its print area
** (src/gj_backend.h, gj_print_rec), and the host copy of that area.
** The Lua side (lua/gpujit/printer.lua) turns the records into lines.
*/
#ifndef GJ_PRINT_H
#define GJ_PRINT_H

#include "gj_err.h"
#include "gj_type.h"

/* What one argument of a print call is, as its record holds it. */
typedef enum {
  GJ_PK_NUM = 'n',     /* a double (floats widened): a Lua number */
  GJ_PK_INT = 'i',     /* an int64_t that stands for a Lua number */
  GJ_PK_I64 = 'l',     /* a C int64_t (cdata in LuaJIT: prints 5LL) */
  GJ_PK_U64 = 'u',     /* a C uint64_t (5ULL) */
  GJ_PK_BOOL = 'b',    /* an int64_t, 0 or 1 */
  GJ_PK_NIL = '0',     /* no slot */
  GJ_PK_STR = 's'      /* a string constant: no slot, the text is here */
} gj_pkind;

#define GJ_PRINT_MAXARGS GJ_MAXPARAMS

typedef struct gj_psite {
  char where[200];          /* "file.lua:LINE" of the call */
  int nargs, nslots;
  char kinds[GJ_PRINT_MAXARGS];     /* gj_pkind */
  char *strs[GJ_PRINT_MAXARGS];     /* GJ_PK_STR: the text (owned) */
} gj_psite;

typedef struct gj_psites {
  int n, max;
  gj_psite *v;
} gj_psites;

/* Append a site (strs copied); its index, or -1 with err. */
int gj_psites_add(gj_psites *s, const char *chunk, int line, int nargs,
                  const char *kinds, const char *const *strs, gj_err *err);
void gj_psites_free(gj_psites *s);

/* The default bytes for records in a kernel's print area (CUDA's printf
** FIFO is 1 MiB too), and the most the print_buffer option may ask. */
#define GJ_PRINT_DEFAULT_CAP (1u << 20)
#define GJ_PRINT_MAX_CAP (1u << 30)

#endif
