/*
** The job's part of the content key and the test of which of its
** libraries a module needs, made from GJ_JOBDEF (gj_job.h).  Internal: the
** pipeline (gj_pipeline.c) hashes and links with them.
*/
#ifndef GJ_JOB_KEY_H
#define GJ_JOB_KEY_H

#include <llvm-c/Core.h>

#include "gj_cache.h"
#include "gj_job.h"

/* Hash every KEY field of job into h, in GJ_JOBDEF's order; the libraries
** by path, prefix and contents, only those m calls (gj_job_lib_used). */
void gj_job_key(const gj_job *job, LLVMModuleRef m, gj_cache_hasher *h);

/* Does m call a declared function whose name starts with lib's prefix
** (always, for "")?  Only such a library is linked, and keyed. */
int gj_job_lib_used(const gj_job_lib *lib, LLVMModuleRef m);

#endif
