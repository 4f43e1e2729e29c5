/*
** gpujit — the plugin API (docs/plugins.md).
**
** A plugin sees, and may change, a kernel at named stages of the compile
** pipeline (src/gj_pipeline.c), in this order:
**
**   job        the compile job (gj_job.h) the backend proposed, after the
**              kernel's own `job` option: the plugin may adjust it
**   frontend   the typed kernel and device functions, before any IR
**   ir         the LLVM module right after generation: @gj_body (one work
**              item) and the device functions it calls, intrinsics still
**              declarations, no entry point yet
**   optimize   the pass-pipeline text (new pass manager syntax), which the
**              plugin may extend or replace
**   optimized  the module after optimization, entry point included
**   emit       the artifact the backend produced (object file, SPIR
**              bitcode, PTX text), which the plugin may replace
**
** Plugins compose in registration order.  A plugin applies to the kernels
** that name it (gpu.kernel(fn, { plugins = { "count" } })) or, registered
** with all = true, to every kernel.  Its name, version and identity (C: a
** hash of the shared object; Lua: of its hooks' bytecode) are part of the
** compile cache key of every kernel it touches, so a new plugin build never
** loads code the old one made; what its hooks read besides (settings) is
** part of it only through the plugin's `key` callback (ABI 2).
**
** Buffers.  A plugin may ask for device buffers that gpujit passes to each
** launch of the kernels it applies to, zeroed before the launch and read
** back after it.  Each buffer is one more array parameter of @gj_body, after
** the kernel's own: `ptr addrspace(G) %<plugin>.<buffer>` and `i64
** %<plugin>.<buffer>.len` (G: job->as_global), at the LLVM parameter index
** gpujit_kernel_desc.buffer_param (+2 per earlier buffer of the plugin).
** After the launch `report` turns the host copies into one Lua value, which
** k:report(name) returns.
**
** When at least one plugin applies, codegen tags each array load and store
** with `!gj.loc !{i32 <Lua line>, i32 <kernel argument, 1-based; 0 when not
** known>, !"<source file>"}` so that plugins can point at the Lua line.
** Every conditional branch of the Lua code carries `!gj.line !{i32 <Lua
** line>}` (the line of its condition), plugins or not.
**
** A C plugin is a shared object that exports gpujit_plugin_init; load it with
** gpu.load_plugin(path or name).  It links LLVM 15's C API itself (the
** process has one libLLVM, shared with gpujit).  Every hook is optional and
** returns 0, or nonzero with a message in err (at most errlen bytes, NUL
** included); gpujit turns that into a Lua error naming the plugin, the stage
** and the kernel, and the kernel is not compiled.
*/
#ifndef GPUJIT_PLUGIN_H
#define GPUJIT_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include <llvm-c/Core.h>

#include "gj_job.h"

/* The struct's version: gpujit sets p->abi to its own before init.  A
** plugin built with a newer header fills the fields of a newer ABI only
** when p->abi says the loading gpujit has them (gpujit_plugin below). */
#define GPUJIT_PLUGIN_ABI 2
#define GPUJIT_PLUGIN_MAXBUF 4

typedef struct lua_State lua_State;

/* A typed function of the kernel (frontend stage). */
typedef struct gpujit_fn_desc {
  const char *name;        /* "kernel" for the kernel, else how it was reached */
  const char *source;      /* file it is defined in */
  int line;                /* the line of its `function` */
  int nparams;
  const char *const *param_types;   /* "float", "int32_t[]", ... */
  int nret;                /* values it returns */
  const char *const *ret_types;
  int uses_barrier;
} gpujit_fn_desc;

/* The kernel being compiled, as every compile hook sees it. */
typedef struct gpujit_kernel_desc {
  const char *name;        /* the kernel's name */
  const char *source;      /* file of its function */
  int line;                /* line of its `function` */
  const char *backend;     /* "cpu", "opencl", "cuda" */
  int device;              /* 0-based device of that backend */
  int nparams;             /* the kernel's own parameters */
  const char *const *types;      /* their type names */
  const char *const *argnames;   /* their names (entries may be NULL) */
  int single;              /* precision = "single" */
  int fastmath;
  int boundscheck;
  const gj_job *job;       /* the job it is compiled with */
  /* LLVM parameter index in @gj_body of this plugin's first buffer's
  ** pointer; -1 when the plugin has no buffers */
  int buffer_param;
  /* frontend stage: the kernel (functions[0]) and each device function
  ** specialization it reaches; 0 and NULL at the other stages */
  int nfunctions;
  const gpujit_fn_desc *functions;
  int lua;                 /* precision = "lua" (single is then 0) */
} gpujit_kernel_desc;

typedef struct gpujit_plugin_buffer {
  const char *name;        /* the parameter is %<plugin>.<name> */
  const char *elem;        /* element type: "int64_t", "float", ... */
  int64_t per_item;        /* elements per work item of the launch */
  int64_t fixed;           /* plus this many */
} gpujit_plugin_buffer;

/* One finished launch (report). */
typedef struct gpujit_launch_desc {
  const char *kernel;      /* the kernel's name */
  int ndim;
  int64_t global[3];
  int64_t group[3];
  int64_t items;           /* work items: the product of global */
  int nbuffers;
  const void *const *buffers;    /* host copies, in declaration order */
  const int64_t *lengths;        /* their element counts */
} gpujit_launch_desc;

typedef struct gpujit_plugin {
  unsigned abi;            /* gpujit sets GPUJIT_PLUGIN_ABI before init */
  const char *name;        /* [A-Za-z0-9_]+, unique in a process */
  const char *version;
  void *ud;                /* handed to every hook */
  int nbuffers;
  gpujit_plugin_buffer buffers[GPUJIT_PLUGIN_MAXBUF];

  int (*job)(void *ud, const gpujit_kernel_desc *k, gj_job *job, char *err,
             size_t errlen);
  int (*frontend)(void *ud, const gpujit_kernel_desc *k, char *err,
                  size_t errlen);
  int (*ir)(void *ud, const gpujit_kernel_desc *k, LLVMModuleRef m, char *err,
            size_t errlen);
  /* passes: NUL-terminated text in a buffer of cap bytes; edit in place */
  int (*optimize)(void *ud, const gpujit_kernel_desc *k, char *passes,
                  size_t cap, char *err, size_t errlen);
  int (*optimized)(void *ud, const gpujit_kernel_desc *k, LLVMModuleRef m,
                   char *err, size_t errlen);
  /* *art (malloc'ed, *len bytes) may be replaced: free it, malloc anew */
  int (*emit)(void *ud, const gpujit_kernel_desc *k, char **art, size_t *len,
              char *err, size_t errlen);
  /* After a launch of a kernel the plugin has buffers in: push exactly one
  ** Lua value (what k:report(name) returns) and return 0. */
  int (*report)(void *ud, lua_State *L, const gpujit_launch_desc *l,
                char *err, size_t errlen);
  /* The process drops the plugin (its lua_State closes). */
  void (*close)(void *ud);

  /* --- ABI 2 and later (set only when p->abi >= 2: an older gpujit's
  ** struct ends above) ------------------------------------------------- */

  /* What the hooks depend on beyond the shared object itself (a setting,
  ** an environment variable, a file): write it as text into buf (cap bytes;
  ** NUL-terminated) and return 0.  Called at every compile of a kernel the
  ** plugin applies to, before the disk cache is looked up; the text is
  ** hashed into the cache key, so a compile with another value never loads
  ** what this one stored.  A plugin whose optimize, optimized or emit hook
  ** reads outside state must have it (job, frontend and ir hooks run on
  ** every compile, and what they change is hashed anyway). */
  int (*key)(void *ud, const gpujit_kernel_desc *k, char *buf, size_t cap,
             char *err, size_t errlen);
} gpujit_plugin;

/* Exported by a C plugin: fill p (abi is set; leave it) and return 0, or
** nonzero with a message in err.  The struct is gpujit's, zeroed: fields a
** plugin leaves are NULL/0; fields of an ABI above p->abi must not be
** written (they are past the end of an older gpujit's struct). */
typedef int (*gpujit_plugin_init_fn)(gpujit_plugin *p, char *err,
                                     size_t errlen);
#define GPUJIT_PLUGIN_INIT "gpujit_plugin_init"

#endif
