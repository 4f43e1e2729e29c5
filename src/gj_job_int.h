/*
** Internal to the core: what GJ_JOBDEF (gj_job.h) makes besides the struct
** and the Lua table.  The job's part of the content key and the test of
** which of its libraries a module needs (the pipeline hashes and links
** with them), and the check of the read-only fields after a C plugin's job
** hook (gj_plugin.c).
*/
#ifndef GJ_JOB_INT_H
#define GJ_JOB_INT_H

#include <llvm-c/Core.h>

#include "gj_cache.h"
#include "gj_job.h"

/* Hash every KEY field of job into h, in GJ_JOBDEF's order; the libraries
** by path, prefix and contents, only those m calls (gj_job_lib_used; m
** NULL: every one, as gj_job_key_hex does). */
void gj_job_key(const gj_job *job, LLVMModuleRef m, gj_cache_hasher *h);

/* Does m call a declared function whose name starts with lib's prefix
** (always, for "" or m NULL)?  Only such a library is linked, and keyed. */
int gj_job_lib_used(const gj_job_lib *lib, LLVMModuleRef m);

/* The C name of the first RO field (GJ_JOBDEF) that differs between a and
** b, or NULL when none does. */
const char *gj_job_ro_changed(const gj_job *a, const gj_job *b);

#endif
