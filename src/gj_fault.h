/*
** Bounds-checked kernels, and assert/error in kernels: the tables of check
** and assert sites that codegen fills and the Lua error a launch raises
** from the fault record (src/gj_backend.h, gj_fault) the device left.
*/
#ifndef GJ_FAULT_H
#define GJ_FAULT_H

#include "gj_backend.h"
#include "gj_err.h"

/* One bounds check in the compiled code; gj_fault.site is 1 + its index. */
typedef struct gj_site {
  char where[200];     /* "file.lua:LINE" of the access */
  char what[96];       /* "argument 2 'x'", "a gpu.shared array", ... */
  int base;            /* index of the first element (1: a Lua table) */
} gj_site;

typedef struct gj_sites {
  int n, max;
  gj_site *v;
} gj_sites;

/* Append a site; its index, or -1 with err when out of memory. */
int gj_sites_add(gj_sites *s, const char *chunk, int line, const char *what,
                 int base, gj_err *err);
void gj_sites_free(gj_sites *s);

/* The message for fault f (f->site != 0) into err; returns -1. */
int gj_fault_error(const gj_sites *s, const gj_fault *f, gj_err *err);

/* One assert(...) or error(...) call in the compiled code; the fault
** record's `fail` word holds its index (gj_backend.h). */
typedef struct gj_asite {
  char where[200];     /* "file.lua:LINE" of the call */
  char *text;          /* the message (owned): "assertion failed!",
                       ** "assertion failed: MSG", or error's MSG */
} gj_asite;

typedef struct gj_asites {
  int n, max;
  gj_asite *v;
} gj_asites;

/* Sites an assert table holds at most (the index's 16 bits of `fail`). */
#define GJ_ASITES_MAX 0xffff

/* Append a site (text copied); its index, or -1 with err (out of memory,
** or more than GJ_ASITES_MAX). */
int gj_asites_add(gj_asites *s, const char *chunk, int line, const char *text,
                  gj_err *err);
void gj_asites_free(gj_asites *s);

/* The error of a launch whose record is f, into err, and -1; 0 when f
** holds no fault.  A bounds-check fault comes first (an access it skipped
** may be why an assert failed), then an assert (the smallest work item). */
int gj_launch_fault(const gj_sites *s, const gj_asites *as, const gj_fault *f,
                    gj_err *err);

#endif
