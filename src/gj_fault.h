/*
** Bounds-checked kernels: the table of check sites that codegen fills and
** the Lua error a launch raises from the fault record (src/gj_backend.h,
** gj_fault) the device left.
*/
#ifndef GJ_FAULT_H
#define GJ_FAULT_H

#include "gj_backend.h"
#include "gj_err.h"

/* One bounds check in the compiled code; gj_fault.site is 1 + its index. */
typedef struct gj_site {
  char where[200];     /* "file.lua:LINE" of the access */
  char what[64];       /* "argument 2 'x'", "a gpu.shared array", ... */
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

#endif
