/*
** The compile job as a Lua table (gpu.job, the kernel's `job` option, Lua
** plugins' job hook) and back, and the kernel description Lua plugins get.
** docs/plugins.md lists the fields.
*/
#ifndef GJ_JOB_LUA_H
#define GJ_JOB_LUA_H

#include <lua.h>

#include "gj_err.h"
#include "gj_job.h"
#include "gpujit_plugin.h"

/* Push job as a new table. */
void gj_job_push(lua_State *L, const gj_job *job);

/* Apply the table at idx to job: the adjustable fields (cpu, features,
** passes, opt_level, libraries) are taken when present; the others must be
** absent or equal to job's.  `who` starts messages.  0, or -1 with err. */
int gj_job_apply(lua_State *L, int idx, gj_job *job, const char *who,
                 gj_err *err);

/* Push the kernel's description as a table: what a Lua plugin's hook gets
** as its last argument (docs/plugins.md). */
void gj_kernel_desc_push(lua_State *L, const gpujit_kernel_desc *kd);

#endif
